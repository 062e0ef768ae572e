"""Errors of the ZooKeeper layer that have no Kafka error code of their own.

Errors the API layer must turn into codes come from `kafkapy.protocol.errors` (TopicExistsException,
ControllerMovedException, ...); ZooKeeper's own conditions stay kazoo's exceptions
(NodeExistsError, NoNodeError, ...), as Kafka lets ZooKeeper's KeeperExceptions through.
"""

from __future__ import annotations


class ZkDataError(Exception):
    """A znode holds data Kafka could not have written (bad JSON, unsupported version)."""


class ZooKeeperClientTimeoutError(Exception):
    """No ZooKeeper connection within zookeeper.connection.timeout.ms."""


class AdminOperationError(Exception):
    """An admin request that is inconsistent with what ZooKeeper holds (Kafka's
    AdminOperationException)."""


class TopicAlreadyMarkedForDeletionError(AdminOperationError):
    pass
