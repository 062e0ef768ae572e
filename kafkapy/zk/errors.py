"""Errors of the ZooKeeper layer that have no Kafka error code of their own.

Errors the API layer must turn into codes come from `kafkapy.protocol.errors` (TopicExistsException,
ControllerMovedException, ...); ZooKeeper's own conditions stay kazoo's exceptions
(NodeExistsError, NoNodeError, ...), as Kafka lets ZooKeeper's KeeperExceptions through.
"""

from __future__ import annotations

from kazoo.exceptions import NoAuthError

from kafkapy.zk.zk_auth import NO_AUTH_HINT


class ZkDataError(Exception):
    """A znode holds data Kafka could not have written (bad JSON, unsupported version)."""


class ZooKeeperClientTimeoutError(Exception):
    """No ZooKeeper connection within zookeeper.connection.timeout.ms."""


class AdminOperationError(Exception):
    """An admin request that is inconsistent with what ZooKeeper holds (Kafka's
    AdminOperationException)."""


class TopicAlreadyMarkedForDeletionError(AdminOperationError):
    pass


class ZkNoAuthError(NoAuthError):  # type: ignore[misc]  # kazoo is untyped
    """ZooKeeper refused a write for want of the znode's ACL identity (KeeperErrorCode = NoAuth)."""

    def __init__(self, path: str | None) -> None:
        where = f" for {path}" if path else ""
        super().__init__(f"KeeperErrorCode = NoAuth{where}: {NO_AUTH_HINT}")
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0])
