"""Size-prefixed frames and the request/response headers around every API body.

A frame is `int32 size | size bytes`. A request frame holds a request header then the body:

    header v0: api_key i16 | api_version i16 | correlation_id i32
    header v1: v0 | client_id (i16-length nullable string, never compact)
    header v2: v1 | tagged fields                      (flexible versions of the API)

A response frame holds `correlation_id i32` (header v0) plus tagged fields in v1, used for
flexible versions, except ApiVersions, whose response header is v0 at every version so
that a client can read it before it knows what the broker speaks.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from typing import Final, NamedTuple

from kafkapy.protocol import primitives as prim
from kafkapy.protocol.api_keys import ApiKey, advertised_versions
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException
from kafkapy.protocol.messages import encode_response as encode_response_body
from kafkapy.protocol.schema import is_flexible

# socket.request.max.bytes' default: the largest frame a broker accepts.
DEFAULT_MAX_FRAME_SIZE: Final = 104_857_600
_HEADER_FIXED: Final = prim.INT16.size * 2 + prim.INT32.size
_HEADER_START: Final = struct.Struct(">hhi")  # api key, api version, correlation id
_HEADER_V1: Final = struct.Struct(">hhih")  # ... and the client id's length
_new_tuple = tuple.__new__  # NamedTuple construction without its Python-level __new__


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    body_offset: int  # where the body starts in the frame given to parse_request_header


# Bounded: api key and version come off the wire, and a hostile client must not grow the cache.
@functools.lru_cache(maxsize=4096)
def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0  # the one request Kafka ever sent without a client id
    return 2 if is_flexible(api_key, api_version, "request") else 1


@functools.lru_cache(maxsize=4096)
def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version, "response") else 0


def parse_request_header(frame: bytes | memoryview, offset: int = 0) -> RequestHeader:
    """Read the header of a request frame (size prefix already removed).

    The header version follows from the API's flexibleVersions, also for versions above
    what we know, so the body of an over-new ApiVersions request can still be answered.
    Tagged fields in a v2 header are skipped: none is defined that a broker must read.
    Runs once per request, so the common shapes are read inline rather than through the
    primitives (a call each costs as much as the parsing).
    """
    available = len(frame) - offset
    if available >= _HEADER_V1.size:
        api_key, api_version, correlation_id, n = _HEADER_V1.unpack_from(frame, offset)
    elif available >= _HEADER_FIXED:
        api_key, api_version, correlation_id = _HEADER_START.unpack_from(frame, offset)
        n = None  # no room for a client id: fine for a v0 header only
    else:
        raise ProtocolError(f"request header needs {_HEADER_FIXED} bytes, frame has {available}")
    header_version = request_header_version(api_key, api_version)
    pos = offset + _HEADER_FIXED
    client_id: str | None = None
    if header_version >= 1:
        if n is None or n < -1 or n > len(frame) - pos - 2:
            raise ProtocolError(f"malformed request header: bad client id length {n}")
        pos += 2
        if n >= 0:
            try:
                client_id = str(frame[pos : pos + n], "utf-8")
            except ValueError as e:
                raise ProtocolError(f"malformed request header: {e}") from e
            pos += n
    if header_version >= 2:
        try:
            pos = pos + 1 if frame[pos] == 0 else prim.skip_tagged_fields(frame, pos)
        except (IndexError, ValueError, struct.error) as e:
            raise ProtocolError(f"malformed request header: {e}") from e
    return _new_tuple(RequestHeader, (api_key, api_version, correlation_id, client_id, header_version, pos))


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    version = request_header_version(api_key, api_version)
    head = prim.INT16.pack(api_key) + prim.INT16.pack(api_version) + prim.INT32.pack(correlation_id)
    if version >= 1:
        head += prim.write_string(client_id, compact=False)
    if version >= 2:
        head += b"\x00"  # no tagged fields
    return head


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    head = prim.INT32.pack(correlation_id)
    return head + b"\x00" if header_version >= 1 else head


def parse_response_header(frame: bytes | memoryview, header_version: int, offset: int = 0) -> tuple[int, int]:
    """(correlation_id, body_offset) of a response frame (size prefix already removed)."""
    if len(frame) - offset < 4:
        raise ProtocolError("response frame shorter than its correlation id")
    (correlation_id,) = prim.INT32.unpack_from(frame, offset)
    pos = offset + 4
    if header_version >= 1:
        pos = prim.skip_tagged_fields(frame, pos)
    return correlation_id, pos


def frame(*parts: bytes | bytearray | memoryview) -> bytes:
    """Join parts behind their int32 total size."""
    body = b"".join(parts)
    return prim.INT32.pack(len(body)) + body


def encode_request_frame(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: bytes
) -> bytes:
    return frame(encode_request_header(api_key, api_version, correlation_id, client_id), body)


def encode_response_frame(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    header = encode_response_header(correlation_id, response_header_version(api_key, api_version))
    return frame(header, body)


def api_versions_fallback_frame(
    correlation_id: int, rows: Iterable[tuple[int, int, int]] | None = None
) -> bytes:
    """The answer to an ApiVersions request newer than we speak.

    Kafka answers UNSUPPORTED_VERSION in a v0 body (header v0) that still lists its
    ranges, so the client can retry with the highest version both sides know.
    """
    keys = [
        {"api_key": k, "min_version": lo, "max_version": hi}
        for k, lo, hi in (advertised_versions() if rows is None else rows)
    ]
    body = encode_response_body(
        ApiKey.API_VERSIONS, 0, {"error_code": UnsupportedVersionException.code, "api_keys": keys}
    )
    return frame(encode_response_header(correlation_id, 0), body)


def read_frame_size(
    buf: bytes | bytearray | memoryview, pos: int = 0, max_size: int = DEFAULT_MAX_FRAME_SIZE
) -> int:
    """The size in a 4-byte prefix, refused when negative or above `max_size`."""
    size: int = prim.INT32.unpack_from(buf, pos)[0]
    if size < 0 or size > max_size:
        raise ProtocolError(f"frame size {size} outside 0..{max_size}")
    return size


class FrameDecoder:
    """Sans-I/O splitter of a byte stream into frames (size prefix removed).

    Feed it whatever the socket returned, in any pieces, and take whole frames out; a
    bad size prefix raises ProtocolError and the caller closes the connection.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._max = max_frame_size

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes; return every frame now complete, in order."""
        self._buf += data
        frames = []
        while (f := self.next_frame()) is not None:
            frames.append(f)
        return frames

    def next_frame(self) -> bytes | None:
        buf = self._buf
        if len(buf) < 4:
            return None
        size = read_frame_size(buf, 0, self._max)
        if len(buf) < 4 + size:
            return None
        data = bytes(buf[4 : 4 + size])
        del buf[: 4 + size]
        return data
