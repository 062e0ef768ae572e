"""Processor: one client connection, read into its own buffer, requests answered in order.

Kafka's Processor thread owns many connections through a selector; with one asyncio loop the
natural unit is one `BufferedProtocol` per connection. The loop reads straight into this
connection's receive buffer (no per-read allocation), frames are sliced out of it as
memoryviews, and a request's record sets stay views into it all the way to the log append.

Like Kafka, a connection is muted while one of its requests is in progress: the next request
is not read before the previous response is written, so responses leave in request order.
Requests that complete synchronously (most produce and metadata requests) are answered in the
same pass over the buffer, which lets a pipelining client's requests flow without extra wake-ups.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.file_region import FileRegion
from kafkapy.server.network.request_channel import Request

if TYPE_CHECKING:
    from kafkapy.server.network.socket_server import SocketServer

log = logging.getLogger("kafkapy.network.Processor")

_SIZE = struct.Struct(">i")
_INITIAL_RECEIVE_BUFFER = 64 * 1024
# A response larger than this is sent in chunks through the reused send buffer.
_SEND_CHUNK = 4 * 1024 * 1024
# Python >= 3.12 transports keep a reference to a written buffer they could not send at once,
# so a buffer handed to such a transport must not be reused until its write buffer drains.
_TRANSPORT_KEEPS_VIEWS = sys.version_info >= (3, 12)

Response = bytes | bytearray | memoryview | Sequence[Any] | None


class Processor(asyncio.BufferedProtocol):
    def __init__(self, server: SocketServer, listener_name: str) -> None:
        self.server = server
        self.listener_name = listener_name
        self.transport: asyncio.Transport | None = None
        self.connection_id = ""
        self.client_host = ""
        self._buf = bytearray(_INITIAL_RECEIVE_BUFFER)
        self._start = 0  # first byte not yet consumed
        self._end = 0  # first free byte
        self._muted = False
        self._reading_paused = False
        self._closed = False
        self._send_buf = bytearray()
        self.last_active = time.monotonic()

    # -- asyncio.BufferedProtocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            cfg = self.server.config
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, max(cfg.socket_send_buffer_bytes, 65536))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, max(cfg.socket_receive_buffer_bytes, 65536))
        local = transport.get_extra_info("sockname") or ("", 0)
        peer = transport.get_extra_info("peername") or ("", 0)
        self.client_host = str(peer[0])
        self.connection_id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}"
        self.server.connection_opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.server.connection_closed(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        free = len(self._buf) - self._end
        if free < 4096:
            self._make_room(4096)
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        self.last_active = time.monotonic()
        self._process()

    def eof_received(self) -> bool | None:
        return None

    # -- framing ------------------------------------------------------------------------------

    def _make_room(self, needed: int) -> None:
        """Make `needed` free bytes after `_end`: compact first, grow only past the largest frame."""
        pending = self._end - self._start
        if self._start and len(self._buf) - pending >= needed:
            # Equal-length slice assignment never resizes, so it is allowed while a memoryview
            # of the buffer is still exported (the loop may hold the last get_buffer view).
            self._buf[0:pending] = self._buf[self._start : self._end]
        else:
            size = len(self._buf)
            while size - pending < needed:
                size *= 2
            new = bytearray(size)
            new[0:pending] = self._buf[self._start : self._end]
            self._buf = new
        self._start, self._end = 0, pending

    def _process(self) -> None:
        max_size = self.server.config.socket_request_max_bytes
        while not self._muted and not self._closed:
            available = self._end - self._start
            if available < 4:
                break
            (size,) = _SIZE.unpack_from(self._buf, self._start)
            if size < 0 or size > max_size:
                log.warning(
                    "Closing connection %s: invalid receive (size = %d larger than %d)",
                    self.connection_id,
                    size,
                    max_size,
                )
                self.close()
                return
            if available < 4 + size:
                if len(self._buf) - self._start < 4 + size:
                    self._make_room(4 + size - available)
                break
            frame = memoryview(self._buf)[self._start + 4 : self._start + 4 + size]
            self._start += 4 + size
            self._dispatch(frame)
        if self._start == self._end:
            self._start = self._end = 0
        self._update_reading()

    def _dispatch(self, frame: memoryview) -> None:
        server = self.server
        try:
            header = server.parse_header(frame)
        except ProtocolError as e:
            log.warning("Closing connection %s: invalid request header: %s", self.connection_id, e)
            self.close()
            return
        request = Request(
            header, frame, header.body_offset, self.connection_id, self.client_host, self.listener_name
        )
        try:
            result = server.apis.handle(request)
        except ProtocolError as e:
            log.warning(
                "Closing connection %s: invalid %s v%d request (correlation id %d): %s",
                self.connection_id,
                server.api_name(header.api_key),
                header.api_version,
                header.correlation_id,
                e,
            )
            self.close()
            return
        except Exception:
            log.exception(
                "Closing connection %s: unexpected error handling api key %d v%d",
                self.connection_id,
                header.api_key,
                header.api_version,
            )
            self.close()
            return
        if isinstance(result, Awaitable):
            self._muted = True
            server.request_channel.acquire()
            task = asyncio.ensure_future(result)
            task.add_done_callback(self._on_response_ready)
        else:
            self.send_response(result)

    def _on_response_ready(self, task: asyncio.Future[Response]) -> None:
        self.server.request_channel.release()
        self._muted = False
        if task.cancelled():
            self.close()
            return
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, ProtocolError):
                log.warning("Closing connection %s: invalid request: %s", self.connection_id, exc)
            else:
                log.error("Closing connection %s: unexpected error", self.connection_id, exc_info=exc)
            self.close()
            return
        self.send_response(task.result())
        self._process()

    def _update_reading(self) -> None:
        if self.transport is None or self._closed:
            return
        should_pause = self._muted or not self.server.request_channel.has_room()
        if should_pause and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
            if not self._muted:
                self.server.request_channel.wait_for_room(self._resume)
        elif not should_pause and self._reading_paused:
            self._resume()

    def _resume(self) -> None:
        if self._reading_paused and self.transport is not None and not self._closed:
            self._reading_paused = False
            self.transport.resume_reading()
            self._process()

    # -- responses ------------------------------------------------------------------------------

    def send_response(self, response: Response) -> None:
        """Write a framed response: bytes, or a sequence of bytes and FileRegions (fetch)."""
        if response is None or self.transport is None or self._closed:
            return
        if isinstance(response, bytes | bytearray | memoryview):
            self.transport.write(response)
            return
        if not any(isinstance(part, FileRegion) for part in response):
            self.transport.writelines(response)
            return
        self._send_with_regions(response)

    def _send_with_regions(self, parts: Sequence[Any]) -> None:
        """Copy headers and file regions into the reused send buffer and write it.

        Measured on loopback here, one pread into a reused buffer and one write beat os.sendfile
        per region (a syscall per partition plus waiting for the transport to drain first).
        """
        assert self.transport is not None
        total = sum(p.length if isinstance(p, FileRegion) else len(p) for p in parts)
        chunk = min(total, _SEND_CHUNK)
        if _TRANSPORT_KEEPS_VIEWS and self.transport.get_write_buffer_size():
            self._send_buf = bytearray()
        if len(self._send_buf) < chunk:
            self._send_buf = bytearray(chunk)
        buf = memoryview(self._send_buf)
        pos = 0
        for part in parts:
            if isinstance(part, FileRegion):
                offset, remaining = part.position, part.length
                while remaining:
                    if pos == chunk:
                        buf, pos = self._flush_send_buffer(buf, pos), 0
                    n = min(remaining, chunk - pos)
                    got = os.preadv(part.fd, [buf[pos : pos + n]], offset)
                    if got <= 0:
                        # The segment was truncated under us: the frame would be short, so the
                        # connection cannot be kept in a consistent state.
                        log.warning("Closing connection %s: short read from log segment", self.connection_id)
                        self.close()
                        return
                    pos += got
                    offset += got
                    remaining -= got
            else:
                data = memoryview(part).cast("B") if not isinstance(part, bytes) else part
                i = 0
                while i < len(data):
                    if pos == chunk:
                        buf, pos = self._flush_send_buffer(buf, pos), 0
                    n = min(len(data) - i, chunk - pos)
                    buf[pos : pos + n] = data[i : i + n]
                    pos += n
                    i += n
        if pos:
            self._flush_send_buffer(buf, pos)

    def _flush_send_buffer(self, buf: memoryview, length: int) -> memoryview:
        assert self.transport is not None
        self.transport.write(buf[:length])
        if _TRANSPORT_KEEPS_VIEWS and self.transport.get_write_buffer_size():
            self._send_buf = bytearray(len(buf))
            return memoryview(self._send_buf)
        return buf

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.transport is not None:
                self.transport.close()
