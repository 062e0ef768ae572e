"""NetworkClient: the one socket owner of the producer's sender, the consumer and the tools.

One `NodeConnection` per broker under one `selectors` selector, driven by whichever thread
calls `poll` (the producer's sender thread, or the consumer's caller). It bootstraps from the
configured addresses, negotiates versions with ApiVersions on every new connection, keeps
cluster metadata fresh (on request and every metadata.max.age.ms), pipelines up to
max.in.flight requests per broker, expires requests after request.timeout.ms (closing the
connection, as Kafka does: its byte stream can no longer be trusted), and reconnects with
exponential backoff. Callbacks run on the polling thread.

`wakeup()` and `request_metadata_update()`/`add_topics()` may be called from other threads;
`cluster` is an immutable snapshot swapped on each refresh, and `metadata_updated` (a
Condition) is notified after each one.
"""

from __future__ import annotations

import logging
import os
import random
import selectors
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from kafkapy.client.cluster import BrokerNode, ClusterMetadata
from kafkapy.client.cluster_connection_states import ClusterConnectionStates
from kafkapy.client.connection import ConnectionClosedError, RequestTimeoutError
from kafkapy.client.metadata import MetadataRefresh
from kafkapy.client.node_connection import NodeConnection, ResponseCallback, State
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, ProtocolError, UnsupportedVersionException
from kafkapy.protocol.messages import valid_versions

log = logging.getLogger("kafkapy.client.NetworkClient")

_API_VERSIONS_VERSION: Final = 3
_METADATA_MAX_VERSION: Final = 12
_CLIENT_SOFTWARE = {"client_software_name": "kafkapy", "client_software_version": "0.1.0"}

Builder = Callable[[int], Any]


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    from kafkapy.client.admin import parse_bootstrap as parse

    return parse(servers if isinstance(servers, str) else ",".join(servers))


