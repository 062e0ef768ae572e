"""SocketServer: an Acceptor per listener, a Processor per connection, idle-connection reaping.

The Acceptor is the event loop's listening socket (`loop.create_server`); each accepted
connection gets its own Processor protocol object (see processor.py for why).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

from kafkapy.server.network.processor import Processor
from kafkapy.server.network.request_channel import Request, RequestChannel

log = logging.getLogger("kafkapy.network.SocketServer")


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
    ) -> None:
        self.config = config
        self.endpoints = endpoints
        self.apis = apis
        self.parse_header = parse_header  # (frame) -> framing.RequestHeader
        self.api_name = api_name
        self.request_channel = RequestChannel(config.queued_max_requests)
        self.connections: set[Processor] = set()
        self._servers: list[asyncio.base_events.Server] = []
        self.bound: dict[str, ListenerEndpoint] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        loop = asyncio.get_running_loop()
        for ep in self.endpoints:
            if ep.security_protocol != "PLAINTEXT":
                raise ValueError(
                    f"Listener {ep.listener_name} uses {ep.security_protocol}: only PLAINTEXT is supported"
                )
            server = await loop.create_server(
                lambda name=ep.listener_name: Processor(self, name),
                host=ep.host or None,
                port=ep.port,
                reuse_address=True,
                backlog=1024,
            )
            port = server.sockets[0].getsockname()[1]
            self.bound[ep.listener_name] = ListenerEndpoint(
                ep.listener_name, ep.security_protocol, ep.host, port
            )
            self._servers.append(server)
            log.info(
                "Awaiting socket connections on %s:%d (listener %s).",
                ep.host or "0.0.0.0",
                port,
                ep.listener_name,
            )
        self._reaper = asyncio.ensure_future(self._close_idle_connections())

    def bound_port(self, listener_name: str) -> int:
        return self.bound[listener_name].port

    async def shutdown(self) -> None:
        log.info("Shutting down socket server")
        if self._reaper:
            self._reaper.cancel()
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.close()
        for server in self._servers:
            await server.wait_closed()
        log.info("Shutdown completed")

    def connection_opened(self, conn: Processor) -> None:
        max_connections = self.config.get("max.connections")
        if max_connections is not None and len(self.connections) >= int(max_connections):
            log.info(
                "Rejecting connection %s: max.connections (%s) reached", conn.connection_id, max_connections
            )
            conn.close()
            return
        self.connections.add(conn)

    def connection_closed(self, conn: Processor) -> None:
        self.connections.discard(conn)

    async def _close_idle_connections(self) -> None:
        idle_s = self.config.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(idle_s, 10.0))
            now = time.monotonic()
            for conn in list(self.connections):
                if now - conn.last_active > idle_s and not conn._muted:
                    log.debug("Closing idle connection %s", conn.connection_id)
                    conn.close()


__all__ = ["ListenerEndpoint", "Request", "SocketServer"]
