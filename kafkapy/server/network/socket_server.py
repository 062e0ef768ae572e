"""SocketServer: an Acceptor per listener, a Processor per connection, the shared bounds.

What one client may cost the broker is bounded here and in the Processor:
- connections: ConnectionQuotas (`max.connections`, `max.connections.per.ip` + overrides),
  enforced by the Acceptors, whose listen backlog is `socket.listen.backlog.size`;
- request memory: one MemoryPool of `queued.max.request.bytes` for every receive buffer;
- requests in progress: RequestChannel (`queued.max.requests` across connections, one handler
  at a time per connection, see processor.py);
- idle connections: closed after `connections.max.idle.ms` without a byte received or a
  response finished (a client that stopped mid-frame included); buffers of connections quiet
  for one reaper tick go back to the allocator before that.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafkapy.server.metrics.meters import RequestMetrics
from kafkapy.server.network.acceptor import Acceptor
from kafkapy.server.network.connection_quotas import ConnectionQuotas
from kafkapy.server.network.memory_pool import MemoryPool
from kafkapy.server.network.processor import Processor, refresh_request_log_level
from kafkapy.server.network.request_channel import Request, RequestChannel
from kafkapy.server.security.channel_builder import ListenerSecurity
from kafkapy.server.security.sasl_processor import SaslProcessor

log = logging.getLogger("kafkapy.network.SocketServer")

# The idle reaper wakes at most this far apart (and at half of connections.max.idle.ms if less).
_MAX_REAPER_TICK_S = 5.0


class RequestHandler(Protocol):
    def handle(self, request: Request) -> Any: ...


@dataclass(frozen=True, slots=True)
class ListenerEndpoint:
    listener_name: str
    security_protocol: str
    host: str
    port: int


class SocketServer:
    def __init__(
        self,
        config: Any,
        endpoints: list[ListenerEndpoint],
        apis: RequestHandler,
        parse_header: Any,
        api_name: Any,
        security: Mapping[str, ListenerSecurity] | None = None,
        metrics: RequestMetrics | None = None,
    ) -> None:
        self.config = config
        # RequestMetrics (and kafka-request.log) of every request the processors complete.
        self.request_metrics: RequestMetrics = metrics if metrics is not None else RequestMetrics(str)
        # Listener name -> its TLS context / SASL settings; PLAINTEXT listeners need no entry.
        self.security: Mapping[str, ListenerSecurity] = security or {}
        idle_ms = config.connections_max_idle_ms
        # A TLS handshake that does not finish is bounded like an idle connection (at most 60 s,
        # asyncio's default), since the idle reaper only sees connections past their handshake.
        self.ssl_handshake_timeout_s = 60.0 if idle_ms < 0 else max(1.0, min(60.0, idle_ms / 1000))
        self.endpoints = endpoints
        self.apis = apis
        self.parse_header = parse_header  # (frame) -> framing.RequestHeader
        self.api_name = api_name
        self.request_channel = RequestChannel(config.queued_max_requests)
        listener_names = {ep.listener_name for ep in endpoints}
        self.connection_quotas = ConnectionQuotas(
            config.max_connections,
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides_map,
            # Kafka protects the inter-broker listener only when there is another one to take from.
            config.inter_broker_listener_name if len(listener_names) > 1 else None,
        )
        self.memory_pool: MemoryPool = MemoryPool(config.queued_max_request_bytes_effective, self._call_soon)
        self.connections: set[Processor] = set()
        self.acceptors: list[Acceptor] = []
        self.bound: dict[str, ListenerEndpoint] = {}
        self.closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reaper: asyncio.Task[None] | None = None

    def _call_soon(self, callback: Callable[..., object], *args: object) -> None:
        assert self._loop is not None
        self._loop.call_soon(callback, *args)

    async def startup(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        backlog = self.config.socket_listen_backlog_size
        for ep in self.endpoints:
            if ep.security_protocol != "PLAINTEXT" and ep.listener_name not in self.security:
                raise ValueError(
                    f"Listener {ep.listener_name} uses {ep.security_protocol} but has no security settings"
                )
            acceptor = Acceptor(self, ep, backlog)
            port = acceptor.open()
            self.bound[ep.listener_name] = ListenerEndpoint(
                ep.listener_name, ep.security_protocol, ep.host, port
            )
            self.acceptors.append(acceptor)
            log.info(
                "Awaiting socket connections on %s:%d (listener %s).",
                ep.host or "0.0.0.0",
                port,
                ep.listener_name,
            )
        refresh_request_log_level()
        for acceptor in self.acceptors:
            acceptor.start(loop)
        self._reaper = asyncio.ensure_future(self._close_idle_connections())

    def bound_port(self, listener_name: str) -> int:
        return self.bound[listener_name].port

    async def shutdown(self) -> None:
        log.info("Shutting down socket server")
        self.closing = True
        if self._reaper:
            self._reaper.cancel()
        for acceptor in self.acceptors:
            acceptor.close()
        for conn in list(self.connections):
            conn.close()
        await asyncio.sleep(0)  # let the transports run their connection_lost
        log.info("Shutdown completed")

    def new_processor(self, listener_name: str, client_ip: str) -> Processor:
        security = self.security.get(listener_name)
        if security is not None and security.sasl is not None:
            return SaslProcessor(self, listener_name, client_ip, security.sasl)
        return Processor(self, listener_name, client_ip)

    def connection_opened(self, conn: Processor) -> None:
        """The Acceptor counted this connection in the quotas; from here it is ours to uncount."""
        conn.registered = True
        self.connections.add(conn)
        if self.closing:
            conn.close()
        elif self.connection_quotas.total > self.connection_quotas.max_connections:
            self._close_lowest_priority_connection()

    def connection_closed(self, conn: Processor) -> None:
        if conn.registered:
            conn.registered = False
            self.connections.discard(conn)
            self.connection_quotas.dec(conn.client_ip)

    def _close_lowest_priority_connection(self) -> None:
        """The protected inter-broker listener went past max.connections: close the least recently
        active connection of another listener, as Kafka's processors do."""
        quotas = self.connection_quotas
        candidates = [c for c in self.connections if quotas.max_connections_exceeded(c.listener_name)]
        if candidates:
            victim = min(candidates, key=lambda c: c.last_active)
            log.info(
                "Closing connection %s: max.connections (%d) exceeded on listener %s",
                victim.connection_id,
                quotas.max_connections,
                victim.listener_name,
            )
            victim.close()

    async def _close_idle_connections(self) -> None:
        idle_ms = self.config.connections_max_idle_ms
        idle_s = idle_ms / 1000 if idle_ms >= 0 else None  # Kafka: negative disables idle expiry
        tick = _MAX_REAPER_TICK_S if idle_s is None else max(0.05, min(idle_s / 2, _MAX_REAPER_TICK_S))
        while True:
            await asyncio.sleep(tick)
            refresh_request_log_level()
            now = time.monotonic()
            for conn in list(self.connections):
                quiet = now - conn.last_active
                if idle_s is not None and quiet > idle_s and not conn.request_in_progress:
                    log.debug(
                        "About to close the idle connection from %s due to being idle for %d millis",
                        conn.connection_id,
                        int(quiet * 1000),
                    )
                    conn.close()
                elif quiet >= tick:
                    conn.release_idle_buffers()


__all__ = ["ListenerEndpoint", "Request", "SocketServer"]
