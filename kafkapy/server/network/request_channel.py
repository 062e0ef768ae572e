"""RequestChannel: the bounded hand-off between the network layer and the request handlers.

Kafka's RequestChannel is a queue of `queued.max.requests` entries between processor threads and
handler threads. kafkapy runs both on one event loop, so no queue is needed for the hand-off
itself; what stays is the bound: at most `queued.max.requests` requests may be in progress at
once. When the budget is spent, processors stop reading from their sockets (back-pressure to the
clients through TCP) until handlers finish, exactly the effect Kafka's full queue has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkapy.server.security.principal import ANONYMOUS, KafkaPrincipal


@dataclass(slots=True)
class Request:
    """One request read off a connection.

    `buffer` is a view of the frame (without the size prefix) inside the connection's receive
    buffer: it is only valid until the handler first awaits. Handlers that keep data across an
    await copy what they keep.
    """

    header: Any  # kafkapy.protocol.framing.RequestHeader
    buffer: memoryview
    body_offset: int
    connection_id: str
    client_host: str
    listener_name: str
    # Who sent it: the connection's authenticated principal (TLS certificate or SASL user),
    # User:ANONYMOUS on PLAINTEXT; what an Authorizer will be asked about.
    principal: KafkaPrincipal = ANONYMOUS
    context: Any = None
    # Set by a handler whose client is over a quota (Kafka's apiThrottleTimeMs): the Processor
    # then mutes the connection for that long after the response, or delays the response.
    throttle_time_ms: int = 0
    # Time on the loop for request quotas (perf_counter_ns): the running part's start, and what
    # earlier parts took before the handler awaited; both 0 when no request quota applies.
    loop_start_ns: int = 0
    loop_ns: int = 0


class RequestChannel:
    """Counts in-flight requests against `queued.max.requests` and wakes muted readers."""

    def __init__(self, queued_max_requests: int) -> None:
        self.capacity = queued_max_requests
        self.in_flight = 0
        self._blocked: list[Callable[[], None]] = []

    def has_room(self) -> bool:
        return self.in_flight < self.capacity

    def acquire(self) -> None:
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        if self._blocked and self.in_flight < self.capacity:
            waiters, self._blocked = self._blocked, []
            for wake in waiters:
                wake()

    def wait_for_room(self, wake: Callable[[], None]) -> None:
        self._blocked.append(wake)
