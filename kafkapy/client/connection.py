"""BrokerConnection: a blocking socket to one broker, for tools and the controller.

One request at a time: `send` frames the request with a header, writes it, reads the framed
response and decodes it, all under a lock, so threads may share a connection. Timeouts and
disconnects close the socket (the byte stream can no longer be trusted) and raise typed
errors; the next `send` reconnects. No asyncio here: the broker's own network layer is
elsewhere; this is the one socket owner for code that may block.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import ssl
import struct
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final

from kafkapy.client.sasl_client import PLAINTEXT, ClientSecurity, sasl_authenticate
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.errors import (
    NetworkException,
    ProtocolError,
    TimeoutException,
    UnsupportedVersionException,
    for_code,
)
from kafkapy.protocol.messages import Message

_API_VERSIONS_MAX: Final = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
_CLIENT_SOFTWARE_NAME: Final = "kafkapy"
_CLIENT_SOFTWARE_VERSION: Final = "0.1.0"
# Frames above this are read into a buffer of their own even with reuse_response_buffer on, so
# that one outsized answer does not pin its size for the connection's life (a follower's answers
# are at most replica.fetch.response.max.bytes, 10 MiB by default).
_REUSED_BUFFER_MAX: Final = 16 * 1024 * 1024


class ConnectionClosedError(NetworkException):
    """The broker closed the connection, or it could not be opened."""


class RequestTimeoutError(TimeoutException):
    """No (complete) response within the connection's timeout."""


