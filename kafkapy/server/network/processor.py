"""Processor: one client connection, read into its own buffer, requests answered in order.

Kafka's Processor thread owns many connections through a selector; with one asyncio loop the
natural unit is one `BufferedProtocol` per connection. The loop reads straight into this
connection's receive buffer (no per-read allocation), frames are sliced out of it as
memoryviews, and a request's record sets stay views into it all the way to the log append.

Like Kafka, a connection is muted while one of its requests is in progress: the next request
is not read before the previous response is written, so responses leave in request order.
Requests that complete synchronously (most produce and metadata requests) are answered in the
same pass over the buffer, which lets a pipelining client's requests flow without extra wake-ups;
their responses are handed to the transport every `_FLUSH_BYTES`, so a client that pipelines
requests without reading the answers is stopped by write flow control within one such slice.

Memory: the receive buffer is allocated at the first byte, grows (doubling) only as bytes
arrive, never from a frame's 4-byte size alone, and up to `BASE_CAPACITY` without asking; a
frame that needs more reserves its size from the shared MemoryPool (`queued.max.request.bytes`)
first and the connection waits, muted, while the pool is exhausted (memory_pool.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.file_region import FileRegion
from kafkapy.server.metrics.meters import SAMPLE_INTERVAL_NS, SAMPLE_POSITIONS
from kafkapy.server.network.connection_quotas import normalize_ip
from kafkapy.server.network.memory_pool import BASE_CAPACITY
from kafkapy.server.network.region_send import RegionSend
from kafkapy.server.network.request_channel import Request
from kafkapy.server.network.request_log import completed_request_line, request_details, request_logger
from kafkapy.server.quota.throttling import client_throttles
from kafkapy.server.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from kafkapy.server.network.socket_server import SocketServer

log = logging.getLogger("kafkapy.network.Processor")

_SIZE = struct.Struct(">i")
# The first allocation, at the first byte received: a connection that never sends costs no buffer,
# and one that sends a frame size and then nothing costs this much.
_INITIAL_RECEIVE_BUFFER = 16 * 1024
# A read is never offered less room than this (compacting or growing first).
_MIN_READ = 4096
# Synchronous responses of one pass go to the transport at least this often, so write flow
# control (pause_writing) can stop a pass whose client does not read what it asked for.
_FLUSH_BYTES = 64 * 1024
# Fetch responses go out through a reused buffer in chunks of this size.
_SEND_CHUNK = 256 * 1024
# Python >= 3.12 transports keep a reference to a written buffer they could not send at once,
# so a buffer handed to such a transport must not be reused until its write buffer drains.
_TRANSPORT_KEEPS_VIEWS = sys.version_info >= (3, 12)

Response = bytes | bytearray | memoryview | Sequence[Any] | None
_FRAMED = frozenset((bytes, bytearray, memoryview))
# What a handler returns when its answer is ready (framed bytes, or parts with file regions).
_READY = _FRAMED | {list, tuple}
_DEBUG = logging.DEBUG
_TRACE = 5  # log4j's TRACE, below Python's DEBUG
_log_enabled = request_logger.isEnabledFor
_now_ns = time.monotonic_ns
# A read at least this large is taken to hold several pipelined requests (see buffer_updated).
_PIPELINED_READ = 4096
# kafka-request.log at DEBUG: looked at by the SocketServer at start-up and at every idle-reaper
# tick (<= 5 s), not per request or per read (a level change from a logging config applies
# within a tick). A module global, not a Processor attribute: see _ConnectionStats.
_LOG_DEBUG = False


def refresh_request_log_level() -> None:
    global _LOG_DEBUG
    _LOG_DEBUG = _log_enabled(_DEBUG)


class _ConnectionStats:
    """A connection's RequestMetrics state: when its last read arrived (monotonic_ns: the frames
    in the buffer arrived then), whether a Produce/Fetch request is due to be timed (`skip`: how
    many to let pass first) and when one last was, the broker's request counts, and the request
    in progress."""

    __slots__ = ("received", "sample", "skip", "sampled_at", "counts", "timing")

    def __init__(self, counts: list[list[int]]) -> None:
        self.received = 0
        self.sample = False
        self.skip = 0
        self.sampled_at = 0
        self.counts = counts
        self.timing: _Timing | None = None


class _Timing:
    """A request whose answer is not out yet: when it arrived, when its handler started and
    returned, when its response was ready (RequestMetrics and kafka-request.log)."""

    __slots__ = ("request", "received", "started", "local_done", "ready", "response_bytes", "details")

    def __init__(
        self, request: Request, received: int, started: int, local_done: int, details: str | None
    ) -> None:
        self.request = request
        self.received = received
        self.started = started
        self.local_done = local_done
        self.ready = local_done
        self.response_bytes = 0
        self.details = details


class Processor(asyncio.BufferedProtocol):
    def __init__(self, server: SocketServer, listener_name: str, client_ip: str = "") -> None:
        self.server = server
        self.listener_name = listener_name
        # The address the connection quotas counted this connection under (normalised by the acceptor).
        self.client_ip = client_ip
        self.transport: asyncio.Transport | None = None
        # Set from the client certificate on TLS listeners, by SASL on SASL ones (sasl_processor.py).
        self.principal: KafkaPrincipal = ANONYMOUS
        self.connection_id = ""
        self.client_host = client_ip
        self._buf = bytearray()  # allocated at the first byte received
        self._start = 0  # first byte not yet consumed
        self._end = 0  # first free byte
        self._pool = server.memory_pool
        # Capacity the buffer may grow to: the base, plus what this connection reserved from the pool.
        self._limit = BASE_CAPACITY
        self._reserved = 0
        self._memory_wait = False  # muted until the pool grants a reservation
        self._muted = False
        # Muted for a quota's throttle time (KIP-219); the timer that ends it.
        self._throttled = False
        self._throttle_timer: asyncio.TimerHandle | None = None
        self._reading_paused = False
        self._closed = False
        self._send_buf = bytearray()
        # Responses finished during one pass over the receive buffer, written together: one
        # send() per pass instead of one per response (a pipelining client sends many).
        self._out: list[bytes | bytearray | memoryview] = []
        self._out_bytes = 0
        # A response with file regions being sent chunk by chunk under write flow control.
        self._region_send: RegionSend | None = None
        self._write_paused = False
        self.last_active = time.monotonic()
        self.registered = False  # counted by the SocketServer (and its connection quotas)
        # socket.request.max.bytes is not a dynamic config: read once, not per request.
        self._max_request_size: int = server.config.socket_request_max_bytes
        self._parse_header = server.parse_header
        # RequestMetrics state in one slotted attribute: a Processor past ~26 instance attributes
        # was measured 0.25 us per read pass slower (CPython's instance-dict fast path).
        self._stats = _ConnectionStats(server.request_metrics.counts)

    # -- asyncio.BufferedProtocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            cfg = self.server.config
            # -1 keeps the OS default (and with it the kernel's buffer auto-tuning), as in Kafka.
            # The receive buffer is the listening socket's, inherited (acceptor.py says why).
            if cfg.socket_send_buffer_bytes != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, cfg.socket_send_buffer_bytes)
            # As Kafka's Acceptor does: a peer that vanished without a FIN is found out eventually.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        local = transport.get_extra_info("sockname") or ("", 0)
        peer = transport.get_extra_info("peername") or ("", 0)
        if not self.client_host:
            self.client_host = str(peer[0])
        self.connection_id = f"{normalize_ip(str(local[0]))}:{local[1]}-{self.client_host}:{peer[1]}"
        security = self.server.security.get(self.listener_name)
        if security is not None and security.uses_tls:
            # asyncio calls connection_made after the TLS handshake: the certificate is known.
            self.principal = security.principal_mapper.principal(transport.get_extra_info("peercert"))
        self.server.connection_opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        self._pool.forget(self)
        if self._reserved:
            self._pool.release(self._reserved)
            self._reserved = 0
        self._buf = bytearray()
        self.server.connection_closed(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        free = len(self._buf) - self._end
        if free < _MIN_READ:
            self._make_room()
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        # One clock read: CLOCK_MONOTONIC both ways, the reaper's seconds and the metrics' ns.
        stats = self._stats
        now = stats.received = _now_ns()
        self.last_active = now * 1e-9
        if not stats.sample and now - stats.sampled_at >= SAMPLE_INTERVAL_NS:
            # A Produce/Fetch request of this read (or the next) is due to be timed: decided per
            # read, so the requests of a pass that is not due pay one attribute test.
            stats.sample = True
            # A read of many small pipelined requests: time one further in, not always the
            # first (whose queue time is ~0). A read of one request times that one.
            stats.skip = (now >> 10) % SAMPLE_POSITIONS if nbytes >= _PIPELINED_READ else 0
        self._process()

    def eof_received(self) -> bool | None:
        return None

    # -- framing ------------------------------------------------------------------------------

    def _make_room(self) -> None:
        """Make `_MIN_READ` free bytes after `_end`: compact in place if that is enough, else grow by
        doubling (so the buffer follows the bytes that actually arrived), never past `_limit`."""
        pending = self._end - self._start
        wanted = pending + _MIN_READ
        if self._start and len(self._buf) >= wanted:
            # A memoryview slice assignment is a memmove in place: slicing the bytearray itself
            # would first copy the partial frame (up to a whole ~1 MB produce request) into a
            # temporary. Equal-length assignment never resizes, so it is allowed while a view of
            # the buffer is still exported (the loop may hold the last get_buffer view).
            with memoryview(self._buf) as view:
                view[0:pending] = view[self._start : self._end]
        else:
            size = min(max(2 * len(self._buf), _INITIAL_RECEIVE_BUFFER), self._limit)
            # _process reserves before the frame's bytes need more than `_limit`: this only
            # guards the invariant that a read is always offered some room.
            size = max(size, wanted)
            new = bytearray(size)
            new[0:pending] = self._buf[self._start : self._end]
            self._buf = new
        self._start, self._end = 0, pending

    def _process(self) -> None:
        max_size = self._max_request_size
        buf = self._buf
        # The loop body runs once per request: the state checks are spelled out, not called.
        while not (
            self._muted
            or self._region_send is not None
            or self._write_paused
            or self._closed
            or self._throttled
        ):
            start = self._start
            available = self._end - start
            if available < 4:
                break
            (size,) = _SIZE.unpack_from(buf, start)
            if size < 0 or size > max_size:
                # Kafka's InvalidReceiveException wording, logged as its Selector does (WARN).
                log.warning(
                    "Unexpected error from %s; closing connection: Invalid receive (size = %d%s)",
                    self.connection_id,
                    size,
                    f" larger than {max_size}" if size >= 0 else "",
                )
                self.close()
                return
            if available < 4 + size:
                if available + _MIN_READ > self._limit and not self._memory_wait:
                    # The next read would need a buffer larger than this connection may hold.
                    # (Already waiting: a pass started by resume_writing must not queue twice.)
                    self._reserve(4 + size + _MIN_READ)
                break
            self._start = start + 4 + size
            self._dispatch(memoryview(buf)[start + 4 : start + 4 + size])
        if self._start == self._end:
            self._start = self._end = 0
            if self._reserved:
                self._pool.offer_idle(self)
        self._flush_out()
        self._update_reading()

    # -- request memory (memory_pool.py) ---------------------------------------------------------

    def _reserve(self, capacity: int) -> None:
        """Reserve from the pool what a buffer of `capacity` needs beyond what this connection holds;
        if the pool is exhausted, wait muted (reading stops at the end of this pass)."""
        needed = capacity - self._limit
        if self._pool.try_reserve(self, needed):
            self._reserved += needed
            self._limit = capacity
        else:
            self._memory_wait = True
            log.debug(
                "Muting connection %s: %d bytes of request memory not available (queued.max.request.bytes)",
                self.connection_id,
                needed,
            )

    def memory_granted(self, nbytes: int) -> None:
        if self._closed:
            self._pool.release(nbytes)
            return
        self._reserved += nbytes
        self._limit += nbytes
        self._memory_wait = False
        self._update_reading()

    def release_idle_memory(self) -> int:
        """Drop the receive buffer if it holds nothing and no request is using it; the pool bytes
        this gives back. The next byte received allocates a small buffer again."""
        if self._start != self._end or self._muted or self._closed:
            return 0
        freed = self._reserved
        self._reserved = 0
        self._limit = BASE_CAPACITY
        self._buf = bytearray()
        self._start = self._end = 0
        return freed

    def release_idle_buffers(self) -> None:
        """Called by the idle reaper for a connection quiet for a while: its buffers go back."""
        if self._region_send is None and self._send_buf:
            self._send_buf = bytearray()
        if self._buf and not self._memory_wait:
            self._pool.forget(self)
            self._pool.release(self.release_idle_memory())

    @property
    def request_in_progress(self) -> bool:
        """A handler is still working on this connection's request (not idle, whatever the clock says)."""
        return self._muted or self._throttled

    def _blocked(self) -> bool:
        """No further request is read while one is in progress or its response is not yet out
        (Kafka's muted channel), nor while the client is not reading its responses."""
        return self._muted or self._region_send is not None or self._write_paused or self._throttled

    def _dispatch(self, frame: memoryview) -> None:
        try:
            header = self._parse_header(frame)
        except ProtocolError as e:
            log.warning("Closing connection %s: invalid request header: %s", self.connection_id, e)
            self.close()
            return
        request = Request(
            header,
            frame,
            header.body_offset,
            self.connection_id,
            self.client_host,
            self.listener_name,
            self.principal,
        )
        key = header.api_key
        stats = self._stats
        # The hot APIs (Produce 0, Fetch 1) are timed at most one per SAMPLE_INTERVAL_NS per
        # connection (`sample`: this read is due one), the others always; every request is timed
        # while kafka-request.log is at DEBUG (its line has the times). The untimed path below
        # is the one a pipelining producer takes: kept to a count and a queued response.
        if (key > 1 or stats.sample or _LOG_DEBUG) and self._dispatch_timed(request, stats):
            return
        try:
            result = self.server.apis.handle(request)
        except Exception as e:
            self._handler_failed(header, e)
            return
        # RequestsPerSec: every request. Only Produce and Fetch come this way (key <= 1), and
        # their version passed the routing: no bound to check (see _dispatch_timed's count).
        stats.counts[key][header.api_version] += 1
        if type(result) in _FRAMED and not request.throttle_time_ms:
            # send_response's common case, inlined: one framed response queued for this pass.
            if not self._closed:
                self._out.append(result)
                self._out_bytes += len(result)
                if self._out_bytes >= _FLUSH_BYTES:
                    self._flush_out()
        elif result is None or type(result) in _READY:
            if request.throttle_time_ms:
                self._answer(request, result)
            else:
                self.send_response(result)
        elif isinstance(result, Awaitable):
            self._await_response(request, result)
        else:
            self._answer(request, result)

    def _dispatch_timed(self, request: Request, stats: _ConnectionStats) -> bool:
        """Handle `request` timed (RequestMetrics, kafka-request.log); False, without handling
        it, for a Produce/Fetch request a due read lets pass before the one it times."""
        header = request.header
        key = header.api_key
        if key <= 1 and not _LOG_DEBUG:
            if stats.skip:
                stats.skip -= 1
                return False
            stats.sample = False
            stats.sampled_at = stats.received
        server = self.server
        details = None
        # TRACE logs the request's contents: decoded now, while the frame is still valid.
        if _LOG_DEBUG and _log_enabled(_TRACE):
            details = request_details(request, server.config.kafkapy_request_max_elements)
        started = _now_ns()
        try:
            result = server.apis.handle(request)
        except Exception as e:
            self._handler_failed(header, e)
            return True
        # RequestsPerSec (the routing bounded the key; a version past 31 is only possible in an
        # ApiVersions fallback, counted under 31).
        version = header.api_version
        stats.counts[key][version if version < 32 else 31] += 1
        done = _now_ns()
        if result is None or type(result) in _READY:
            if request.throttle_time_ms:
                self._answer(request, result)
            else:
                self.send_response(result)
        elif isinstance(result, Awaitable):
            stats.timing = _Timing(request, stats.received, started, done, details)
            self._await_response(request, result)
            return True
        else:
            self._answer(request, result)
        if self._region_send is None and details is None:
            # The common case, kept to one call: answered at once and written in one go.
            server.request_metrics.record(key, stats.received, started, done, done, done)
            if _LOG_DEBUG:
                self._log_completed(_Timing(request, stats.received, started, done, None), result, done)
        else:
            stats.timing = _Timing(request, stats.received, started, done, details)
            self._completed(result)
        return True

    def _handler_failed(self, header: Any, error: Exception) -> None:
        """A handler raised: the connection is closed (a malformed request, or a bug)."""
        if isinstance(error, ProtocolError):
            log.warning(
                "Closing connection %s: invalid %s v%d request (correlation id %d): %s",
                self.connection_id,
                self.server.api_name(header.api_key),
                header.api_version,
                header.correlation_id,
                error,
            )
        else:
            log.error(
                "Closing connection %s: unexpected error handling api key %d v%d",
                self.connection_id,
                header.api_key,
                header.api_version,
                exc_info=error,
            )
        self.close()

    def _await_response(self, request: Request, result: Awaitable[Response]) -> None:
        self._muted = True
        self.server.request_channel.acquire()
        task = asyncio.ensure_future(result)
        task.add_done_callback(functools.partial(self._on_response_ready, request))

    def _answer(self, request: Request, response: Response) -> None:
        throttle_ms = request.throttle_time_ms
        if not throttle_ms:
            self.send_response(response)
            return
        # A quota was violated (KIP-219): clients that throttle themselves get the answer now
        # and the connection stays muted for the throttle time; older versions get the answer
        # when it is over. No further request is read meanwhile either way.
        header = request.header
        held: Response = None
        if client_throttles(header.api_key, header.api_version):
            self.send_response(response)
        else:
            held = response
        self._throttled = True
        loop = asyncio.get_running_loop()
        self._throttle_timer = loop.call_later(throttle_ms / 1000, self._end_throttle, held)

    def _end_throttle(self, held: Response) -> None:
        self._throttle_timer = None
        self._throttled = False
        if self._closed:
            return
        self.last_active = time.monotonic()
        self.send_response(held)
        self._process()

    def _on_response_ready(self, request: Request, task: asyncio.Future[Response]) -> None:
        self.server.request_channel.release()
        self._muted = False
        # A request that waited (a long poll, a join) counts as activity: the idle reaper must not
        # close the connection the moment its answer goes out.
        self.last_active = time.monotonic()
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
        response = task.result()
        if self._stats.timing is not None:
            self._stats.timing.ready = _now_ns()
        self._answer(request, response)
        self._completed(response)
        self._process()

    def _completed(self, response: Response) -> None:
        """Record the request in `_timing` once its response is written (now, or when the last
        chunk of a file-region response is)."""
        timing = self._stats.timing
        if timing is None:
            return
        if self._region_send is not None:
            return  # _continue_region_send finishes it (send_response noted the size)
        self._stats.timing = None
        self._finish(timing, response, _now_ns() if timing.ready != timing.local_done else timing.ready)

    def _finish(self, timing: _Timing, response: Response, end: int) -> None:
        h = timing.request.header
        self.server.request_metrics.record(
            h.api_key, timing.received, timing.started, timing.local_done, timing.ready, end
        )
        if _log_enabled(_DEBUG):
            self._log_completed(timing, response, end)

    def _log_completed(self, timing: _Timing, response: Response, end: int) -> None:
        security = self.server.security.get(self.listener_name)
        protocol = security.protocol if security is not None else "PLAINTEXT"
        size = timing.response_bytes or _response_size(response)
        request_logger.debug(
            "%s",
            completed_request_line(
                timing.request,
                self.server.api_name(timing.request.header.api_key),
                timing.details,
                size,
                protocol,
                (timing.received, timing.started, timing.local_done, timing.ready, end),
            ),
        )

    def _update_reading(self) -> None:
        if self.transport is None or self._closed:
            return
        should_pause = self._blocked() or self._memory_wait or not self.server.request_channel.has_room()
        if should_pause and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
            if not (self._blocked() or self._memory_wait):
                self.server.request_channel.wait_for_room(self._resume)
        elif not should_pause and self._reading_paused:
            self._resume()

    def _resume(self) -> None:
        if self._reading_paused and self.transport is not None and not self._closed and not self._memory_wait:
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
        # `type(...) in _FRAMED` is the isinstance's fast path, which mypy cannot narrow on.
        if type(response) in _FRAMED or isinstance(response, bytes | bytearray | memoryview):
            self._out.append(response)  # type: ignore[arg-type]
            self._out_bytes += len(response)
        elif not any(isinstance(part, FileRegion) for part in response):
            self._out.extend(response)  # type: ignore[arg-type]
            self._out_bytes += sum(len(part) for part in response)  # type: ignore[misc, arg-type]
        else:
            self._flush_out()
            timing = self._stats.timing
            if timing is not None:
                # The send may end within this call, and its end records the request: the size
                # must be known before (the request log showed size=0 for such fetches).
                timing.response_bytes = _response_size(response)
            self._region_send = RegionSend(list(response))
            self._continue_region_send()
            return
        if self._out_bytes >= _FLUSH_BYTES:
            # May call pause_writing at once, which ends the pass before the next request.
            self._flush_out()

    def _flush_out(self) -> None:
        out = self._out
        self._out_bytes = 0
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
                timing = self._stats.timing
                if timing is not None:
                    self._stats.timing = None
                    self._finish(timing, None, _now_ns())
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


def _response_size(response: Response) -> int:
    if response is None:
        return 0
    if isinstance(response, bytes | bytearray | memoryview):
        return len(response)
    size = 0
    parts: Sequence[Any] = response  # header bytes and FileRegions (a fetch's response)
    for part in parts:
        size += part.length if isinstance(part, FileRegion) else len(part)
    return size
