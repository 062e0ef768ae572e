"""LogSegment: one `<base offset>.log` file with its `.index` and `.timeindex`.

Files are named by the segment's base offset, zero-padded to 20 digits, so a directory
listing sorts them in offset order. The segment indexes every `index.interval.bytes` of
appended data, translates offsets to positions (index lookup, then a short header scan),
and recovers itself after an unclean shutdown by re-reading and CRC-checking its batches.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import NamedTuple

from kafkapy.protocol.constants import NO_TIMESTAMP
from kafkapy.protocol.errors import CorruptRecordException, InvalidRecordException, KafkaError
from kafkapy.protocol.record_batch import HEADER_SIZE, INT32_MAX, checked_batch_size, compute_crc, read_header
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.fetch_data_info import FetchDataInfo, LogOffsetMetadata, TimestampAndOffset
from kafkapy.server.log.file_records import FileRecords, LogOffsetPosition
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.offset_index import OffsetIndex
from kafkapy.server.log.time_index import TimeIndex
from kafkapy.server.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

logger = logging.getLogger("kafkapy.log.LogSegment")

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"
DELETED_SUFFIX = ".deleted"


def filename_prefix(offset: int) -> str:
    return f"{offset:020d}"


def segment_paths(dir_: str, base_offset: int) -> tuple[str, str, str]:
    prefix = os.path.join(dir_, filename_prefix(base_offset))
    return prefix + LOG_SUFFIX, prefix + INDEX_SUFFIX, prefix + TIME_INDEX_SUFFIX


def txn_index_path(dir_: str, base_offset: int) -> str:
    return os.path.join(dir_, filename_prefix(base_offset) + TXN_INDEX_SUFFIX)


class LogSegmentOffsetOverflowException(KafkaError):
    """An offset does not fit the segment's 4-byte relative offsets: the log must roll first."""


