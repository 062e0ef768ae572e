"""Decoding fetched record batches into ConsumerRecords: compressed batches included.

`records` of a Fetch response is a run of v2 batches that may end with a partial one (the
broker cuts at max bytes). Control batches (transaction markers) are skipped; records below
the fetch position are dropped, since a fetch returns whole batches and the position may lie
inside one. Varints are decoded inline for the one-byte case: nearly every length and delta
in a batch fits one byte, and a call per field would cost more than the rest of the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kafkapy.protocol.compression import decompress
from kafkapy.protocol.control_records import parse_control_batch
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import HEADER_SIZE, BatchHeader, compute_crc, iter_batches

Header = tuple[str, bytes | None]


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    leader_epoch: int = -1


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordException("Malformed varint in record")


def decode_batch(
    topic: str, partition: int, buf: memoryview, position: int, header: BatchHeader, min_offset: int = 0,
    check_crc: bool = True,
) -> list[ConsumerRecord]:  # fmt: skip
    """The records of one batch (decompressing it when needed) with offset >= min_offset."""
    if check_crc and compute_crc(buf, position, header.size) != header.crc:
        raise CorruptRecordException(
            f"Record batch for partition {topic}-{partition} at offset {header.base_offset} is corrupt "
            f"(stored crc = {header.crc})"
        )
    body = bytes(buf[position + HEADER_SIZE : position + header.size])
    if header.compression:
        body = decompress(header.compression, body)
    log_append = header.timestamp_type == 1
    base_offset, base_ts, epoch = header.base_offset, header.base_timestamp, header.partition_leader_epoch
    out: list[ConsumerRecord] = []
    append = out.append
    pos, end = 0, len(body)
    try:
        for _ in range(header.records_count):
            n = body[pos]
            length, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(body, pos)
            rec_end = pos + length
            pos += 1  # record attributes: unused
            n = body[pos]
            ts_delta, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(body, pos)
            n = body[pos]
            offset_delta, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(body, pos)
            n = body[pos]
            klen, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(body, pos)
            if klen < 0:
                key = None
            else:
                key = body[pos : pos + klen]
                pos += klen
            n = body[pos]
            vlen, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(body, pos)
            if vlen < 0:
                value = None
            else:
                value = body[pos : pos + vlen]
                pos += vlen
            headers: tuple[Header, ...] = ()
            if body[pos] == 0:
                pos += 1
            else:
                headers, pos = _headers(body, pos)
            if pos != rec_end:
                raise CorruptRecordException("Record length does not match its fields")
            offset = base_offset + offset_delta
            if offset >= min_offset:
                ts = header.max_timestamp if log_append else base_ts + ts_delta
                append(
                    ConsumerRecord(topic, partition, offset, ts, int(log_append), key, value, headers, epoch)
                )
    except IndexError as e:
        raise CorruptRecordException(f"Record batch for {topic}-{partition} is truncated") from e
    if pos != end:
        raise CorruptRecordException("Batch has bytes after its last record")
    return out


def _headers(body: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = _varint(body, pos)
    out: list[Header] = []
    for _ in range(count):
        klen, pos = _varint(body, pos)
        hkey = body[pos : pos + klen].decode()
        pos += klen
        vlen, pos = _varint(body, pos)
        if vlen < 0:
            out.append((hkey, None))
        else:
            out.append((hkey, body[pos : pos + vlen]))
            pos += vlen
    return tuple(out), pos


def decode_record_set(
    topic: str,
    partition: int,
    records: memoryview | bytes | None,
    min_offset: int = 0,
    check_crc: bool = True,
    aborted_transactions: Sequence[tuple[int, int]] | None = None,
) -> tuple[list[ConsumerRecord], int | None]:
    """Records of every whole batch in `records`, and the offset after the last whole batch
    (None when there was none: the partition's next fetch must ask for more bytes).

    `aborted_transactions` (read_committed: the fetch answer's (producer id, first offset)
    list) drops the batches of aborted transactions as Kafka's Fetcher does: a producer is
    aborted from its first offset until its ABORT marker."""
    if not records:
        return [], None
    view = records if isinstance(records, memoryview) else memoryview(records)
    out: list[ConsumerRecord] = []
    next_offset = None
    pending = sorted(aborted_transactions, key=lambda t: t[1]) if aborted_transactions else []
    aborted_pids: set[int] = set()
    for position, header in iter_batches(view):
        next_offset = header.next_offset
        if pending or aborted_pids:
            while pending and pending[0][1] <= header.last_offset:
                aborted_pids.add(pending.pop(0)[0])
            if header.is_control:
                if header.producer_id in aborted_pids and parse_control_batch(view, position).is_abort:
                    aborted_pids.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborted_pids:
                continue
        if header.is_control or header.next_offset <= min_offset:
            continue
        out.extend(decode_batch(topic, partition, view, position, header, min_offset, check_crc))
    return out, next_offset
