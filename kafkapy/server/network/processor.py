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
# Fetch responses go out through a reused buffer in chunks of this size.
_SEND_CHUNK = 256 * 1024
# Python >= 3.12 transports keep a reference to a written buffer they could not send at once,
# so a buffer handed to such a transport must not be reused until its write buffer drains.
_TRANSPORT_KEEPS_VIEWS = sys.version_info >= (3, 12)

Response = bytes | bytearray | memoryview | Sequence[Any] | None
_FRAMED = frozenset((bytes, bytearray, memoryview))
# What a handler returns when its answer is ready (framed bytes, or parts with file regions).
_READY = _FRAMED | {list, tuple}


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
        # Responses finished during one pass over the receive buffer, written together: one
        # send() per pass instead of one per response (a pipelining client sends many).
        self._out: list[bytes | bytearray | memoryview] = []
        # A response with file regions being sent chunk by chunk under write flow control.
        self._region_send: _RegionSend | None = None
        self._write_paused = False
        self.last_active = time.monotonic()
        # socket.request.max.bytes is not a dynamic config: read once, not per request.
        self._max_request_size: int = server.config.socket_request_max_bytes
        self._parse_header = server.parse_header

    # -- asyncio.BufferedProtocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            cfg = self.server.config
            # -1 keeps the OS default (and with it the kernel's buffer auto-tuning), as in Kafka.
            if cfg.socket_send_buffer_bytes != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, cfg.socket_send_buffer_bytes)
            if cfg.socket_receive_buffer_bytes != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, cfg.socket_receive_buffer_bytes)
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
            # A memoryview slice assignment is a memmove in place: slicing the bytearray itself
            # would first copy the partial frame (up to a whole ~1 MB produce request) into a
            # temporary. Equal-length assignment never resizes, so it is allowed while a view of
            # the buffer is still exported (the loop may hold the last get_buffer view).
            with memoryview(self._buf) as view:
                view[0:pending] = view[self._start : self._end]
        else:
            size = len(self._buf)
            while size - pending < needed:
                size *= 2
            new = bytearray(size)
            new[0:pending] = self._buf[self._start : self._end]
            self._buf = new
        self._start, self._end = 0, pending

    def _process(self) -> None:
        max_size = self._max_request_size
        buf = self._buf
        # The loop body runs once per request: the state checks are spelled out, not called.
        while not (self._muted or self._region_send is not None or self._write_paused or self._closed):
            start = self._start
            available = self._end - start
            if available < 4:
                break
            (size,) = _SIZE.unpack_from(buf, start)
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
                if len(buf) - start < 4 + size:
                    self._make_room(4 + size - available)
                break
            self._start = start + 4 + size
            self._dispatch(memoryview(buf)[start + 4 : start + 4 + size])
        if self._start == self._end:
            self._start = self._end = 0
        self._flush_out()
        self._update_reading()

    def _blocked(self) -> bool:
        """No further request is read while one is in progress or its response is not yet out
        (Kafka's muted channel), nor while the client is not reading its responses."""
        return self._muted or self._region_send is not None or self._write_paused

    def _dispatch(self, frame: memoryview) -> None:
        server = self.server
        try:
            header = self._parse_header(frame)
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
        if result is None or type(result) in _READY:
            self.send_response(result)
        elif isinstance(result, Awaitable):
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
        should_pause = self._blocked() or not self.server.request_channel.has_room()
        if should_pause and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
            if not self._blocked():
                self.server.request_channel.wait_for_room(self._resume)
        elif not should_pause and self._reading_paused:
            self._resume()

    def _resume(self) -> None:
        if self._reading_paused and self.transport is not None and not self._closed:
            self._reading_paused = False
            self.transport.resume_reading()
            self._process()

    # -- responses ------------------------------------------------------------------------------

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._region_send is not None:
            self._continue_region_send()
        if not self._blocked():
            self._process()

    def send_response(self, response: Response) -> None:
        """Queue a framed response: bytes, or a sequence of bytes and FileRegions (fetch)."""
        if response is None or self.transport is None or self._closed:
            return
        if type(response) in _FRAMED or isinstance(response, bytes | bytearray | memoryview):
            self._out.append(response)
        elif not any(isinstance(part, FileRegion) for part in response):
            self._out.extend(response)
        else:
            self._flush_out()
            self._region_send = _RegionSend(list(response))
            self._continue_region_send()

    def _flush_out(self) -> None:
        out = self._out
        if not out or self.transport is None or self._closed:
            out.clear()
            return
        self.transport.write(out[0] if len(out) == 1 else b"".join(out))
        out.clear()

    def _continue_region_send(self) -> None:
        """Copy the next chunk of headers and file regions into the reused send buffer and write it,
        until the transport asks us to pause (it then holds at most about one chunk).

        Measured on loopback here, pread into a reused buffer beat os.sendfile per region. Writing
        a multi-megabyte fetch response in one go would make asyncio copy the unsent remainder
        into a buffer of its own on every fetch; chunks under flow control keep that bounded.
        """
        transport, send = self.transport, self._region_send
        assert send is not None
        while not self._write_paused and not self._closed and transport is not None:
            chunk = self._chunk_buffer()
            filled = send.fill(chunk)
            if filled < 0:
                # The segment shrank under us (truncation): the frame would be short, and the
                # connection could not be kept in a consistent state.
                log.warning("Closing connection %s: short read from log segment", self.connection_id)
                self.close()
                return
            if filled:
                transport.write(chunk[:filled] if not _TRANSPORT_KEEPS_VIEWS else bytes(chunk[:filled]))
            if send.done:
                self._region_send = None
                return

    def _chunk_buffer(self) -> memoryview:
        if len(self._send_buf) < _SEND_CHUNK:
            self._send_buf = bytearray(_SEND_CHUNK)
        return memoryview(self._send_buf)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.transport is not None:
                self.transport.close()


class _RegionSend:
    """Where a response made of bytes and FileRegions stands while it is sent chunk by chunk."""

    __slots__ = ("parts", "index", "offset")

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.index = 0  # current part
        self.offset = 0  # bytes of the current part already copied

    @property
    def done(self) -> bool:
        return self.index >= len(self.parts)

    def fill(self, buf: memoryview) -> int:
        """Copy the next bytes into `buf`; the count copied, or -1 if a file region ran short."""
        pos, size = 0, len(buf)
        while pos < size and self.index < len(self.parts):
            part = self.parts[self.index]
            if isinstance(part, FileRegion):
                n = min(part.length - self.offset, size - pos)
                got = os.preadv(part.fd, [buf[pos : pos + n]], part.position + self.offset)
                if got <= 0:
                    return -1
                length = part.length
            else:
                data = part if isinstance(part, bytes) else memoryview(part).cast("B")
                got = min(len(data) - self.offset, size - pos)
                buf[pos : pos + got] = data[self.offset : self.offset + got]
                length = len(data)
            pos += got
            self.offset += got
            if self.offset >= length:
                self.index += 1
                self.offset = 0
        return pos
