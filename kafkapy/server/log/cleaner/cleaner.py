"""Cleaner: one compaction of one log (Kafka's Cleaner).

1. Build the offset map (key -> latest offset) over the dirty section, from the first dirty
   offset to the first uncleanable offset (never past the last stable offset), stopping
   early when the map is full. Records of aborted transactions do not count.
2. Rewrite every segment from the start of the log to the end of what the map covers, in
   groups that fit one segment (`group_segments_by_size`): a record stays if no later offset
   of its key is in the map; a tombstone stays only while its segment is younger than the
   delete horizon (the last cleaned segment's mtime less delete.retention.ms). Batches of
   aborted transactions go, and transaction markers go once no data of their transaction
   is left and they are past the delete horizon (txn_metadata.py). A producer's last batch
   stays, emptied if need be, so that its sequence and epoch survive (Kafka's RETAIN_EMPTY).
3. Swap each cleaned segment in (`Log.replace_segments`: `.cleaned` -> `.swap` -> final).

Runs on a cleaner thread: reads and writes happen without the log's lock, which only the swap
takes; an abort (truncation, deletion, shutdown) is noticed between batches.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafkapy.protocol.compression import decompress
from kafkapy.protocol.control_records import ControlRecordType, parse_control_batch
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import HEADER_SIZE, BatchHeader, CompressionType, iter_batches, read_header
from kafkapy.server.log.cleaner.offset_map import SkimpyOffsetMap
from kafkapy.server.log.cleaner.record_filter import (
    FilterResult,
    RawRecord,
    RetainRecord,
    filter_batch,
    records_of,
)
from kafkapy.server.log.cleaner.segment_groups import group_segments_by_size
from kafkapy.server.log.cleaner.throttler import Throttler
from kafkapy.server.log.cleaner.txn_metadata import CleanedTransactionMetadata
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_segment import LogSegment
from kafkapy.server.log.producer_state import LastRecord
from kafkapy.server.log.segment_swap import CLEANED_SUFFIX, open_segment_with_suffix

logger = logging.getLogger("kafkapy.log.LogCleaner")


class LogCleaningAbortedError(Exception):
    """The cleaning of a log was aborted (truncation, deletion, shutdown): nothing is swapped."""


@dataclass(slots=True)
class LogToClean:
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


@dataclass(slots=True)
class CleanerStats:
    start_s: float = field(default_factory=time.monotonic)
    map_complete_s: float = 0.0
    end_s: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    buffer_utilization: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return max(self.end_s - self.start_s, 1e-9)

    @property
    def elapsed_index_s(self) -> float:
        return max(self.map_complete_s - self.start_s, 1e-9)


def iter_segment_batches(
    segment: LogSegment, buffer_size: int, start_position: int = 0
) -> Iterator[tuple[memoryview, BatchHeader]]:
    """Each whole batch of `segment` as a view into a read buffer of `buffer_size` bytes
    (grown for a batch larger than it, as Kafka grows its read buffer)."""
    position, end = start_position, segment.size
    while position < end:
        chunk = segment.log.read(position, min(buffer_size, end - position))
        view = memoryview(chunk)
        consumed = 0
        for batch_position, header in iter_batches(view):
            yield view[batch_position : batch_position + header.size], header
            consumed = batch_position + header.size
        if consumed == 0:
            if len(view) < HEADER_SIZE:
                return
            needed = read_header(view).size
            if position + needed > end:
                return  # a torn tail: recovery's business, not the cleaner's
            buffer_size = max(buffer_size, needed)
            continue
        position += consumed


class Cleaner:
    def __init__(
        self,
        cleaner_id: int,
        offset_map: SkimpyOffsetMap,
        io_buffer_size: int,
        dup_buffer_load_factor: float,
        throttler: Throttler,
        check_done: Callable[[Log], None],
        time_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.id = cleaner_id
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 4096)
        self.max_desired_map_size = int(offset_map.slots * dup_buffer_load_factor)
        self.throttler = throttler
        self._check_done = check_done  # raises LogCleaningAbortedError
        self._time_ms = time_ms

    def clean(self, cleanable: LogToClean) -> tuple[int, CleanerStats]:
        """Clean the log; returns the offset cleaning reached (the next first dirty offset)."""
        log = cleanable.log
        logger.info("Cleaner %d: Beginning cleaning of log %s.", self.id, log.name)
        cleaned = log.segments_in_range(0, cleanable.first_dirty_offset)
        delete_horizon_ms = cleaned[-1].last_modified - log.config.delete_retention_ms if cleaned else 0
        stats = CleanerStats()
        logger.info("Cleaner %d: Building offset map for %s...", self.id, log.name)
        end_offset = self.build_offset_map(
            log, cleanable.first_dirty_offset, cleanable.first_uncleanable_offset, stats
        )
        if end_offset <= cleanable.first_dirty_offset:
            raise RuntimeError(
                f"Unable to build the offset map for {log.name} from offset {cleanable.first_dirty_offset}: the "
                "dedupe buffer is too small. You can increase log.cleaner.dedupe.buffer.size or decrease "
                "log.cleaner.threads"
            )
        stats.map_complete_s = time.monotonic()
        txns = CleanedTransactionMetadata()  # one for the whole rewrite, as in Kafka's doClean
        stats.buffer_utilization = self.offset_map.utilization
        logger.info(
            "Cleaner %d: Cleaning log %s (cleaning prior to %s, discarding tombstones prior to %s)...",
            self.id, log.name, _date(log.segments_in_range(0, end_offset)[-1].last_modified),
            _date(delete_horizon_ms),
        )  # fmt: skip
        for group in group_segments_by_size(
            log.segments_in_range(0, end_offset), log.config.segment_bytes, log.config.segment_index_bytes,
            end_offset,
        ):  # fmt: skip
            self.clean_segments(log, group, delete_horizon_ms, stats, txns)
        stats.end_s = time.monotonic()
        return end_offset, stats

    # -- the offset map -------------------------------------------------------------------------

    def build_offset_map(self, log: Log, start: int, end: int, stats: CleanerStats) -> int:
        """Map every key of [start, end) to its latest offset; returns the offset the map
        covers up to (exclusive), `end` unless the map filled up first."""
        offset_map = self.offset_map
        offset_map.clear()
        segments = log.segments_in_range(start, end)
        logger.info(
            "Cleaner %d: Building offset map for log %s for %d segments in offset range [%d, %d).",
            self.id, log.name, len(segments), start, end,
        )  # fmt: skip
        txns = CleanedTransactionMetadata()
        txns.add_aborted_transactions(log.collect_aborted_transactions(start, end))
        full = False
        for segment in segments:
            self._check_done(log)
            for batch, header in iter_segment_batches(segment, self.io_buffer_size):
                if header.last_offset < start:
                    continue
                if header.base_offset >= end:
                    break
                if header.is_control:
                    with contextlib.suppress(CorruptRecordException):  # an unknown control record
                        txns.on_control_batch_read(header, _control_type(batch, header))
                    continue
                stats.map_bytes_read += header.size
                if offset_map.size >= self.max_desired_map_size:
                    full = True
                    break
                self.throttler.maybe_throttle(header.size)
                if txns.on_batch_read(header):
                    # Aborted data is removed whatever its keys: it must not hide older values.
                    stats.map_messages_read += header.records_count
                    offset_map.update_latest_offset(min(header.last_offset, end - 1))
                    continue
                for record in _batch_records(batch, header):
                    if start <= record.offset < end:
                        stats.map_messages_read += 1
                        if record.key is not None:
                            offset_map.put(record.key, record.offset)
                # The map covers the whole batch even where its last records had no key.
                offset_map.update_latest_offset(min(header.last_offset, end - 1))
            if full:
                break
        logger.info("Cleaner %d: Offset map for log %s complete.", self.id, log.name)
        return offset_map.latest_offset + 1 if full else max(end, offset_map.latest_offset + 1)

    # -- rewriting ------------------------------------------------------------------------------

    def clean_segments(
        self,
        log: Log,
        group: list[LogSegment],
        delete_horizon_ms: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata | None = None,
    ) -> None:
        first = group[0]
        cleaned = open_segment_with_suffix(
            log.dir, first.base_offset, log.config, CLEANED_SUFFIX, self._time_ms
        )
        txns = txns or CleanedTransactionMetadata()
        txns.cleaned_index = cleaned.txn_index
        try:
            last_records = log.last_records_of_active_producers()
            sizes = [s.size for s in group]
            offset_map = self.offset_map
            map_end = offset_map.latest_offset
            for i, (old, size) in enumerate(zip(group, sizes, strict=True)):
                upper = group[i + 1].base_offset if i + 1 < len(group) else map_end + 1
                txns.add_aborted_transactions(log.collect_aborted_transactions(old.base_offset, upper))
                # Markers follow the tombstones' horizon (Kafka's retainDeletesAndTxnMarkers).
                retain_deletes = old.last_modified > delete_horizon_ms
                logger.info(
                    "Cleaner %d: Cleaning %s in log %s into %d with deletion horizon %d, %s deletes.",
                    self.id, old, log.name, cleaned.base_offset, delete_horizon_ms,
                    "retaining" if retain_deletes else "discarding",
                )  # fmt: skip

                def retain(
                    offset: int,
                    key: bytes | None,
                    tombstone: bool,
                    _ts: int,
                    retain_deletes: bool = retain_deletes,
                ) -> bool:
                    if offset > map_end:
                        return True  # past what the map saw: the next cleaning decides
                    if key is None:
                        stats.invalid_messages += 1
                        return False
                    found = offset_map.get(key)
                    if found >= 0 and offset < found:
                        return False
                    return not tombstone or retain_deletes

                read = 0
                for batch, header in iter_segment_batches(old, self.io_buffer_size):
                    if read >= size:
                        break
                    read += header.size
                    stats.bytes_read += header.size
                    self.throttler.maybe_throttle(header.size)
                    result = _filter_for_cleaning(batch, header, retain, txns, retain_deletes, last_records)
                    stats.messages_read += result.records_read
                    stats.messages_written += result.records_kept
                    if result.output is not None:
                        out = memoryview(result.output)
                        max_ts = read_header(out).max_timestamp
                        cleaned.append(header.last_offset, max_ts, header.last_offset, out)
                        stats.bytes_written += out.nbytes
                    if read % (1 << 20) < header.size:
                        self._check_done(log)
                self._check_done(log)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            # Kafka keeps the newest old segment's mtime: the delete horizon is measured from it.
            mtime_s = group[-1].last_modified / 1000
            os.utime(cleaned.log.path, (mtime_s, mtime_s))
            log.replace_segments(cleaned, group, sizes)
            logger.debug(
                "Cleaner %d: Swapped in cleaned segment %d for %s in log %s",
                self.id, cleaned.base_offset, [s.base_offset for s in group], log.name,
            )  # fmt: skip
        except BaseException:
            # Only a segment the swap has not touched yet is thrown away: once renamed to
            # `.swap` it is the log's data, and the loader completes the swap after a restart.
            if cleaned.log.path.endswith(CLEANED_SUFFIX):
                cleaned.close()
                cleaned.delete()
            raise


def _control_type(batch: memoryview, header: BatchHeader) -> ControlRecordType | None:
    """The marker's type; None for a control batch an earlier cleaning emptied. Raises
    CorruptRecordException for a control record that is no marker this broker knows (kept)."""
    if header.records_count == 0:
        return None
    return parse_control_batch(batch).control_type


def _is_last_record_of_producer(header: BatchHeader, last_records: dict[int, LastRecord]) -> bool:
    """The batch holding an active producer's last sequence, or its last marker when the
    epoch bump of that marker left it no data batch (Kafka's isBatchLastRecordOfProducer)."""
    last = last_records.get(header.producer_id)
    if last is None:
        return False
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset
    return header.is_control and header.producer_epoch == last.producer_epoch


def _filter_for_cleaning(
    batch: memoryview,
    header: BatchHeader,
    retain: RetainRecord,
    txns: CleanedTransactionMetadata,
    retain_deletes_and_markers: bool,
    last_records: dict[int, LastRecord],
) -> FilterResult:
    """Kafka's checkBatchRetention: DELETE, RETAIN_EMPTY or DELETE_EMPTY, then the records."""
    if header.is_control:
        try:
            control_type = _control_type(batch, header)
        except CorruptRecordException:
            discard = False  # not a marker this broker knows: kept as it is (Kafka's UNKNOWN)
        else:
            discard = txns.on_control_batch_read(header, control_type) and not retain_deletes_and_markers
    else:
        discard = txns.on_batch_read(header)
    if header.has_producer_id and _is_last_record_of_producer(header, last_records):
        if header.is_control:
            # Kafka would keep an emptied marker; the whole one (a few dozen bytes) keeps the
            # producer's epoch just as well and stays a marker every reader understands.
            return FilterResult(batch, header.records_count, header.records_count)
        return filter_batch(batch, header, _retain_none if discard else retain, True)
    if discard:
        return FilterResult(None, header.records_count, 0)
    return filter_batch(batch, header, retain, False)


def _retain_none(_offset: int, _key: bytes | None, _tombstone: bool, _ts: int) -> bool:
    return False


def _batch_records(batch: memoryview, header: BatchHeader) -> list[RawRecord]:
    section = batch[HEADER_SIZE:]
    if header.compression != CompressionType.NONE:
        section = memoryview(decompress(header.compression, section))
    return records_of(header, section)


def _date(ms: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(ms / 1000))
