"""Decoding fetched record batches into ConsumerRecords: compressed batches included.

`records` of a Fetch response is a run of v2 batches that may end with a partial one (the
broker cuts at max bytes). Control batches (transaction markers) are skipped; records below
the fetch position are dropped, since a fetch returns whole batches and the position may lie
inside one. The records are read by the one record decoder, protocol/record_codec.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kafkapy.protocol.compression import decompress
from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH
from kafkapy.protocol.control_records import parse_control_batch
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import HEADER_SIZE, BatchHeader, compute_crc, iter_batches
from kafkapy.protocol.record_codec import Header, read_records


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH


_new_tuple = tuple.__new__  # NamedTuple construction without its Python-level __new__


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
    ts_type, epoch = int(header.timestamp_type), header.partition_leader_epoch

    def make(
        offset: int, ts: int, key: bytes | None, value: bytes | None, headers: tuple[Header, ...]
    ) -> ConsumerRecord:
        return _new_tuple(ConsumerRecord, (topic, partition, offset, ts, ts_type, key, value, headers, epoch))

    try:
        return read_records(body, header, make, min_offset)
    except CorruptRecordException as e:
        raise CorruptRecordException(f"Record batch for {topic}-{partition}: {e.message}") from e


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
