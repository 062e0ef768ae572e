"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, UUIDs.

Every reader takes `(buf, pos)` and returns `(value, new_pos)`; it never reads past `len(buf)`
and raises `ProtocolError` for anything the protocol does not allow (a varint longer than 5/10
bytes, a negative length other than -1, a length beyond the remaining bytes). Writers return
bytes. The schema codec (codegen.py) inlines the hot cases and calls these for the rest.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.errors import ProtocolError

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")

_UINT32_MAX: Final = 0xFFFFFFFF

# Lengths and tags below 128 are one byte: nearly every unsigned varint we write.
_SMALL_UVARINTS: Final = tuple(bytes((i,)) for i in range(128))


def read_uvarint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (a 32-bit value), as flexible versions use."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    value = 0
    for shift in (0, 7, 14, 21, 28):
        if pos >= len(buf):
            raise ProtocolError("truncated unsigned varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > _UINT32_MAX:
                raise ProtocolError(f"unsigned varint {value} does not fit in 32 bits")
            return value, pos
    raise ProtocolError("unsigned varint longer than 5 bytes")


def read_varlong(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varlong of at most 10 bytes.

    The one zigzag reader: the record codec calls it for every length or delta that does not
    fit one byte, so it is one loop without helpers.
    """
    value = shift = 0
    end = len(buf)
    while shift < 70:
        if pos >= end:
            raise ProtocolError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise ProtocolError("varint longer than 10 bytes")


def read_varint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed varint of at most 5 bytes."""
    value, end = read_varlong(buf, pos)
    if end - pos > 5:
        raise ProtocolError("varint longer than 5 bytes")
    return value, end


_ZERO_UUID_BYTES: Final = bytes(16)
_new_object = object.__new__
_set_slot = object.__setattr__


def uuid_from(data: memoryview | bytes) -> uuid.UUID:
    """A UUID from 16 bytes, twice as fast as `uuid.UUID(bytes=...)`; the zero UUID is shared.

    Topic ids are in every Metadata/Fetch v13+ partition, so this is on the hot path; the
    UUID is built the way `uuid.UUID.__init__` ends, minus its argument checks.
    """
    if data == _ZERO_UUID_BYTES:
        return ZERO_UUID
    u = _new_object(uuid.UUID)
    _set_slot(u, "int", int.from_bytes(data, "big"))
    _set_slot(u, "is_safe", uuid.SafeUUID.unknown)
    return u


def write_uvarint(value: int) -> bytes:
    if value < 128:
        if value < 0:
            raise ValueError(f"unsigned varint cannot hold {value}")
        return _SMALL_UVARINTS[value]
    if value > _UINT32_MAX:
        raise ValueError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _write_zigzag(value: int, bits: int) -> bytes:
    limit = 1 << (bits - 1)
    if not -limit <= value < limit:
        raise ValueError(f"varint cannot hold {value} in {bits} bits")
    z = (value << 1) ^ (value >> (bits - 1))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def write_varint(value: int) -> bytes:
    return _write_zigzag(value, 32)


def write_varlong(value: int) -> bytes:
    return _write_zigzag(value, 64)


def check_length(n: int, buf: memoryview | bytes, pos: int, what: str) -> None:
    """A length or count read from the wire must fit in what is left of the buffer.

    Bounding counts by the remaining bytes (as Kafka's own readers do) is what keeps a hostile
    0x7fffffff array length from allocating anything or looping for long.
    """
    if n < 0 or n > len(buf) - pos:
        raise ProtocolError(f"{what} length {n} exceeds the {len(buf) - pos} bytes left")


def read_string(buf: memoryview | bytes, pos: int, compact: bool) -> tuple[str | None, int]:
    """A (nullable) string: int16 length, or unsigned varint length+1 when compact."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        (n,) = INT16.unpack_from(buf, pos)
        pos += 2
    if n == -1:
        return None, pos
    check_length(n, buf, pos, "string")
    return str(buf[pos : pos + n], "utf-8"), pos + n


def read_bytes(buf: memoryview | bytes, pos: int, compact: bool) -> tuple[memoryview | None, int]:
    """(Nullable) bytes as a zero-copy slice: int32 length, or unsigned varint length+1."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        (n,) = INT32.unpack_from(buf, pos)
        pos += 4
    if n == -1:
        return None, pos
    check_length(n, buf, pos, "bytes")
    return memoryview(buf)[pos : pos + n], pos + n


def skip_tagged_fields(buf: memoryview | bytes, pos: int) -> int:
    """Skip a tagged-field section whose tags we do not know (KIP-482: unknown tags are ignored)."""
    count, pos = read_uvarint(buf, pos)
    check_length(count, buf, pos, "tagged fields")
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        check_length(size, buf, pos, "tagged field")
        pos += size
    return pos


def write_string(value: str | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else b"\xff\xff"
    data = value.encode()
    if compact:
        return write_uvarint(len(data) + 1) + data
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes is too long for an int16 length")
    return INT16.pack(len(data)) + data


def write_bytes(value: bytes | bytearray | memoryview | None, compact: bool) -> bytes:
    if value is None:
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    n = memoryview(value).nbytes
    return (write_uvarint(n + 1) if compact else INT32.pack(n)) + bytes(value)


def uuid_bytes(value: uuid.UUID | bytes | None) -> bytes:
    """16 bytes for a UUID field; None is the all-zero UUID (Kafka's Uuid.ZERO_UUID)."""
    if value is None:
        return ZERO_UUID.bytes
    if isinstance(value, uuid.UUID):
        return value.bytes
    data = bytes(value)
    if len(data) != 16:
        raise ValueError(f"a UUID is 16 bytes, got {len(data)}")
    return data
