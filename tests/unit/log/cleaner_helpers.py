from __future__ import annotations

import os

from kafkapy.protocol.record_codec import Record, build_batch, decode_batch_records
from kafkapy.server.log.cleaner.cleaner import Cleaner, CleanerStats, LogToClean
from kafkapy.server.log.cleaner.offset_map import SkimpyOffsetMap
from kafkapy.server.log.cleaner.throttler import Throttler
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_segment import LogSegment


def keyed(
    pairs: list[tuple[bytes | None, bytes | None]], timestamp: int = 1_000, **kwargs: object
) -> bytearray:
    return build_batch([(k, v, [], timestamp) for k, v in pairs], **kwargs)  # type: ignore[arg-type]


def all_records(log: Log) -> list[Record]:
    out: list[Record] = []
    for segment in log.log_segments:
        for position, header in segment.log.batches_from(0):
            if header.records_count:
                out += decode_batch_records(segment.log.read(position, header.size))
    return out


def latest_by_key(records: list[Record]) -> dict[bytes | None, tuple[int, bytes | None]]:
    latest: dict[bytes | None, tuple[int, bytes | None]] = {}
    for r in records:
        latest[r.key] = (r.offset, r.value)
    return latest


def make_cleaner(memory: int = 1 << 16) -> Cleaner:
    return Cleaner(0, SkimpyOffsetMap(memory), 64 * 1024, 0.9, Throttler(float("inf")), lambda log: None)


def clean_once(log: Log, first_dirty: int = 0, cleaner: Cleaner | None = None) -> tuple[int, CleanerStats]:
    log.high_watermark = log.log_end_offset
    uncleanable = min(log.high_watermark, log.active_segment.base_offset)
    cleanable = LogToClean(log, first_dirty, uncleanable, 0, log.size)
    return (cleaner or make_cleaner()).clean(cleanable)


def set_mtime(segment: LogSegment, ms: int) -> None:
    os.utime(segment.log.path, (ms / 1000, ms / 1000))