class NetworkClient:
    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str = "kafkapy",
        request_timeout_ms: int = 30_000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        max_in_flight: int = 5,
        allow_auto_topic_creation: bool = True,
        max_response_size: int = framing.DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.max_in_flight = max_in_flight
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.max_response_size = max_response_size
        # Bootstrap addresses act as brokers with negative ids until metadata names them.
        self._bootstrap = {
            -(i + 1): BrokerNode(-(i + 1), h, p)
            for i, (h, p) in enumerate(parse_bootstrap(bootstrap_servers))
        }
        self.cluster = ClusterMetadata()
        self.metadata_updated = threading.Condition()
        self._metadata = MetadataRefresh(self.metadata_max_age, self.retry_backoff, self.request_timeout)
        self._metadata.allow_auto_topic_creation = allow_auto_topic_creation
        self._conns: dict[int, NodeConnection] = {}
        self._states = ClusterConnectionStates(reconnect_backoff_ms / 1000, reconnect_backoff_max_ms / 1000)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._closed = False
        self._wake_lock = threading.Lock()

    # -- metadata --------------------------------------------------------------------------

    def add_topics(self, topics: Iterable[str]) -> None:
        """Ask for metadata of these topics from now on (thread-safe)."""
        self._metadata.add_topics(topics)

    def set_all_topics(self, enabled: bool = True) -> None:
        self._metadata.all_topics = enabled
        self._metadata.update_requested = True

    def request_metadata_update(self) -> None:
        """Refresh metadata at the next poll (thread-safe)."""
        self._metadata.update_requested = True

    def metadata_due_in(self, now: float) -> float:
        return self._metadata.due_in(self.cluster, now)

    def _maybe_update_metadata(self, now: float) -> None:
        if self.metadata_due_in(now) > 0:
            return
        node = self.least_loaded_node()
        if node is None or not self.ready(node):
            return  # connecting: poll again when it is
        build = self._metadata.start(now)
        self.send(node, ApiKey.METADATA, build, self._on_metadata, max_version=_METADATA_MAX_VERSION)

    def _on_metadata(self, resp: Any, exc: BaseException | None) -> None:
        cluster = self._metadata.finish(resp, exc, self.cluster)
        if cluster is None:
            log.debug("metadata request failed: %s", exc)
            return
        self.cluster = cluster
        for node_id, conn in list(self._conns.items()):
            broker = cluster.brokers.get(node_id)
            if node_id < 0 and cluster.brokers and not conn.in_flight:
                self._close_quietly(node_id)  # a bootstrap address has done its job
            elif node_id >= 0 and broker is not None and (broker.host, broker.port) != (conn.host, conn.port):
                self._disconnect(node_id, ConnectionClosedError(f"broker {node_id} moved"))
        with self.metadata_updated:
            self.metadata_updated.notify_all()

    # -- connections -----------------------------------------------------------------------

    def _broker(self, node_id: int) -> BrokerNode | None:
        return self.cluster.brokers.get(node_id) or self._bootstrap.get(node_id)

    def least_loaded_node(self) -> int | None:
        """A broker with the fewest requests in flight, preferring connected ones; bootstrap
        addresses until metadata names brokers. None when all are backing off."""
        now = time.monotonic()
        candidates = list(self.cluster.brokers) or list(self._bootstrap)
        random.shuffle(candidates)
        best, best_load = None, None
        for node_id in candidates:
            conn = self._conns.get(node_id)
            if conn is not None and conn.state is not State.DISCONNECTED:
                load = len(conn.in_flight)
            elif self._states.is_blacked_out(node_id, now):
                continue
            else:
                load = self.max_in_flight  # connecting costs a round trip
            if best_load is None or load < best_load:
                best, best_load = node_id, load
        if best is None and not self.cluster.brokers:
            return None
        return best

    def is_ready(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.state is State.READY and len(conn.in_flight) < self.max_in_flight

    def ready(self, node_id: int) -> bool:
        """Whether a request can be sent to `node_id` now; starts connecting when not connected."""
        conn = self._conns.get(node_id)
        if conn is None or conn.state is State.DISCONNECTED:
            self._connect(node_id)
            return False
        return conn.state is State.READY and len(conn.in_flight) < self.max_in_flight

    def connection_failed(self, node_id: int) -> bool:
        """Whether `node_id` is waiting out a reconnect backoff after a failure."""
        return self._states.is_blacked_out(node_id, time.monotonic())

    def in_flight_count(self, node_id: int | None = None) -> int:
        if node_id is not None:
            conn = self._conns.get(node_id)
            return len(conn.in_flight) if conn else 0
        return sum(len(c.in_flight) for c in self._conns.values())

    def api_version(self, node_id: int, api_key: ApiKey, max_version: int | None = None) -> int:
        """The highest version of `api_key` we and the (ready) broker both speak."""
        conn = self._conns[node_id]
        ours = valid_versions(api_key) or (0, -1)
        theirs = conn.api_versions.get(int(api_key))
        high = ours[1] if max_version is None else min(ours[1], max_version)
        if theirs is None or min(high, theirs[1]) < max(ours[0], theirs[0]):
            raise UnsupportedVersionException(
                f"broker {node_id} does not serve {api_key.name} v{ours[0]}-{high}"
            )
        return min(high, theirs[1])

    def _connect(self, node_id: int) -> None:
        if self._states.is_blacked_out(node_id, time.monotonic()):
            return
        broker = self._broker(node_id)
        if broker is None:
            return
        conn = self._conns.get(node_id)
        if conn is None or (conn.host, conn.port) != (broker.host, broker.port):
            conn = self._conns[node_id] = NodeConnection(
                node_id, broker.host, broker.port, self.client_id, self.max_response_size
            )
        try:
            conn.connect()
        except OSError as e:
            self._failed(node_id, e)
            return
        assert conn.sock is not None
        self._selector.register(conn.sock, selectors.EVENT_WRITE, conn)

    def _failed(self, node_id: int, exc: BaseException) -> None:
        delay = self._states.failed(node_id, time.monotonic())
        log.debug("connection to node %s failed (%s); retry in %.0f ms", node_id, exc, delay * 1000)
        self.request_metadata_update()

    def _disconnect(self, node_id: int, exc: BaseException) -> None:
        conn = self._conns.get(node_id)
        if conn is None:
            return
        if conn.sock is not None:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        pending = conn.close()
        self._failed(node_id, exc)
        for request in pending:
            self._complete(request.callback, None, exc)

    def _close_quietly(self, node_id: int) -> None:
        conn = self._conns.pop(node_id)
        if conn.sock is not None:
            self._selector.unregister(conn.sock)
        conn.close()

    def _on_connected(self, conn: NodeConnection) -> None:
        self._states.connected(conn.node_id)

        def on_versions(resp: Any, exc: BaseException | None, version: int = _API_VERSIONS_VERSION) -> None:
            if exc is not None:
                return
            conn.api_versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if resp.error_code == UnsupportedVersionException.code and version > 0:
                # The broker answered in v0 with its ranges: ask again in a version it speaks.
                retry = min(conn.api_versions.get(ApiKey.API_VERSIONS, (0, 0))[1], version - 1)
                self._enqueue(conn, ApiKey.API_VERSIONS, retry, _CLIENT_SOFTWARE,
                              lambda r, e: on_versions(r, e, retry))  # fmt: skip
                return
            if resp.error_code:
                self._disconnect(conn.node_id, ConnectionClosedError(f"ApiVersions error {resp.error_code}"))
                return
            conn.state = State.READY

        self._enqueue(conn, ApiKey.API_VERSIONS, _API_VERSIONS_VERSION, _CLIENT_SOFTWARE, on_versions)

    # -- requests --------------------------------------------------------------------------

    def send(
        self,
        node_id: int,
        api_key: ApiKey,
        body: Builder | Any,
        callback: ResponseCallback,
        *,
        max_version: int | None = None,
        expect_response: bool = True,
        raw_body: bool = False,
    ) -> int:
        """Queue a request to a ready node; `callback(response, exception)` runs on the polling
        thread. `body` is a dict/Message or a function of the negotiated version returning one
        (or, with `raw_body`, the encoded body bytes / list of buffers). Returns the version."""
        conn = self._conns[node_id]
        if conn.state is not State.READY:
            raise ConnectionClosedError(f"node {node_id} is not ready")
        version = self.api_version(node_id, api_key, max_version)
        payload = body(version) if callable(body) else body
        self._enqueue(conn, api_key, version, payload, callback, expect_response, raw_body)
        return version

    def _enqueue(
        self,
        conn: NodeConnection,
        api_key: int,
        version: int,
        payload: Any,
        callback: ResponseCallback,
        expect_response: bool = True,
        raw_body: bool = False,
    ) -> None:
        encoded = payload if raw_body else messages.encode_request(api_key, version, payload)
        decoder = None if api_key != ApiKey.API_VERSIONS else _decode_api_versions
        deadline = time.monotonic() + self.request_timeout
        conn.enqueue(api_key, version, encoded, callback, deadline, decoder, expect_response)
        if not expect_response:
            self._complete(callback, None, None)
        self._write(conn)

    def _write(self, conn: NodeConnection) -> None:
        try:
            conn.write()
        except OSError as e:
            self._disconnect(conn.node_id, ConnectionClosedError(f"writing to {conn.address}: {e}"))
            return
        self._update_interest(conn)

    def _update_interest(self, conn: NodeConnection) -> None:
        if conn.sock is None:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wants_write else 0)
        try:
            if self._selector.get_key(conn.sock).events != events:
                self._selector.modify(conn.sock, events, conn)
        except KeyError:
            self._selector.register(conn.sock, events, conn)

    @staticmethod
    def _complete(callback: ResponseCallback, resp: Any, exc: BaseException | None) -> None:
        try:
            callback(resp, exc)
        except Exception:  # a callback's bug must not kill the I/O thread
            log.exception("uncaught exception in a response callback")

    # -- the poll loop ---------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt a `poll` blocked in select (thread-safe; a no-op once closed)."""
        # The lock keeps `close` from closing the pipe between the check and the write: the fd
        # number could already belong to someone else's file.
        with self._wake_lock:
            if self._closed:
                return
            try:
                os.write(self._wake_w, b"x")
            except BlockingIOError:
                pass  # the pipe is full: a wakeup is pending anyway

    def poll(self, timeout: float) -> None:
        """Do the I/O that is ready, waiting at most `timeout` seconds for some."""
        now = time.monotonic()
        self._maybe_update_metadata(now)
        timeout = min(timeout, self.metadata_due_in(now), self._next_deadline(now))
        for key, events in self._selector.select(max(0.0, timeout)):
            conn: NodeConnection | None = key.data
            if conn is None:
                self._drain_wakeups()
                continue
            self._handle_events(conn, events)
        self._expire_requests(time.monotonic())

    def _handle_events(self, conn: NodeConnection, events: int) -> None:
        if conn.sock is None:
            return  # closed by a callback earlier in this round of events
        try:
            if conn.state is State.CONNECTING:
                if not events & selectors.EVENT_WRITE:
                    return
                conn.finish_connect()
                self._on_connected(conn)
            if events & selectors.EVENT_READ:
                for request, frame in conn.read():
                    self._handle_response(conn, request, frame)
                    if conn.sock is None:
                        return
            if conn.sock is not None:
                self._write(conn)
        except (OSError, ProtocolError) as e:
            self._disconnect(conn.node_id, ConnectionClosedError(f"{conn.address}: {e}"))

    def _handle_response(self, conn: NodeConnection, request: Any, frame: bytes) -> None:
        try:
            if request.decoder is not None:
                resp = request.decoder(frame, request.version)
            else:
                header_version = framing.response_header_version(request.api_key, request.version)
                _, offset = framing.parse_response_header(frame, header_version)
                resp = messages.decode_response(request.api_key, request.version, frame, offset)
        except (ProtocolError, KafkaError) as e:
            self._complete(request.callback, None, e)
            raise ProtocolError(str(e)) from e
        self._complete(request.callback, resp, None)

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def _next_deadline(self, now: float) -> float:
        soonest = self.request_timeout
        for conn in self._conns.values():
            if conn.in_flight:
                soonest = min(soonest, conn.in_flight[0].deadline - now)
        return soonest

    def _expire_requests(self, now: float) -> None:
        for node_id, conn in list(self._conns.items()):
            if conn.in_flight and conn.in_flight[0].deadline <= now:
                self._disconnect(
                    node_id,
                    RequestTimeoutError(
                        f"no response from node {node_id} ({conn.address}) within {self.request_timeout}s"
                    ),
                )

    def close(self) -> None:
        if self._closed:
            return
        for node_id in list(self._conns):
            self._disconnect(node_id, ConnectionClosedError("client closed"))
        self._selector.close()
        with self._wake_lock:
            self._closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)


def _decode_api_versions(frame: bytes, version: int) -> Any:
    _, offset = framing.parse_response_header(frame, 0)
    if frame[offset : offset + 2] != b"\x00\x00":
        version = 0  # a refused version is answered in a v0 body (see framing)
    return messages.decode_response(ApiKey.API_VERSIONS, version, frame, offset)
