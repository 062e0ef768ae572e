"""NodeConnection: one non-blocking, pipelined socket to one broker.

Unlike `BrokerConnection` (blocking, one request at a time), this connection queues any
number of framed requests, writes them as the socket accepts bytes, and matches responses to
requests by correlation id in send order (a broker answers one connection's requests in
order). It performs no waiting of its own: `NetworkClient` owns the selector and calls
`finish_connect`, `write` and `read` when the socket is ready. Only that thread touches it.
"""

from __future__ import annotations

import collections
import enum
import errno
import itertools
import socket
from collections.abc import Callable, Sequence
from typing import Any, Final

from kafkapy.protocol import framing
from kafkapy.protocol.errors import ProtocolError

_I32_SIZE: Final = 4
_RECV_CHUNK: Final = 256 * 1024
# sendmsg takes at most IOV_MAX (1024 on Linux) buffers per call.
_MAX_IOV: Final = 512

Buffer = bytes | bytearray | memoryview
ResponseCallback = Callable[[Any, BaseException | None], None]


class State(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"  # socket open; ApiVersions not answered yet
    READY = "ready"


class InFlightRequest:
    """A request written (or queued to be written) and waiting for its response."""

    __slots__ = ("correlation_id", "api_key", "version", "callback", "deadline", "decoder")

    def __init__(
        self,
        correlation_id: int,
        api_key: int,
        version: int,
        callback: ResponseCallback,
        deadline: float,
        decoder: Callable[[bytes, int], Any] | None,
    ) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.callback = callback
        self.deadline = deadline
        self.decoder = decoder


class NodeConnection:
    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        client_id: str,
        max_response_size: int = framing.DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.max_response_size = max_response_size
        self.state = State.DISCONNECTED
        self.sock: socket.socket | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.in_flight: collections.deque[InFlightRequest] = collections.deque()
        self._correlation = itertools.count(1)
        self._out: collections.deque[memoryview] = collections.deque()
        self._in = bytearray()
        self._frame_size = -1  # size of the frame being received, -1 before its prefix arrives

    def __repr__(self) -> str:
        return f"NodeConnection(node {self.node_id} at {self.host}:{self.port}, {self.state.value})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self) -> None:
        """Start a non-blocking connect; `finish_connect` completes it when the socket is writable."""
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            raise OSError(code, f"cannot connect to {self.address}: {errno.errorcode.get(code, code)}")
        self.sock = sock
        self.state = State.CONNECTING

    def finish_connect(self) -> None:
        assert self.sock is not None
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code != 0:
            raise OSError(code, f"cannot connect to {self.address}: {errno.errorcode.get(code, code)}")
        self.state = State.CONNECTED

    @property
    def wants_write(self) -> bool:
        return bool(self._out) or self.state is State.CONNECTING

    def enqueue(
        self,
        api_key: int,
        version: int,
        body: Buffer | Sequence[Buffer],
        callback: ResponseCallback,
        deadline: float,
        decoder: Callable[[bytes, int], Any] | None,
        expect_response: bool = True,
    ) -> InFlightRequest | None:
        """Frame a request and queue its bytes; the InFlightRequest awaits a response (None for
        requests the broker never answers, such as Produce with acks=0).

        `body` may be a list of buffers (a Produce request's batches): they are written with
        sendmsg as they are, never joined into one copy.
        """
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        header = framing.encode_request_header(api_key, version, correlation_id, self.client_id)
        parts = [body] if isinstance(body, bytes | bytearray | memoryview) else list(body)
        size = len(header) + sum(len(p) for p in parts)
        self._out.append(memoryview(size.to_bytes(4, "big", signed=True) + header))
        self._out.extend(memoryview(p).cast("B") for p in parts if len(p))
        if not expect_response:
            return None
        request = InFlightRequest(correlation_id, api_key, version, callback, deadline, decoder)
        self.in_flight.append(request)
        return request

    def write(self) -> None:
        """Write what the socket accepts now; the rest waits for the next writable event."""
        assert self.sock is not None
        out = self._out
        while out:
            try:
                sent = self.sock.sendmsg(list(itertools.islice(out, _MAX_IOV)))
            except (BlockingIOError, InterruptedError):
                return
            while sent and out:
                head = out[0]
                if len(head) <= sent:
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = head[sent:]
                    sent = 0

    def read(self) -> list[tuple[InFlightRequest, bytes]]:
        """Read what has arrived; return the completed (request, response frame) pairs in order.

        Raises ConnectionResetError when the broker closed the socket, ProtocolError on a frame
        that cannot be ours (too large, wrong correlation id).
        """
        assert self.sock is not None
        done: list[tuple[InFlightRequest, bytes]] = []
        while True:
            want = _RECV_CHUNK
            if self._frame_size > 0:
                # A large response: read it in big gulps rather than 256 KB at a time.
                want = max(want, min(self._frame_size + _I32_SIZE - len(self._in), 8 * _RECV_CHUNK))
            try:
                chunk = self.sock.recv(want)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                raise ConnectionResetError(f"{self.address} closed the connection")
            self._in += chunk
            self._take_frames(done)
            if len(chunk) < want:
                break
        return done

    def _take_frames(self, done: list[tuple[InFlightRequest, bytes]]) -> None:
        buf, pos = self._in, 0
        while len(buf) - pos >= _I32_SIZE:
            size = framing.read_frame_size(buf, pos, self.max_response_size)
            if len(buf) - pos - _I32_SIZE < size:
                self._frame_size = size
                break
            frame = bytes(buf[pos + _I32_SIZE : pos + _I32_SIZE + size])
            pos += _I32_SIZE + size
            self._frame_size = -1
            if not self.in_flight:
                raise ProtocolError(f"{self.address} sent a response to no request")
            request = self.in_flight.popleft()
            got = int.from_bytes(frame[:4], "big", signed=True)
            if got != request.correlation_id:
                raise ProtocolError(
                    f"{self.address}: response correlation id {got}, expected {request.correlation_id}"
                )
            done.append((request, frame))
        if pos:
            del buf[:pos]

    def close(self) -> list[InFlightRequest]:
        """Close the socket; return the requests that will now never be answered."""
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None
        self.state = State.DISCONNECTED
        self.api_versions = {}
        self._out.clear()
        self._in = bytearray()
        self._frame_size = -1
        pending = list(self.in_flight)
        self.in_flight.clear()
        return pending