def open_client_socket(host: str, port: int, timeout: float, receive_buffer_bytes: int = -1) -> socket.socket:
    """socket.create_connection, with SO_RCVBUF set before connect when `receive_buffer_bytes`
    is not -1 (create_connection has no hook for that). The handshake fixes the window scale
    from the buffer the socket has then, so a buffer set afterwards would not match it (tcp(7):
    buffer sizes are set before connect); Kafka's Selector sets it before connect too."""
    if receive_buffer_bytes == -1:
        return socket.create_connection((host, port), timeout=timeout)
    error: OSError | None = None
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as e:
            sock.close()
            error = e
    raise error if error is not None else OSError(f"getaddrinfo returned nothing for {host}:{port}")


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        client_id: str = "kafkapy",
        timeout: float = 30.0,
        max_response_size: int = framing.DEFAULT_MAX_FRAME_SIZE,
        security: ClientSecurity = PLAINTEXT,
        reuse_response_buffer: bool = False,
        receive_buffer_bytes: int = -1,
    ) -> None:
        self.host = host
        # TLS and/or SASL on connect (sasl_client.py): the broker's inter-broker clients use it.
        self.security = security
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self.max_response_size = max_response_size
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._correlation = itertools.count(1)
        self.broker_versions: dict[int, tuple[int, int]] = {}
        # `reuse_response_buffer`: responses are read into one buffer kept from frame to frame
        # (a replica fetcher's megabyte answers: no fresh zeroed allocation per fetch). The
        # decoded response's bytes fields (a fetch's records) are views into it, valid only until
        # the next `send`: for a caller that is done with each response before the next request.
        self._reuse = reuse_response_buffer
        self._response_buf = bytearray()
        # SO_RCVBUF for the socket, set before connecting (a replica fetcher's
        # replica.socket.receive.buffer.bytes); -1 leaves it to the kernel's auto-tuning.
        self.receive_buffer_bytes = receive_buffer_bytes

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, connected={self._sock is not None})"

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> None:
        with self._lock:
            self._ensure_connected()

    def close(self) -> None:
        with self._lock:
            self._close()

    def initiate_close(self) -> None:
        """Wake a `send` blocked in another thread: shut the socket down without taking the
        lock that `send` holds for the whole request, so its read returns at once and the
        sender closes the socket (Kafka's NetworkClient.initiateClose). A replica fetcher
        stopping at shutdown otherwise waits out its fetch from a busy leader (seconds at 10k
        partitions)."""
        sock = self._sock  # read once: the owner may clear it meanwhile
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed or never connected
                sock.shutdown(socket.SHUT_RDWR)

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _ensure_connected(self) -> socket.socket:
        if self._sock is None:
            try:
                sock = open_client_socket(self.host, self.port, self.timeout, self.receive_buffer_bytes)
            except TimeoutError as e:
                raise RequestTimeoutError(f"connecting to {self.host}:{self.port} timed out") from e
            except OSError as e:
                raise ConnectionClosedError(f"cannot connect to {self.host}:{self.port}: {e}") from e
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.security.ssl_context is not None:
                try:
                    sock = self.security.ssl_context.wrap_socket(sock, server_hostname=self.host)
                except (OSError, ssl.SSLError) as e:
                    sock.close()
                    raise ConnectionClosedError(
                        f"TLS handshake with {self.host}:{self.port} failed: {e}"
                    ) from e
            self._sock = sock
            if self.security.sasl_mechanism is not None:
                try:
                    sasl_authenticate(self._send_locked, self.security, f"{self.host}:{self.port}")
                except BaseException:
                    self._close()
                    raise
        return self._sock

    def _next_correlation_id(self) -> int:
        return next(self._correlation) & 0x7FFFFFFF

    def send(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any] | Message,
        expect_response: bool = True,
    ) -> Message | None:
        """Send one request and return the decoded response (None when not expecting one).

        `expect_response=False` is for Produce with acks=0, which brokers never answer.
        Broker error codes inside the response are left for the caller to read.
        """
        with self._lock:
            self._ensure_connected()
            return self._send_locked(api_key, version, body, expect_response)

    def _send_locked(
        self, api_key: int, version: int, body: Mapping[str, Any] | Message, expect_response: bool = True
    ) -> Message | None:
        payload = messages.encode_request(api_key, version, body)
        sock = self._sock
        assert sock is not None
        # The caller holds self._lock.
        correlation_id = self._next_correlation_id()
        request = framing.encode_request_frame(api_key, version, correlation_id, self.client_id, payload)
        deadline = time.monotonic() + self.timeout
        what = f"{_api_name(api_key)} v{version}"
        try:
            sock.settimeout(self.timeout)
            sock.sendall(request)
            if not expect_response:
                return None
            frame = self._read_frame(sock, deadline, what)
        except TimeoutError as e:
            self._close()
            raise RequestTimeoutError(
                f"{what} to {self.host}:{self.port}: no response within {self.timeout}s"
            ) from e
        except OSError as e:
            self._close()
            raise ConnectionClosedError(f"{what} to {self.host}:{self.port} failed: {e}") from e
        except ProtocolError:
            self._close()
            raise
        return self._decode(api_key, version, correlation_id, frame, what)

    def _read_exactly(self, sock: socket.socket, n: int, deadline: float, what: str) -> bytearray:
        buf = bytearray(n)
        self._recv_into(sock, memoryview(buf), deadline, what)
        return buf

    def _recv_into(self, sock: socket.socket, view: memoryview, deadline: float, what: str) -> None:
        """Fill `view` from the socket, or raise (timeout, closed connection)."""
        n = len(view)
        # A plain socket waits for the whole frame in the kernel (MSG_WAITALL, SO_RCVTIMEO for
        # the deadline): one system call, so a thread reading a 1 MB fetch answer takes the GIL
        # back once instead of after every segment that arrives (each time contending with the
        # broker's event loop). TLS reads stay in the timed loop: SSLSocket takes no flags.
        whole = not isinstance(sock, ssl.SSLSocket)
        got = 0
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if whole:
                sock.settimeout(None)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(remaining))
                try:
                    k = sock.recv_into(view[got:], n - got, socket.MSG_WAITALL)
                except BlockingIOError:  # SO_RCVTIMEO ran out before any byte came
                    raise TimeoutError from None
            else:
                sock.settimeout(remaining)
                k = sock.recv_into(view[got:])
            if k == 0:
                self._close()
                raise ConnectionClosedError(
                    f"{self.host}:{self.port} closed the connection while we read the {what} response"
                )
            got += k

    def _read_frame(self, sock: socket.socket, deadline: float, what: str) -> memoryview:
        size = framing.read_frame_size(self._read_exactly(sock, 4, deadline, what), 0, self.max_response_size)
        if not self._reuse or size > _REUSED_BUFFER_MAX:
            return memoryview(self._read_exactly(sock, size, deadline, what))
        if len(self._response_buf) < size:
            # A new object, not a resize: views of the last response may still be alive.
            self._response_buf = bytearray(size)
        frame = memoryview(self._response_buf)[:size]
        self._recv_into(sock, frame, deadline, what)
        return frame

    def _decode(
        self, api_key: int, version: int, correlation_id: int, frame: memoryview, what: str
    ) -> Message:
        got_id, offset = framing.parse_response_header(
            frame, framing.response_header_version(api_key, version)
        )
        if got_id != correlation_id:
            self._close()  # the caller holds the lock
            raise ProtocolError(f"{what}: response correlation id {got_id}, expected {correlation_id}")
        if api_key == ApiKey.API_VERSIONS and frame[offset : offset + 2] != b"\x00\x00":
            # A broker that refuses our ApiVersions version answers in a v0 body (see framing).
            version = 0
        return messages.decode_response(api_key, version, frame, offset)

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """Ask the broker which versions it serves; retry lower when it refuses ours.

        Returns (and keeps in `broker_versions`) {api_key: (min, max)}.
        """
        version = _API_VERSIONS_MAX
        for _ in range(2):
            body = {
                "client_software_name": _CLIENT_SOFTWARE_NAME,
                "client_software_version": _CLIENT_SOFTWARE_VERSION,
            }
            resp = self.send(ApiKey.API_VERSIONS, version, body)
            assert resp is not None
            ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if resp.error_code == 0:
                self.broker_versions = ranges
                return ranges
            if resp.error_code != UnsupportedVersionException.code:
                raise for_code(resp.error_code, f"ApiVersions v{version} failed")
            low, high = ranges.get(ApiKey.API_VERSIONS, (0, 0))
            version = min(high, version - 1)
            if version < low:
                break
        raise UnsupportedVersionException(f"{self.host}:{self.port} shares no ApiVersions version with us")

    def pick_version(self, api_key: int, ours: tuple[int, int] | None = None) -> int:
        """The highest version of `api_key` both sides speak (call `api_versions()` first)."""
        if ours is None:
            ours = SUPPORTED_VERSIONS[ApiKey(api_key)]
        theirs = self.broker_versions.get(int(api_key))
        if theirs is None:
            raise UnsupportedVersionException(f"{self.host}:{self.port} does not serve {_api_name(api_key)}")
        high = min(ours[1], theirs[1])
        if high < max(ours[0], theirs[0]):
            raise UnsupportedVersionException(
                f"{_api_name(api_key)}: we speak {ours[0]}-{ours[1]}, "
                f"{self.host}:{self.port} speaks {theirs[0]}-{theirs[1]}"
            )
        return high


def _timeval(seconds: float) -> bytes:
    """SO_RCVTIMEO's struct timeval; never zero, which would mean no timeout."""
    micros = max(int(seconds * 1_000_000), 1000)
    return struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"
