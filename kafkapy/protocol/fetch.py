"""Fetch: requests through the generic codec, responses hand-built as a list of segments.

A Fetch response is mostly record data already on disk. `encode_fetch_response` returns the
whole frame (size prefix and response header included) as segments: `bytes` for everything
we write, and the caller's `FileRegion`s (or bytes-like record sets) untouched, so the
network layer can `sendfile` the regions; sizes come from region lengths, file data is never
read here. Layout (v4-v16; v12+ flexible, response header v1; v13+ topic ids):

    throttle_time_ms i32 | error_code i16 (v7+) | session_id i32 (v7+) |
    [topic: name string (<v13) or topic_id uuid (v13+) |
      [partition: index i32 | error_code i16 | high_watermark i64 | last_stable_offset i64 |
       log_start_offset i64 (v5+) | aborted_transactions nullable [producer_id i64 |
       first_offset i64] | preferred_read_replica i32 (v11+) | records nullable bytes]]
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple, cast

from kafkapy.protocol import messages
from kafkapy.protocol import primitives as prim
from kafkapy.protocol.errors import UnsupportedVersionException
from kafkapy.protocol.file_region import FileRegion
from kafkapy.protocol.generated.fetch_request import FetchRequest

MIN_VERSION: Final = 4
MAX_VERSION: Final = 16
FIRST_FLEXIBLE: Final = 12
FIRST_TOPIC_ID: Final = 13

Segment = bytes | bytearray | memoryview | FileRegion
RecordsLike = Segment | Sequence[Segment] | None

_PARTITION_HEAD_V4: Final = struct.Struct(">ihqq")
_PARTITION_HEAD_V5: Final = struct.Struct(">ihqqq")
_ABORTED: Final = struct.Struct(">qq")
_TOP_V7: Final = struct.Struct(">ihi")


class FetchPartitionData(NamedTuple):
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: RecordsLike = None
    aborted_transactions: Sequence[tuple[int, int]] | None = None  # (producer_id, first_offset)
    preferred_read_replica: int = -1


class FetchTopicData(NamedTuple):
    topic: str
    topic_id: uuid.UUID | bytes | None
    partitions: Sequence[FetchPartitionData]


def decode_fetch_request(
    version: int,
    buf: bytes | memoryview,
    offset: int = 0,
    max_elements: int = messages.DEFAULT_MAX_REQUEST_ELEMENTS,
) -> FetchRequest:
    """A Fetch request (`replica_id`, `max_wait_ms`, `min_bytes`, `topics[].partitions[]`...):
    the generic codec's generated class; only the response is written by hand."""
    return cast(FetchRequest, messages.decode_request(1, version, buf, offset, max_elements))


def segment_length(segment: Segment) -> int:
    if isinstance(segment, FileRegion):
        return segment.length
    return memoryview(segment).nbytes


def total_size(segments: Iterable[Segment]) -> int:
    """Bytes on the wire for `segments` (a whole frame when given encode_fetch_response's)."""
    return sum(segment_length(s) for s in segments)


def _record_parts(records: RecordsLike) -> list[Segment]:
    if records is None:
        return []
    if isinstance(records, FileRegion | bytes | bytearray | memoryview):
        return [records]
    return list(records)


def encode_fetch_response(
    version: int,
    correlation_id: int,
    topics: Iterable[FetchTopicData],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
) -> list[Segment]:
    """The whole response frame as segments; `total_size(result)` is 4 + its size prefix."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise UnsupportedVersionException(f"Fetch v{version} is outside {MIN_VERSION}-{MAX_VERSION}")
    flexible = version >= FIRST_FLEXIBLE
    segments: list[Segment] = []
    out = bytearray(prim.INT32.pack(correlation_id))
    if flexible:
        out += b"\x00"  # response header v1: no tagged fields

    def length(n: int) -> bytes:
        return prim.write_uvarint(n + 1) if flexible else prim.INT32.pack(n)

    if version >= 7:
        out += _TOP_V7.pack(throttle_time_ms, error_code, session_id)
    else:
        out += prim.INT32.pack(throttle_time_ms)
    topics = topics if isinstance(topics, Sequence) else list(topics)
    out += length(len(topics))
    for t in topics:
        if version >= FIRST_TOPIC_ID:
            out += prim.uuid_bytes(t.topic_id)
        else:
            out += prim.write_string(t.topic, flexible)
        out += length(len(t.partitions))
        for p in t.partitions:
            if version >= 5:
                out += _PARTITION_HEAD_V5.pack(
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
            else:
                out += _PARTITION_HEAD_V4.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                )
            if p.aborted_transactions is None:
                out += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                out += length(len(p.aborted_transactions))
                for producer_id, first_offset in p.aborted_transactions:
                    out += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        out += b"\x00"
            if version >= 11:
                out += prim.INT32.pack(p.preferred_read_replica)
            if p.records is None:
                # Empty, never null: librdkafka refuses a whole response over one null record
                # set ("invalid MessageSetSize -1"), and Kafka sends empty records with errors.
                out += length(0)
            else:
                parts = _record_parts(p.records)
                out += length(sum(segment_length(s) for s in parts))
                for part in parts:
                    if isinstance(part, FileRegion):
                        segments.append(bytes(out))  # our bytes so far, then the region as is
                        segments.append(part)
                        out = bytearray()
                    else:
                        out += part
            if flexible:
                out += b"\x00"  # partition tagged fields (DivergingEpoch etc.): none
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"  # no NodeEndpoints tag (v16)
    if out:
        segments.append(bytes(out))
    prefix = prim.INT32.pack(total_size(segments))
    if segments and isinstance(segments[0], bytes):
        segments[0] = prefix + segments[0]
    else:
        segments.insert(0, prefix)
    return segments
