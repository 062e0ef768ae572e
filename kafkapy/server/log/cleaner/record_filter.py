"""Filtering one record batch for the cleaner (Kafka's MemoryRecords.filterTo, batch v2 only).

A batch whose records all stay is copied byte for byte. Otherwise the kept records are
written back verbatim (each record's offset and timestamp deltas are relative to the batch's
base offset and base timestamp, which are kept) into a batch with the original header's base
offset, last offset delta (Kafka's `overrideLastOffset`), producer id, epoch, base sequence and
leader epoch, so offsets, sequence numbers and epochs survive cleaning; it is recompressed
with the batch's own codec. A batch of an idempotent producer that loses every record but is
that producer's last batch in the log stays as an empty header (Kafka's `writeEmptyHeader`),
so that the producer's sequence and epoch can still be rebuilt from the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkapy.protocol.compression import compress, decompress
from kafkapy.protocol.constants import NO_TIMESTAMP
from kafkapy.protocol.errors import CorruptRecordException, InvalidRecordException
from kafkapy.protocol.record_batch import (
    _U32,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    Attr,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
)
from kafkapy.protocol.record_codec import record_varint

# (offset, key or None, is a tombstone, timestamp) -> keep the record?
RetainRecord = Callable[[int, "bytes | None", bool, int], bool]


@dataclass(slots=True)
class FilterResult:
    output: bytes | bytearray | memoryview | None  # None: the batch goes
    records_read: int
    records_kept: int


@dataclass(slots=True)
class RawRecord:
    start: int
    end: int
    offset: int
    timestamp: int
    key: bytes | None
    tombstone: bool


def records_of(header: BatchHeader, body: memoryview) -> list[RawRecord]:
    """Each record of an (uncompressed) records section with its byte range."""
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    out: list[RawRecord] = []
    pos, end = 0, len(body)
    for _ in range(header.records_count):
        start = pos
        length, pos = record_varint(body, pos)
        rec_end = pos + length
        if rec_end > end:
            raise CorruptRecordException("Record extends past the end of its batch")
        pos += 1  # record attributes
        ts_delta, pos = record_varint(body, pos)
        offset_delta, pos = record_varint(body, pos)
        key_len, pos = record_varint(body, pos)
        key = None
        if key_len >= 0:
            key = bytes(body[pos : pos + key_len])
            pos += key_len
        value_len, _ = record_varint(body, pos)
        ts = header.max_timestamp if log_append else header.base_timestamp + ts_delta
        out.append(RawRecord(start, rec_end, header.base_offset + offset_delta, ts, key, value_len < 0))
        pos = rec_end
    return out


def filter_batch(
    batch: memoryview, header: BatchHeader, retain: RetainRecord, is_last_of_producer: bool
) -> FilterResult:
    """Keep the records of the batch `batch` (exactly its bytes) that `retain` accepts."""
    if header.is_control:
        # Transaction markers stay until the transaction support removes them as Kafka does.
        return FilterResult(batch, header.records_count, header.records_count)
    if header.records_count == 0:
        # An empty batch kept for its producer: it goes once a later batch of that producer exists.
        return FilterResult(batch if is_last_of_producer else None, 0, 0)
    codec = header.compression
    section = batch[HEADER_SIZE:]
    body = memoryview(decompress(codec, section)) if codec != CompressionType.NONE else section
    records = records_of(header, body)
    kept = [r for r in records if retain(r.offset, r.key, r.tombstone, r.timestamp)]
    if len(kept) == len(records):
        return FilterResult(batch, len(records), len(records))
    if not kept:
        if header.has_producer_id and is_last_of_producer:
            return FilterResult(_empty_header(header), len(records), 0)
        return FilterResult(None, len(records), 0)
    new_body = b"".join(body[r.start : r.end] for r in kept)
    if codec != CompressionType.NONE:
        new_body = compress(codec, new_body)
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        max_ts = header.max_timestamp
    else:
        max_ts = max((r.timestamp for r in kept), default=NO_TIMESTAMP)
    out = bytearray(HEADER_SIZE) + new_body
    HEADER.pack_into(
        out, 0, header.base_offset, len(out) - LOG_OVERHEAD, header.partition_leader_epoch, header.magic, 0,
        header.attributes, header.last_offset_delta, header.base_timestamp, max_ts, header.producer_id,
        header.producer_epoch, header.base_sequence, len(kept),
    )  # fmt: skip
    _U32.pack_into(out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return FilterResult(out, len(records), len(kept))


def _empty_header(header: BatchHeader) -> bytearray:
    """A batch with no records that keeps the producer's offsets, sequence and epoch."""
    attributes = header.attributes & ~int(Attr.COMPRESSION_MASK)
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(
        out, 0, header.base_offset, HEADER_SIZE - LOG_OVERHEAD, header.partition_leader_epoch, header.magic, 0,
        attributes, header.last_offset_delta, header.max_timestamp, header.max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, 0,
    )  # fmt: skip
    _U32.pack_into(out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


def check_keys_for_compacted_topic(
    buf: memoryview, batches: list[tuple[int, BatchHeader]], name: str
) -> None:
    """Kafka's LogValidator: a compacted topic refuses a record without a key (INVALID_RECORD).

    Costs a parse of the records, only for compacted topics, as Kafka's validation does there.
    """
    for position, header in batches:
        if header.is_control:
            continue
        section = buf[position + HEADER_SIZE : position + header.size]
        if header.compression != CompressionType.NONE:
            section = memoryview(decompress(header.compression, section))
        for record in records_of(header, section):
            if record.key is None:
                raise InvalidRecordException(
                    f"Compacted topic cannot accept message without key in topic partition {name}."
                )
