"""ControllerChannelManager: one queue and one sender thread per live broker (Kafka's
RequestSendThread), so a slow or dead broker never delays requests to the others and requests to
one broker arrive in the order the controller decided them.

A sender retries a request (reconnecting, 100 ms apart) until it succeeds or the broker is removed:
the controller's requests are idempotent and carry epochs, so resending is safe and a broker that
comes back must still learn the latest state. Callbacks run on the sender thread and must only
enqueue controller events.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kafkapy.protocol.message import Message
from kafkapy.server.controller.request_batch import ControllerRequest, inter_broker_endpoint

if TYPE_CHECKING:
    from kafkapy.client.sasl_client import ClientSecurity

log = logging.getLogger("kafkapy.controller")

RETRY_BACKOFF_S = 0.1


class Connection(Protocol):
    def send(self, api_key: int, version: int, body: Message) -> Message | None: ...

    def close(self) -> None: ...


# (host, port, client_id, timeout_s) -> Connection
ConnectionFactory = Callable[[str, int, str, float], Connection]


def default_connection_factory(
    host: str, port: int, client_id: str, timeout: float, security: ClientSecurity | None = None
) -> Connection:
    """A BrokerConnection; `security` is the inter-broker listener's TLS/SASL (None: PLAINTEXT)."""
    from kafkapy.client.connection import BrokerConnection
    from kafkapy.client.sasl_client import PLAINTEXT

    return BrokerConnection(host, port, client_id=client_id, timeout=timeout, security=security or PLAINTEXT)


@dataclass(frozen=True, slots=True)
class QueueItem:
    api_key: int
    version: int
    body: ControllerRequest
    callback: Callable[[Message], None] | None


_STOP = object()


class RequestSendThread(threading.Thread):
    def __init__(
        self,
        controller_id: int,
        broker_id: int,
        host: str,
        port: int,
        requests: queue.Queue[Any],
        connection_factory: ConnectionFactory,
        socket_timeout_s: float,
    ) -> None:
        super().__init__(name=f"Controller-{controller_id}-to-broker-{broker_id}-send-thread", daemon=True)
        self.controller_id = controller_id
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.requests = requests
        self._factory = connection_factory
        self._timeout = socket_timeout_s
        self._conn: Connection | None = None
        self._stopped = threading.Event()
        self._prefix = f"[RequestSendThread controllerId={controller_id}] "

    def initiate_shutdown(self) -> None:
        self._stopped.set()
        self.requests.put(_STOP)

    def run(self) -> None:
        log.info("%sStarting", self._prefix)
        while not self._stopped.is_set():
            item = self.requests.get()
            if item is _STOP:
                break
            response = self._send_until_success(item)
            if response is None or item.callback is None:
                continue
            try:
                item.callback(response)
            except Exception:
                log.exception(
                    "%sError in response callback for api key %d from broker %d",
                    self._prefix,
                    item.api_key,
                    self.broker_id,
                )
        self._close()
        log.info("%sStopped", self._prefix)

    def _send_until_success(self, item: QueueItem) -> Message | None:
        while not self._stopped.is_set():
            try:
                if self._conn is None:
                    conn = self._factory(
                        self.host, self.port, f"controller-{self.controller_id}", self._timeout
                    )
                    # BrokerConnection connects lazily; connect now so failures back off here.
                    connect = getattr(conn, "connect", None)
                    if connect is not None:
                        connect()
                    self._conn = conn
                    log.info(
                        "%sController %d connected to %s:%d (id: %d) for sending state change requests",
                        self._prefix,
                        self.controller_id,
                        self.host,
                        self.port,
                        self.broker_id,
                    )
                return self._conn.send(item.api_key, item.version, item.body)
            except Exception as e:  # noqa: BLE001 - any failure: reconnect and resend
                log.warning(
                    "%sController %d fails to send request (api key %d) to broker %s:%d (id: %d): %s. "
                    "Reconnecting to broker.",
                    self._prefix,
                    self.controller_id,
                    item.api_key,
                    self.host,
                    self.port,
                    self.broker_id,
                    e,
                )
                self._close()
                self._stopped.wait(RETRY_BACKOFF_S)  # back off, but wake at once on shutdown
        return None

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None


class ControllerChannelManager:
    """Only the controller's event thread calls add/remove/send; sender threads are independent."""

    def __init__(
        self,
        controller_id: int,
        listener_name: str | None = None,
        socket_timeout_ms: int = 30000,
        connection_factory: ConnectionFactory = default_connection_factory,
    ) -> None:
        self.controller_id = controller_id
        self.listener_name = listener_name
        self._timeout_s = socket_timeout_ms / 1000
        self._factory = connection_factory
        self._brokers: dict[int, RequestSendThread] = {}

    def startup(self, brokers: list[Any]) -> None:
        for broker in brokers:
            self.add_broker(broker)

    def shutdown(self) -> None:
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)

    def add_broker(self, broker: Any) -> None:
        if broker.id in self._brokers:
            return
        endpoint = inter_broker_endpoint(broker, self.listener_name)
        host = endpoint.host or "localhost"
        log.info(
            "[Channel manager on controller %d]: Controller %d connecting to broker %s:%d (id: %d)",
            self.controller_id,
            self.controller_id,
            host,
            endpoint.port,
            broker.id,
        )
        thread = RequestSendThread(
            self.controller_id, broker.id, host, endpoint.port, queue.Queue(), self._factory, self._timeout_s
        )
        self._brokers[broker.id] = thread
        thread.start()

    def remove_broker(self, broker_id: int) -> None:
        thread = self._brokers.pop(broker_id, None)
        if thread is None:
            return
        # Do not join: the thread may be blocked in a socket call with a long timeout; it stops
        # at its next check and its pending requests are dropped with it.
        thread.initiate_shutdown()

    def send_request(
        self,
        broker_id: int,
        api_key: int,
        version: int,
        body: ControllerRequest,
        callback: Callable[[Message], None] | None = None,
    ) -> None:
        thread = self._brokers.get(broker_id)
        if thread is None:
            log.warning(
                "[Channel manager on controller %d]: Not sending request (api key %d) to broker %d, "
                "since it is offline.",
                self.controller_id,
                api_key,
                broker_id,
            )
            return
        thread.requests.put(QueueItem(api_key, version, body, callback))

    @property
    def broker_ids(self) -> set[int]:
        return set(self._brokers)

    def queue_size(self, broker_id: int) -> int:
        thread = self._brokers.get(broker_id)
        return thread.requests.qsize() if thread is not None else 0
