"""Acceptor: one listening socket, accepting while the connection quotas allow (Kafka's Acceptor).

kafkapy accepts on the event loop itself (`loop.add_reader` on the listening socket) rather than
through `loop.create_server`, because Kafka's limits need what asyncio's server does not offer:
stop accepting while `max.connections` is reached (the clients wait in the listen backlog of
`socket.listen.backlog.size`), refuse a connection over `max.connections.per.ip` before a
transport and a Processor exist for it, and survive running out of file descriptors.

Out of file descriptors (EMFILE/ENFILE) or kernel memory (ENOBUFS/ENOMEM), accept() fails while
the connection stays in the backlog; the acceptor logs it, stops accepting for
`ACCEPT_RETRY_DELAY_S` instead of spinning on a socket that stays readable, and tries again.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from typing import TYPE_CHECKING

from kafkapy.server.network.connection_quotas import TooManyConnectionsError, normalize_ip

if TYPE_CHECKING:
    from kafkapy.server.network.socket_server import ListenerEndpoint, SocketServer

log = logging.getLogger("kafkapy.network.Acceptor")

ACCEPT_RETRY_DELAY_S = 0.5
_RESOURCE_ERRNOS = frozenset((errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM))


def open_server_socket(host: str, port: int, backlog: int, receive_buffer_bytes: int = -1) -> socket.socket:
    """Bind and listen like Kafka's openServerSocket: an empty host is every address (one
    dual-stack socket where the OS has IPv6), otherwise the host's first address.

    `socket.receive.buffer.bytes` is set here, before bind, as Kafka does, and every accepted
    connection inherits it. Set on an accepted socket instead, it would shrink the buffer after
    the handshake has offered a window scale for the kernel's auto-tuned size (tcp(7): buffer
    sizes are set before listen or connect). Why the default is -1: config_keys.py.
    """
    dualstack = False
    address: tuple[object, ...]
    if not host and socket.has_dualstack_ipv6():
        family, address, dualstack = socket.AF_INET6, ("", port), True
    elif not host:
        family, address = socket.AF_INET, ("", port)
    else:
        family, _, _, _, resolved = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        address = resolved[:2]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if dualstack else 1)
        if receive_buffer_bytes != -1:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class Acceptor:
    def __init__(self, server: SocketServer, endpoint: ListenerEndpoint, backlog: int) -> None:
        self.server = server
        self.endpoint = endpoint
        self.listener_name = endpoint.listener_name
        self.backlog = backlog
        self.sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._resource_failures = 0
        self._attaching: set[asyncio.Task[None]] = set()

    def open(self) -> int:
        try:
            self.sock = open_server_socket(
                self.endpoint.host,
                self.endpoint.port,
                self.backlog,
                self.server.config.socket_receive_buffer_bytes,
            )
        except OSError as e:
            where = f"{self.endpoint.host or '0.0.0.0'}:{self.endpoint.port}"
            raise OSError(e.errno, f"Socket server failed to bind to {where}: {e.strerror}.") from e
        return int(self.sock.getsockname()[1])

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._start_reading()

    def close(self) -> None:
        self._stop_reading()
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _start_reading(self) -> None:
        if not self._reading and self.sock is not None and self._loop is not None:
            self._loop.add_reader(self.sock.fileno(), self._accept_ready)
            self._reading = True

    def _stop_reading(self) -> None:
        if self._reading and self.sock is not None and self._loop is not None:
            self._loop.remove_reader(self.sock.fileno())
        self._reading = False

    def _accept_ready(self) -> None:
        server, quotas = self.server, self.server.connection_quotas
        # At most a backlog's worth per wake-up, as asyncio's own server does, so a flood of
        # connections cannot hold the loop.
        for _ in range(self.backlog):
            if self.sock is None:
                return
            if not quotas.slot_available(self.listener_name):
                # max.connections: leave the rest in the listen backlog until one closes.
                self._stop_reading()
                quotas.wait_for_slot(self._start_reading)
                return
            try:
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in _RESOURCE_ERRNOS:
                    self._out_of_resources(e)
                    return
                # ECONNABORTED and the like: that one connection is gone, the listener is fine.
                log.warning("Error while accepting connection: %s", e)
                continue
            if self._resource_failures:
                log.info(
                    "Accepting connections again on listener %s after %d failed attempts",
                    self.listener_name,
                    self._resource_failures,
                )
                self._resource_failures = 0
            ip = normalize_ip(str(address[0]))
            try:
                quotas.inc(ip)
            except TooManyConnectionsError as e:
                log.info(
                    "Rejected connection from /%s, address already has the configured maximum of %d connections.",
                    e.ip,
                    e.count,
                )
                conn.close()
                continue
            task = asyncio.ensure_future(self._attach(conn, ip))
            self._attaching.add(task)
            task.add_done_callback(self._attaching.discard)
            if server.closing:
                return

    async def _attach(self, conn: socket.socket, ip: str) -> None:
        loop = asyncio.get_running_loop()
        processor = self.server.new_processor(self.listener_name, ip)
        security = self.server.security.get(self.listener_name)
        tls = security.ssl_context if security is not None else None
        try:
            if tls is None:
                await loop.connect_accepted_socket(lambda: processor, conn)
            else:
                # asyncio runs the TLS handshake on the loop without blocking it; the Processor's
                # connection_made only comes once it succeeded.
                await loop.connect_accepted_socket(
                    lambda: processor,
                    conn,
                    ssl=tls,
                    ssl_handshake_timeout=self.server.ssl_handshake_timeout_s,
                )
        except Exception as e:  # noqa: BLE001 - one connection failing must not reach the loop
            if isinstance(e, ssl.SSLError | ConnectionError | TimeoutError) and tls is not None:
                # Kafka's Selector wording for a refused TLS client (a plaintext one included).
                log.info("Failed authentication with /%s (SSL handshake failed: %s)", ip, e)
            else:
                log.warning("Closing connection from /%s before it started: %s", ip, e)
            conn.close()
            if not processor.registered:
                # connection_made never ran, so the quota slot is still ours to free.
                self.server.connection_quotas.dec(ip)

    def _out_of_resources(self, e: OSError) -> None:
        self._resource_failures += 1
        # The first failure of a run at ERROR (Kafka's "Error while accepting connection"), the
        # retries after it at DEBUG, so a long shortage does not flood the log.
        level = logging.ERROR if self._resource_failures == 1 else logging.DEBUG
        log.log(
            level,
            "Error while accepting connection on listener %s: %s (%d connections open); "
            "not accepting for %d ms. Raise the open files limit (ulimit -n) or lower max.connections.",
            self.listener_name,
            e,
            self.server.connection_quotas.total,
            int(ACCEPT_RETRY_DELAY_S * 1000),
        )
        self._stop_reading()
        assert self._loop is not None
        self._loop.call_later(ACCEPT_RETRY_DELAY_S, self._start_reading)
