"""The I/O half of KafkaZkClient: connection, chroot, retries, session events, generic znode ops.

Mirrors Kafka's ZooKeeperClient: everything is synchronous (the broker calls it off its event
loop), "no node" comes back as None / empty, and writes made by the controller can be fenced by
the zk version of /controller_epoch so that a controller that lost its seat cannot write.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.security import ACL

from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.zk.cluster_znodes import ControllerEpochZNode
from kafkapy.zk.errors import ZkNoAuthError, ZooKeeperClientTimeoutError
from kafkapy.zk.watchers import (
    StateChangeHandler,
    WatchRegistry,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
)
from kafkapy.zk.zk_auth import ZkCredentials, default_acls

log = logging.getLogger(__name__)


def _ignore(*_: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ZkClientMetrics:
    """Where a client reports Kafka's ZooKeeper meters: the broker passes its own
    (ZooKeeperClientMetrics' ZooKeeperRequestLatencyMs, SessionExpireListener's
    ZooKeeperDisconnectsPerSec and ZooKeeperExpiresPerSec); the tools report nothing."""

    request_latency_ns: Callable[[int], None] = _ignore  # each request, with its retries
    disconnected: Callable[[], None] = _ignore
    expired: Callable[[], None] = _ignore


NO_METRICS = ZkClientMetrics()

# In a conditional write, "any version" (ZooKeeper's own -1).
MATCH_ANY_VERSION = -1

# Events passed to plain-callable state change handlers.
SESSION_EXPIRED = "session_expired"
NEW_SESSION = "new_session"

StateChangeCallback = Callable[[str], None]

# A transaction step: receives the open transaction and adds its operation(s) to it.
TxnOp = Callable[[TransactionRequest], Any]

# How many requests a bulk call keeps in flight. Enough to hide the round trip (a few hundred
# requests answer in one ~1 ms turn of the server); below ZooKeeper's globalOutstandingLimit
# (1000), past which the server stops reading from the connection.
PIPELINE_WINDOW = 500

# What a bulk call redoes synchronously (with the client's retry policy) when its asynchronous
# attempt hit it: the connection dropped while the request was in flight.
_RETRIABLE = (ConnectionLoss, OperationTimeoutError)


def split_chroot(connect: str) -> tuple[str, str | None]:
    """'h1:2181,h2:2181/kafka' -> ('h1:2181,h2:2181', '/kafka'); no chroot -> (connect, None)."""
    slash = connect.find("/")
    if slash < 0:
        return connect, None
    chroot = connect[slash:].rstrip("/")
    return connect[:slash], chroot or None


class ZkIO:
    def __init__(
        self,
        connect: str,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        *,
        credentials: ZkCredentials | None = None,
        secure_acls: bool = False,
        metrics: ZkClientMetrics = NO_METRICS,
    ) -> None:
        """`credentials`: the identity to authenticate as (ZooKeeper's digest scheme);
        `secure_acls`: create znodes with Kafka's secure ACLs (zookeeper.set.acl)."""
        self.connect = connect
        self.credentials = credentials
        self.secure_acls = secure_acls
        self.metrics = metrics
        self._auth_data = credentials.auth_data if credentials is not None else None
        self._hosts, self.chroot = split_chroot(connect)
        self._session_timeout_s = session_timeout_ms / 1000
        # Kafka: zookeeper.connection.timeout.ms defaults to the session timeout.
        self._connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        # Retry through connection loss (like Kafka's retryRequestUntilConnected), but bounded.
        retry = {
            "max_tries": -1,
            "delay": 0.05,
            "backoff": 2,
            "max_delay": 1.0,
            "deadline": max(self._session_timeout_s, self._connection_timeout_s),
        }
        self._zk = KazooClient(
            hosts=connect,
            timeout=self._session_timeout_s,
            connection_retry={**retry, "deadline": None},
            command_retry=retry,
            auth_data=self._auth_data,
            # for anything made without acl= (kazoo's own ensure_path)
            default_acl=default_acls(secure_acls, "/"),
        )
        self.watches = WatchRegistry(self._zk)
        self._state_handlers: dict[str, StateChangeHandler | StateChangeCallback] = {}
        # Session handlers run in order on one thread of their own, never on kazoo's
        # connection thread (they make ZooKeeper calls, which would deadlock there).
        self._session_executor = ThreadPoolExecutor(1, thread_name_prefix="zk-session-handlers")
        self._session_id: int | None = None
        self._closing = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self.chroot:
            self._ensure_chroot()
        try:
            self._zk.start(timeout=self._connection_timeout_s)
        except KazooTimeoutError as e:
            self._zk.stop()
            raise ZooKeeperClientTimeoutError(
                f"Timed out waiting for connection to {self.connect} "
                f"after {self._connection_timeout_s * 1000:.0f} ms"
            ) from e
        self._session_id = self.session_id
        self._zk.add_listener(self._on_state)

    def close(self) -> None:
        self._closing = True
        self.watches.clear()
        self._zk.remove_listener(self._on_state)
        self._zk.stop()
        self._zk.close()
        self._session_executor.shutdown(wait=False)

    def _ensure_chroot(self) -> None:
        # kazoo (like ZooKeeper's own client) resolves paths under the chroot but does not
        # create it; Kafka creates it first with a chroot-less client, and so do we.
        bare = KazooClient(
            hosts=self._hosts,
            timeout=self._session_timeout_s,
            auth_data=self._auth_data,
            default_acl=self.acls(self.chroot or "/"),
        )
        try:
            bare.start(timeout=self._connection_timeout_s)
        except KazooTimeoutError as e:
            bare.stop()
            raise ZooKeeperClientTimeoutError(f"Timed out connecting to {self._hosts}") from e
        try:
            bare.ensure_path(self.chroot)
        finally:
            bare.stop()
            bare.close()

    def acls(self, path: str) -> list[ACL]:
        """The ACLs a znode made at `path` gets: Kafka's ZkData.defaultAcls."""
        return default_acls(self.secure_acls, path)

    @property
    def kazoo(self) -> KazooClient:
        return self._zk

    @property
    def session_id(self) -> int | None:
        client_id = self._zk.client_id
        return None if client_id is None else client_id[0]

    # -- session events -----------------------------------------------------------------------

    def register_state_change_handler(self, handler: StateChangeHandler | StateChangeCallback) -> str:
        """Register a StateChangeHandler (by its name, replacing one of the same name), or a plain
        callable that receives SESSION_EXPIRED then NEW_SESSION. Returns the registration name.
        Handlers run on a thread of their own, in registration order."""
        name = handler.name if isinstance(handler, StateChangeHandler) else f"callback-{id(handler)}"
        self._state_handlers[name] = handler
        return name

    def unregister_state_change_handler(self, name: str) -> None:
        self._state_handlers.pop(name, None)

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's connection thread: decide, then hand off.
        if self._closing:
            return
        if state == KazooState.SUSPENDED:
            self.metrics.disconnected()
        if state == KazooState.LOST:
            self.metrics.expired()
            self._session_executor.submit(self._run_state_handlers, SESSION_EXPIRED)
        elif state == KazooState.CONNECTED:
            new_id = self.session_id
            if new_id is not None and new_id != self._session_id:
                log.info("New ZooKeeper session 0x%x (was 0x%x)", new_id, self._session_id or 0)
                self._session_id = new_id
                self._session_executor.submit(self._run_state_handlers, NEW_SESSION)

    def _run_state_handlers(self, event: str) -> None:
        for name, handler in list(self._state_handlers.items()):
            try:
                if not isinstance(handler, StateChangeHandler):
                    handler(event)
                elif event == SESSION_EXPIRED:
                    handler.before_initializing_session()
                else:
                    handler.after_initializing_session()
            except Exception:
                log.exception("Error in state change handler %s on %s", name, event)

    # -- watches ------------------------------------------------------------------------------

    def register_znode_change_handler(self, handler: ZNodeChangeHandler) -> None:
        self.watches.register_data(handler)

    def register_znode_change_handler_and_check_existence(self, handler: ZNodeChangeHandler) -> bool:
        return self.watches.register_data(handler)

    def unregister_znode_change_handler(self, path: str) -> None:
        self.watches.unregister_data(path)

    def register_znode_child_change_handler(self, handler: ZNodeChildChangeHandler) -> None:
        self.watches.register_child(handler)

    def unregister_znode_child_change_handler(self, path: str) -> None:
        self.watches.unregister_child(path)

    # -- generic znode operations -------------------------------------------------------------

    def _retry(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # ZooKeeperRequestLatencyMs: the request's time with its retries, as the broker waits it.
        start = time.monotonic_ns()
        try:
            return self._zk.retry(fn, *args, **kwargs)
        except NoAuthError as e:
            raise ZkNoAuthError(args[0] if args and isinstance(args[0], str) else None) from e
        finally:
            self.metrics.request_latency_ns(time.monotonic_ns() - start)

    @property
    def session_state(self) -> str:
        """Kafka's SessionState names (CONNECTED, CONNECTING, CLOSED) for kazoo's states."""
        if self._closing:
            return "CLOSED"
        state = self._zk.state
        return (
            "CONNECTED"
            if state == KazooState.CONNECTED
            else "CONNECTING"
            if state == KazooState.SUSPENDED
            else "CLOSED"
        )

    def get_data(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            result: tuple[bytes, ZnodeStat] | None = self._retry(self._zk.get, path)
            return result
        except NoNodeError:
            return None

    def get_children(self, path: str) -> list[str]:
        try:
            return list(self._retry(self._zk.get_children, path))
        except NoNodeError:
            return []

    def path_exists(self, path: str) -> bool:
        return self._retry(self._zk.exists, path) is not None

    def create_recursive(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False
    ) -> str:
        """Create `path` and any missing parents; raises NodeExistsError. Returns the path made
        (with its sequence number when sequential)."""
        while True:
            try:
                made: str = self._retry(
                    self._zk.create, path, data, acl=self.acls(path), ephemeral=ephemeral, sequence=sequential
                )
                return made
            except NoNodeError:
                # Parents first, each with its own ACLs (as Kafka's createRecursive does).
                parent = path.rsplit("/", 1)[0]
                if not parent:
                    raise
                try:
                    self.create_recursive(parent)
                except NodeExistsError:
                    pass

    def make_sure_persistent_path_exists(self, path: str) -> None:
        try:
            self.create_recursive(path)
        except NodeExistsError:
            pass

    def set_data(self, path: str, data: bytes, version: int = MATCH_ANY_VERSION) -> ZnodeStat:
        """Raises NoNodeError or BadVersionError."""
        return self._retry(self._zk.set, path, data, version)

    def conditional_update_path(self, path: str, data: bytes, expected_version: int) -> tuple[bool, int]:
        """Set data if the znode is still at `expected_version`: (True, new version), else
        (False, -1). What a leader uses to change its ISR (Kafka's conditionalUpdatePath)."""
        try:
            return True, self.set_data(path, data, expected_version).version
        except (BadVersionError, NoNodeError):
            return False, -1

    def delete_path(self, path: str, version: int = MATCH_ANY_VERSION) -> bool:
        """Delete one znode; False if it did not exist."""
        try:
            self._retry(self._zk.delete, path, version)
            return True
        except NoNodeError:
            return False

    def delete_recursive(
        self, path: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> bool:
        """Delete `path` and everything under it; False if it did not exist."""
        while True:
            for child in self.get_children(path):
                self.delete_recursive(f"{path}/{child}", expected_controller_epoch_zk_version)
            try:
                self.multi_fenced([lambda t: t.delete(path)], expected_controller_epoch_zk_version)
                return True
            except NoNodeError:
                return False
            except NotEmptyError:
                continue  # a child appeared meanwhile: go round again

    # -- bulk (pipelined) operations ------------------------------------------------------------
    #
    # Kafka's controller sends its thousands of reads and writes asynchronously and waits for
    # them together (retryRequestsUntilConnected); so do these, through kazoo's *_async calls:
    # the time grows with the round trips in flight, not with the number of znodes.

    def _bulk(
        self,
        start: Callable[..., IAsyncResult],
        redo: Callable[..., Any],
        calls: Sequence[tuple[Any, ...]],
    ) -> list[Any]:
        """Each call's result, or the exception it ended with, in order. `start(*args)` issues
        one request asynchronously; `redo(*args)` is its synchronous twin, run under the retry
        policy for requests that a connection loss cut short."""
        results: list[Any] = [None] * len(calls)
        began = time.monotonic_ns()
        try:
            for low in range(0, len(calls), PIPELINE_WINDOW):
                window = range(low, min(len(calls), low + PIPELINE_WINDOW))
                pending = [(i, start(*calls[i])) for i in window]
                for i, request in pending:
                    try:
                        results[i] = request.get()
                    except _RETRIABLE:
                        try:
                            results[i] = self._zk.retry(redo, *calls[i])
                        except Exception as e:  # noqa: BLE001 - a value, like the others
                            results[i] = e
                    except Exception as e:  # noqa: BLE001 - per-znode outcomes are values
                        results[i] = e
        finally:
            if calls:
                self.metrics.request_latency_ns(time.monotonic_ns() - began)
        return results

    def get_data_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """get_data for many znodes at once; None for those that do not exist."""
        out: list[tuple[bytes, ZnodeStat] | None] = []
        for path, got in zip(
            paths, self._bulk(self._zk.get_async, self._zk.get, [(p,) for p in paths]), strict=True
        ):
            if isinstance(got, NoNodeError):
                out.append(None)
            elif isinstance(got, NoAuthError):
                raise ZkNoAuthError(path) from got
            elif isinstance(got, Exception):
                raise got
            else:
                out.append(got)
        return out

    def make_sure_persistent_paths_exist(self, paths: Sequence[str]) -> None:
        """make_sure_persistent_path_exists for many paths, parents listed before children:
        created together; one whose own parent is missing goes the one-by-one way."""

        def create(path: str) -> IAsyncResult:
            return self._zk.create_async(path, b"", acl=self.acls(path))

        def redo(path: str) -> str:
            made: str = self._zk.create(path, b"", acl=self.acls(path))
            return made

        for path, got in zip(paths, self._bulk(create, redo, [(p,) for p in paths]), strict=True):
            if isinstance(got, NodeExistsError) or not isinstance(got, Exception):
                continue
            if isinstance(got, NoAuthError):
                raise ZkNoAuthError(path) from got
            if isinstance(got, NoNodeError):
                self.make_sure_persistent_path_exists(path)
                continue
            raise got

    def multi_fenced_many(
        self, transactions: Sequence[Sequence[TxnOp]], expected_controller_epoch_zk_version: int
    ) -> list[list[Any] | Exception]:
        """multi_fenced for many independent transactions at once: per transaction its op
        results, or the error multi_fenced would have raised. Raises ControllerMovedException
        if any was fenced (all of them are, then: /controller_epoch only moves forward)."""
        fenced = expected_controller_epoch_zk_version >= 0

        def build(ops: Sequence[TxnOp]) -> TransactionRequest:
            txn = self._zk.transaction()
            if fenced:
                txn.check(ControllerEpochZNode.path(), expected_controller_epoch_zk_version)
            for op in ops:
                op(txn)
            return txn

        def start(ops: Sequence[TxnOp]) -> IAsyncResult:
            return build(ops).commit_async()

        def redo(ops: Sequence[TxnOp]) -> list[Any]:
            return list(build(ops).commit())

        out: list[list[Any] | Exception] = []
        for got in self._bulk(start, redo, [(ops,) for ops in transactions]):
            if isinstance(got, Exception):
                out.append(ZkNoAuthError(None) if isinstance(got, NoAuthError) else got)
                continue
            try:
                out.append(self._check_multi(list(got), fenced, expected_controller_epoch_zk_version))
            except ControllerMovedException:
                raise
            except Exception as e:  # noqa: BLE001 - the op's error, as a value
                out.append(e)
        return out

    def _check_multi(self, results: list[Any], fenced: bool, expected_version: int) -> list[Any]:
        """A committed transaction's results without the fencing check's; raises
        ControllerMovedException if the check failed, else the first op's error."""
        if fenced:
            check, results = results[0], results[1:]
            if isinstance(check, Exception) and not _rolled_back(check):
                raise ControllerMovedException(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {expected_version}"
                )
        for r in results:
            if isinstance(r, NoAuthError):
                raise ZkNoAuthError(None) from r
            if isinstance(r, Exception) and not _rolled_back(r):
                raise r
        return results

    def multi_fenced(self, ops: Sequence[TxnOp], expected_controller_epoch_zk_version: int) -> list[Any]:
        """Run `ops` atomically, guarded by the version of /controller_epoch unless it is
        MATCH_ANY_VERSION (-1). Returns the op results; raises ControllerMovedException when the
        guard fails, else the first op's error (NoNodeError, NodeExistsError, BadVersionError...)."""
        fenced = expected_controller_epoch_zk_version >= 0

        def attempt() -> list[Any]:
            txn = self._zk.transaction()
            if fenced:
                txn.check(ControllerEpochZNode.path(), expected_controller_epoch_zk_version)
            for op in ops:
                op(txn)
            return list(txn.commit())

        return self._check_multi(self._retry(attempt), fenced, expected_controller_epoch_zk_version)


def _rolled_back(e: Exception) -> bool:
    # In a failed transaction every op but the failing one reports RolledBackError.
    return isinstance(e, RolledBackError)