class RollParams(NamedTuple):
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class LogSegment:
    def __init__(
        self,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        time_ms: Callable[[], int],
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self.log = log
        # The aborted transactions whose markers this segment holds (file created lazily).
        # (`is None`, not `or`: an empty index is falsy, having a length.)
        self.txn_index = (
            txn_index
            if txn_index is not None
            else TransactionIndex(os.path.splitext(log.path)[0] + TXN_INDEX_SUFFIX, base_offset)
        )
        self.offset_index = offset_index
        self.time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._time_ms = time_ms
        self.created = time_ms()
        self._bytes_since_last_index_entry = 0
        # First batch's max timestamp: segment.ms counts from it (None: not loaded yet).
        self._rolling_based_timestamp: int | None = None
        # Read from the time index's last entry on first use (Kafka's lazy maxTimestampSoFar):
        # opening a segment must not map its time index.
        self._max_timestamp: int | None = None
        self._offset_of_max_timestamp = base_offset

    def _load_max_timestamp(self) -> int:
        last = self.time_index.last_entry
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        return last.timestamp

    @property
    def max_timestamp_so_far(self) -> int:
        ts = self._max_timestamp
        return self._load_max_timestamp() if ts is None else ts

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: int) -> None:
        self._max_timestamp = value

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        if self._max_timestamp is None:
            self._load_max_timestamp()
        return self._offset_of_max_timestamp

    @offset_of_max_timestamp_so_far.setter
    def offset_of_max_timestamp_so_far(self, value: int) -> None:
        if self._max_timestamp is None:
            self._load_max_timestamp()  # the pair stays consistent: the timestamp is set next
        self._offset_of_max_timestamp = value

    @classmethod
    def open(
        cls,
        dir_: str,
        base_offset: int,
        config: LogConfig,
        time_ms: Callable[[], int],
        roll_jitter_ms: int = 0,
    ) -> LogSegment:
        log_path, index_path, time_index_path = segment_paths(dir_, base_offset)
        return cls(
            FileRecords(log_path),
            OffsetIndex(index_path, base_offset, config.segment_index_bytes),
            TimeIndex(time_index_path, base_offset, config.segment_index_bytes),
            base_offset,
            config.index_interval_bytes,
            roll_jitter_ms,
            time_ms,
        )

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size})"

    @property
    def size(self) -> int:
        return self.log.size

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise LogSegmentOffsetOverflowException(
                f"Detected offset overflow at offset {offset} in segment {self}"
            )

    # -- append and read ------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        records: memoryview,
    ) -> None:
        """Write validated batches whose offsets are already assigned; index if an interval passed."""
        size = records.nbytes
        if size == 0:
            return
        position = self.log.size
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        self._ensure_offset_in_range(largest_offset)
        self.log.append(records)
        max_timestamp = self._max_timestamp  # (the fields, not the lazy properties: hot path)
        if max_timestamp is None:
            max_timestamp = self._load_max_timestamp()
        if largest_timestamp > max_timestamp:
            max_timestamp = self._max_timestamp = largest_timestamp
            self._offset_of_max_timestamp = shallow_offset_of_max_timestamp
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """Position and size of the first batch holding an offset >= `offset`, if any."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(offset, max(mapping.position, starting_position))

    def read(
        self, start_offset: int, max_size: int, max_position: int | None = None, min_one_message: bool = False
    ) -> FetchDataInfo | None:
        """Up to `max_size` bytes from the batch holding `start_offset`, not past `max_position`.

        None when the segment has no batch at or after `start_offset`. With `min_one_message`
        the first batch is returned whole even when it is larger than `max_size`.
        """
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log.path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, found.position)
        adjusted_max_size = max(max_size, found.size) if min_one_message else max_size
        limit = self.size if max_position is None else max_position
        fetch_size = min(limit - found.position, adjusted_max_size)
        if fetch_size <= 0:
            return FetchDataInfo(metadata, [], 0)
        region = self.log.slice(found.position, fetch_size)
        return FetchDataInfo(metadata, [region], region.length, adjusted_max_size < found.size)

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset for an empty segment)."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        next_offset = self.base_offset
        for _, header in self.log.batches_from(start):
            next_offset = header.next_offset
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> TimestampAndOffset | None:
        indexed = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    # -- rolling --------------------------------------------------------------------------------

    def should_roll(self, p: RollParams) -> bool:
        size = self.log.size
        reached_roll_ms = self._time_waited_for_roll(p.now, p.max_timestamp_in_messages) > (
            p.max_segment_ms - self.roll_jitter_ms
        )
        return (
            size > p.max_segment_bytes - p.messages_size
            or (size > 0 and reached_roll_ms)
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.can_convert_to_relative_offset(p.max_offset_in_messages)
        )

    def _time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        if self._rolling_based_timestamp is None:
            for _, header in self.log.batches_from(0):
                self._rolling_based_timestamp = header.max_timestamp
                break
        if self._rolling_based_timestamp is not None and self._rolling_based_timestamp >= 0:
            return message_timestamp - self._rolling_based_timestamp
        return now - self.created

    def on_become_inactive_segment(self) -> None:
        """The segment stops taking appends: index its last timestamp and trim the index files."""
        self._index_max_timestamp()
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def _index_max_timestamp(self, closing: bool = False) -> None:
        """Write the largest timestamp as the time index's final entry (a segment that never
        loaded it has had no appends since it was opened: the index holds it already)."""
        if self._max_timestamp is not None and self._max_timestamp >= 0:
            self.time_index.maybe_append(
                self._max_timestamp,
                self._offset_of_max_timestamp,
                skip_full_check=True,
                write_through=closing,
            )

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # -- recovery and truncation ----------------------------------------------------------------

    def recover(self) -> int:
        """Rebuild both indexes from the batches, and cut the file at the first bad batch.

        A batch is bad when its header is implausible, it is torn (runs past the end of the
        file), its CRC does not match, or its offsets go backwards. Returns bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = NO_TIMESTAMP, self.base_offset
        valid_bytes = last_index_entry = 0
        next_offset = self.base_offset
        try:
            with self.log.mapped() as view:
                end = len(view)
                while end - valid_bytes >= HEADER_SIZE:
                    header = read_header(view, valid_bytes)
                    size = checked_batch_size(header)
                    if valid_bytes + size > end:
                        break
                    if compute_crc(view, valid_bytes, size) != header.crc:
                        raise CorruptRecordException(
                            f"Record is corrupt (stored crc = {header.crc}) at position {valid_bytes}"
                        )
                    if header.base_offset < next_offset or not self.can_convert_to_relative_offset(
                        header.last_offset
                    ):
                        raise InvalidRecordException(
                            f"Batch at position {valid_bytes} has offsets [{header.base_offset}, "
                            f"{header.last_offset}] out of order after offset {next_offset - 1}"
                        )
                    if header.max_timestamp > self.max_timestamp_so_far:
                        self.max_timestamp_so_far = header.max_timestamp
                        self.offset_of_max_timestamp_so_far = header.last_offset
                    if valid_bytes - last_index_entry > self.index_interval_bytes:
                        self.offset_index.append(header.last_offset, valid_bytes)
                        self.time_index.maybe_append(
                            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
                        )
                        last_index_entry = valid_bytes
                    next_offset = header.next_offset
                    valid_bytes += size
        except KafkaError as e:
            logger.warning(
                "Found invalid messages in log segment %s at byte offset %d: %s.",
                self.log.path,
                valid_bytes,
                e.message,
            )
        truncated = self.log.truncate_to(valid_bytes)
        # Entries for markers cut off go; the log's producer-state replay re-adds lost ones.
        self.txn_index.truncate_to(next_offset)
        self.offset_index.trim_to_valid_size()
        self._index_max_timestamp()
        self.time_index.trim_to_valid_size()
        self._bytes_since_last_index_entry = valid_bytes - last_index_entry
        self._rolling_based_timestamp = None
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding `offset` and everything after it; returns bytes dropped."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        # The segment becomes (or stays) the active one: give its indexes room again.
        self.resize_indexes(self.offset_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self._time_ms()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self._load_largest_timestamp()
        return truncated

    def _load_largest_timestamp(self) -> None:
        last = self.time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = last.timestamp, last.offset
        start = self.offset_index.lookup(last.offset).position
        for _, header in self.log.batches_from(start):
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset

    # -- retention and lifecycle ----------------------------------------------------------------

    @property
    def last_modified(self) -> int:
        return self.log.last_modified_ms()

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares: the largest record timestamp, else the file's mtime."""
        return self.max_timestamp_so_far if self.max_timestamp_so_far >= 0 else self.last_modified

    def sanity_check(self) -> None:
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def flush(self, syncer: Syncer = FSYNC_EACH) -> None:
        self.log.flush(syncer)
        self.offset_index.flush(syncer)
        self.time_index.flush(syncer)
        self.txn_index.flush(syncer)

    def close(self) -> None:
        self._index_max_timestamp(closing=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Release the files without writing to them (Kafka's closeHandlers): the dir failed,
        or was renamed away to be removed."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        for f in (self.txn_index, self.log):
            try:
                f.close()
            except (OSError, ValueError):
                pass  # the disk is gone: the descriptor is released either way

    def delete(self) -> None:
        """Remove the files now; the .log descriptor lives on for fetches already holding it."""
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log.delete()
