"""Hand-written Produce codec: the broker's hottest request.

Request body (v3-v12; v9+ flexible: compact strings/arrays/records and tagged fields, which
are skipped):

    transactional_id nullable string | acks i16 | timeout_ms i32 |
    [topic: name string | [partition: index i32 | records nullable bytes]]

Record sets come back as memoryview slices of the caller's buffer: nothing is copied between
the socket buffer and `Log.append`. acks=0 requests get no response; the server decides that
from `acks`, this module only exposes it.

Response body per version: [name | [index i32 | error_code i16 | base_offset i64 |
log_append_time_ms i64 (v2+) | log_start_offset i64 (v5+) | record_errors, error_message
(v8+)]] | throttle_time_ms i32 (v1+). Measured against the generic codec on a 3-partition
request: decode 2.4 vs 3.2 us (v7), 3.4 vs 4.2 us (v9); encode ~1.4 vs ~2.0 us.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

from kafkapy.protocol import primitives as prim
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException

MIN_VERSION: Final = 3
MAX_VERSION: Final = 12  # v13 names topics by id
FIRST_FLEXIBLE: Final = 9

_ACKS_TIMEOUT: Final = struct.Struct(">hi")
_ACKS_TIMEOUT_COUNT: Final = struct.Struct(">hii")
_INDEX_SIZE: Final = struct.Struct(">ii")
_SIZE_CORRELATION: Final = struct.Struct(">ii")  # frame size, correlation id
_INDEX_ERROR_BASE_TIME: Final = struct.Struct(">ihqq")
_INDEX_ERROR_BASE_TIME_START: Final = struct.Struct(">ihqqq")
_I16 = prim.INT16.unpack_from
_I32 = prim.INT32.unpack_from


class ProducePartition(NamedTuple):
    index: int  # type: ignore[assignment]  # Kafka's field name; it shadows tuple.index, which nothing calls
    records: memoryview | None


class ProduceTopic(NamedTuple):
    name: str
    partitions: list[ProducePartition]


class ProduceRequest(NamedTuple):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: list[ProduceTopic]


class ProducePartitionResponse(NamedTuple):
    index: int  # type: ignore[assignment]  # Kafka's field name; it shadows tuple.index, which nothing calls
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: Sequence[tuple[int, str | None]] = ()  # (batch_index, message)
    error_message: str | None = None


def _check_version(version: int) -> None:
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise UnsupportedVersionException(f"Produce v{version} is outside {MIN_VERSION}-{MAX_VERSION}")


def _beyond(what: str, n: int) -> ProtocolError:
    return ProtocolError(f"Produce request {what} length {n} is negative or beyond the frame")


_new_tuple = tuple.__new__  # NamedTuple construction without its Python-level __new__


def _classic(mv: memoryview, p: int) -> ProduceRequest:
    """v3-v8: int16 string lengths, int32 array counts and record lengths."""
    (n,) = _I16(mv, p)
    p += 2
    if n < 0:
        if n != -1:
            raise ProtocolError(f"bad transactional id length {n}")
        tid = None
    else:
        if n < 0 or n > len(mv) - p:
            raise _beyond("transactional id", n)
        tid = str(mv[p : p + n], "utf-8")
        p += n
    acks, timeout_ms, n_topics = _ACKS_TIMEOUT_COUNT.unpack_from(mv, p)
    p += 10
    # Counts are bounded by the fewest bytes an element takes (a topic: name length and
    # partition count, 6; a partition: index and records length, 8), so no count makes more
    # tuples than the frame's bytes allow.
    if n_topics < 0 or n_topics * 6 > len(mv) - p:
        raise _beyond("topics", n_topics)
    topics = []
    for _ in range(n_topics):
        (n,) = _I16(mv, p)
        p += 2
        if n < 0 or n > len(mv) - p:
            raise _beyond("topic name", n)
        name = str(mv[p : p + n], "utf-8")
        (n_parts,) = _I32(mv, p + n)
        p += n + 4
        if n_parts < 0 or n_parts * 8 > len(mv) - p:
            raise _beyond("partitions", n_parts)
        parts = []
        for _ in range(n_parts):
            index, size = _INDEX_SIZE.unpack_from(mv, p)
            p += 8
            if size < 0:
                if size != -1:
                    raise ProtocolError(f"bad records length {size}")
                parts.append(_new_tuple(ProducePartition, (index, None)))
            else:
                if size < 0 or size > len(mv) - p:
                    raise _beyond("records", size)
                parts.append(_new_tuple(ProducePartition, (index, mv[p : p + size])))
                p += size
        topics.append(_new_tuple(ProduceTopic, (name, parts)))
    return _new_tuple(ProduceRequest, (tid, acks, timeout_ms, topics))


def _flexible(mv: memoryview, p: int) -> ProduceRequest:
    """v9-v12: unsigned varint lengths+1 and a tagged-field section closing every struct.

    One-byte varints (nearly all lengths) are read inline; a call per field costs more here
    than the rest of the decoding.
    """
    uv = prim.read_uvarint
    n = mv[p]
    if n < 128:
        p += 1
    else:
        n, p = uv(mv, p)
    if n == 0:
        tid = None
    else:
        n -= 1
        if n < 0 or n > len(mv) - p:
            raise _beyond("transactional id", n)
        tid = str(mv[p : p + n], "utf-8")
        p += n
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(mv, p)
    p = p + 6
    n_topics = mv[p]
    if n_topics < 128:
        p += 1
    else:
        n_topics, p = uv(mv, p)
    n_topics -= 1
    # Fewest bytes: a topic 3 (name, partition count, tags), a partition 6 (index, records, tags).
    if n_topics < 0 or n_topics * 3 > len(mv) - p:
        raise _beyond("topics", n_topics)
    topics = []
    for _ in range(n_topics):
        n = mv[p]
        if n < 128:
            p += 1
        else:
            n, p = uv(mv, p)
        n -= 1
        if n < 0 or n > len(mv) - p:
            raise _beyond("topic name", n)
        name = str(mv[p : p + n], "utf-8")
        p = p + n
        n_parts = mv[p]
        if n_parts < 128:
            p += 1
        else:
            n_parts, p = uv(mv, p)
        n_parts -= 1
        if n_parts < 0 or n_parts * 6 > len(mv) - p:
            raise _beyond("partitions", n_parts)
        parts = []
        for _ in range(n_parts):
            (index,) = _I32(mv, p)
            p = p + 4
            size = mv[p]
            if size < 128:
                p += 1
            elif mv[p + 1] < 128:  # records of 127 B to 16 KiB: a two-byte varint
                size = (size & 0x7F) | (mv[p + 1] << 7)
                p += 2
            else:
                size, p = uv(mv, p)
            if size == 0:
                records = None
            else:
                size -= 1
                if size < 0 or size > len(mv) - p:
                    raise _beyond("records", size)
                records = mv[p : p + size]
                p += size
            p = p + 1 if mv[p] == 0 else prim.skip_tagged_fields(mv, p)
            parts.append(_new_tuple(ProducePartition, (index, records)))
        p = p + 1 if mv[p] == 0 else prim.skip_tagged_fields(mv, p)
        topics.append(_new_tuple(ProduceTopic, (name, parts)))
    if mv[p] != 0:
        prim.skip_tagged_fields(mv, p)
    return _new_tuple(ProduceRequest, (tid, acks, timeout_ms, topics))


def decode_produce_request(version: int, buf: bytes | memoryview, offset: int = 0) -> ProduceRequest:
    """Decode a Produce request body; trailing bytes after it are ignored."""
    _check_version(version)
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    try:
        return _flexible(mv, offset) if version >= FIRST_FLEXIBLE else _classic(mv, offset)
    except (struct.error, IndexError, ValueError) as e:
        raise ProtocolError(f"malformed Produce v{version} request: {e}") from e


def encode_produce_response(
    version: int,
    topics: Sequence[tuple[str, Sequence[ProducePartitionResponse]]],
    throttle_time_ms: int = 0,
) -> bytes:
    """The Produce response body for `topics` as (name, partition results)."""
    _check_version(version)
    out = bytearray()
    _write_body(out, version, topics, throttle_time_ms)
    return bytes(out)


def encode_produce_response_frame(
    version: int,
    correlation_id: int,
    topics: Sequence[tuple[str, Sequence[ProducePartitionResponse]]],
    throttle_time_ms: int = 0,
) -> bytearray:
    """The whole response frame (size prefix, response header, body) built in one buffer.

    Partition results may be plain tuples in ProducePartitionResponse's field order.
    """
    _check_version(version)
    if len(topics) == 1 and throttle_time_ms == 0 and version >= 5:
        # Nearly every answer: one partition, no error message. Only its fixed row changes
        # between responses; the bytes around it are cached per (version, topic).
        name, partitions = topics[0]
        if len(partitions) == 1:
            index, error_code, base_offset, log_append_time_ms, log_start_offset, record_errors, message = (
                partitions[0]
            )
            if not record_errors and message is None:
                head, tail = _one_partition_layout(version, name)
                row = _INDEX_ERROR_BASE_TIME_START.pack(
                    index, error_code, base_offset, log_append_time_ms, log_start_offset
                )
                size = _SIZE_CORRELATION.size + len(head) + len(row) + len(tail) - 4
                return bytearray(b"".join((_SIZE_CORRELATION.pack(size, correlation_id), head, row, tail)))
    out = bytearray(_SIZE_CORRELATION.pack(0, correlation_id))
    if version >= FIRST_FLEXIBLE:
        out.append(0)  # response header v1: no tagged fields
    _write_body(out, version, topics, throttle_time_ms)
    _SIZE_CORRELATION.pack_into(out, 0, len(out) - 4, correlation_id)
    return out


@functools.lru_cache(maxsize=1024)  # bounded: names come off the wire
def _one_partition_layout(version: int, name: str) -> tuple[bytes, bytes]:
    """(header tags + body up to the partition row, body after it) of a one-partition answer
    with no error message and no throttle, cut out of what the general writer produces."""
    flexible = version >= FIRST_FLEXIBLE
    body = bytearray()
    _write_body(body, version, [(name, [ProducePartitionResponse(0, 0, 0, 0, 0, (), None)])], 0)
    row_at = (2 if flexible else 8) + len(_encoded_name(name, flexible))  # two counts and the name
    head = (b"\x00" if flexible else b"") + bytes(body[:row_at])
    return head, bytes(body[row_at + _INDEX_ERROR_BASE_TIME_START.size :])


def _write_body(
    out: bytearray,
    version: int,
    topics: Sequence[tuple[str, Sequence[ProducePartitionResponse]]],
    throttle_time_ms: int,
) -> None:
    # Runs once per produce request: counts below 128 (all real ones) are single bytes.
    flexible = version >= FIRST_FLEXIBLE
    fixed = _INDEX_ERROR_BASE_TIME_START.pack if version >= 5 else _INDEX_ERROR_BASE_TIME.pack
    with_errors = version >= 8
    if flexible:
        _write_count(out, len(topics) + 1)
    else:
        out += prim.INT32.pack(len(topics))
    for name, partitions in topics:
        out += _encoded_name(name, flexible)
        if flexible:
            _write_count(out, len(partitions) + 1)
        else:
            out += prim.INT32.pack(len(partitions))
        for (
            index,
            error_code,
            base_offset,
            log_append_time_ms,
            log_start_offset,
            record_errors,
            message,
        ) in partitions:
            if version >= 5:
                out += fixed(index, error_code, base_offset, log_append_time_ms, log_start_offset)
            else:
                out += fixed(index, error_code, base_offset, log_append_time_ms)
            if with_errors:
                if flexible:
                    _write_count(out, len(record_errors) + 1)
                else:
                    out += prim.INT32.pack(len(record_errors))
                for batch_index, batch_message in record_errors:
                    out += prim.INT32.pack(batch_index)
                    out += prim.write_string(batch_message, flexible)
                    if flexible:
                        out.append(0)
                if message is None and flexible:
                    out.append(0)
                else:
                    out += prim.write_string(message, flexible)
            if flexible:
                out.append(0)  # no CurrentLeader tag (v10+): clients refresh metadata instead
        if flexible:
            out.append(0)
    out += prim.INT32.pack(throttle_time_ms)
    if flexible:
        out.append(0)  # no NodeEndpoints tag (v10+)


@functools.lru_cache(maxsize=1024)  # bounded: names come off the wire
def _encoded_name(name: str, flexible: bool) -> bytes:
    return prim.write_string(name, flexible)


def _write_count(out: bytearray, n: int) -> None:
    if n < 128:
        out.append(n)
    else:
        out += prim.write_uvarint(n)
