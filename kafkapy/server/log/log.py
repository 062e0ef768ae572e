"""Log: one partition's sequence of segments, the unit of append, read, flush, retention and truncation.

Segments sit in a SortedDict keyed by base offset (a read floors its start offset there). The
broker appends and reads from its event-loop thread; flushing and retention run on a
background thread. One lock guards the segment map and the offsets; fsync runs outside it so
that a slow disk never stalls appends. Which old segments retention deletes is decided by the
Log's RetentionPolicy (log_retention.py); the Log deletes them and moves its offsets.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kafkapy.common.config_def import LONG_MAX
from kafkapy.protocol.constants import NO_TIMESTAMP, UNDEFINED_EPOCH_OFFSET
from kafkapy.protocol.control_records import parse_control_batch
from kafkapy.protocol.errors import InvalidTimestampException, KafkaError, OffsetOutOfRangeException
from kafkapy.protocol.record_batch import set_base_offset, set_log_append_time, validate_records
from kafkapy.server.log.cleaner.record_filter import check_keys_for_compacted_topic
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.fetch_data_info import (
    FetchDataInfo,
    LogAppendInfo,
    LogOffsetMetadata,
    TimestampAndOffset,
)
from kafkapy.server.log.io_guard import check_for_log_dir_failure, io_failed, io_guarded
from kafkapy.server.log.leader_epoch_cache import OffsetAndEpoch, UnsyncedWrite
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_dir_failure_channel import LogDirFailureChannel
from kafkapy.server.log.log_loader import (
    load_leader_epoch_cache,
    load_log,
    min_snapshot_offset_to_retain,
    producer_batches_from,
)
from kafkapy.server.log.log_retention import RetentionPolicy, RetentionView, Rule
from kafkapy.server.log.log_segment import LogSegment, RollParams, segment_paths, txn_index_path
from kafkapy.server.log.producer_state import LastRecord, PreparedAppend, ProducerStateManager
from kafkapy.server.log.segment_swap import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    SegmentsChangedError,
    change_file_suffixes,
    delete_replaced,
)
from kafkapy.server.log.transaction_index import AbortedTxn
from kafkapy.server.metrics.process_metrics import LOG_FLUSH

if TYPE_CHECKING:
    from kafkapy.server.log.epoch_checkpoint_writer import EpochCheckpointWriter

logger = logging.getLogger("kafkapy.log.Log")

EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3  # ListOffsets' special targets

Scheduler = Callable[[Callable[[], None]], object]


class UnexpectedAppendOffsetException(KafkaError):
    """A follower's records start before the log end offset."""


class OffsetsOutOfOrderException(KafkaError):
    """A follower's records do not have increasing offsets."""


def system_time_ms() -> int:
    return time.time_ns() // 1_000_000


class Log:
    def __init__(
        self,
        dir_: str,
        config: LogConfig,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        *,
        had_clean_shutdown: bool = False,
        time_ms: Callable[[], int] = system_time_ms,
        scheduler: Scheduler | None = None,
        epoch_checkpoints: EpochCheckpointWriter | None = None,
    ) -> None:
        """Open (or create) the log in `dir_`, recovering it unless it was shut down cleanly.

        `scheduler` runs the flush of a rolled-out segment off the caller's thread (e.g. an
        executor's submit); without one that flush runs inline. `epoch_checkpoints` writes a
        changed leader-epoch checkpoint with others in a batch; without it, on the scheduler.
        """
        os.makedirs(dir_, exist_ok=True)
        self.dir = dir_
        self.name = os.path.basename(dir_)
        self.config = config
        self._time_ms = time_ms
        self._scheduler = scheduler
        self._epoch_checkpoints = epoch_checkpoints
        self._lock = threading.RLock()
        self._closed = False
        # Set by the LogManager: an I/O error in a guarded operation takes the dir offline.
        self.failure_channel: LogDirFailureChannel | None = None
        # Set by the LogManager when a cleaner runs: pauses (aborting) the cleaning of this log
        # around a truncation and moves its cleaner checkpoint back (Kafka's LogManager.truncateTo).
        self.cleaning_pause: Callable[[int], contextlib.AbstractContextManager[None]] | None = None
        # Lowest end offset truncated to since a log-dir move last looked (log_dir_mover.py).
        self.truncated_to: int | None = None
        self.retention = RetentionPolicy(time_ms)
        started = time_ms()
        loaded = load_log(
            dir_, config, recovery_point, log_start_offset, had_clean_shutdown, time_ms, self._roll_jitter
        )
        self._segments = loaded.segments
        self._next_offset = loaded.next_offset
        self.recovery_point = loaded.recovery_point
        self.log_start_offset = loaded.log_start_offset
        self._high_watermark = self.log_start_offset
        self._hw_position: tuple[int, int, int] | None = None  # (offset, segment base, position)
        self.last_flush_time = time_ms()
        self.producer_state = ProducerStateManager(self.name, dir_)
        if self._rebuild_producer_state() < self._next_offset:
            # As Kafka's load does: a crash before the next roll or close need not scan again.
            self.producer_state.take_snapshot(self._next_offset)
        unclean_recovery_point = None if had_clean_shutdown else loaded.recovery_point
        self.leader_epoch_cache = load_leader_epoch_cache(
            dir_, self._segments, self.log_start_offset, self._next_offset, unclean_recovery_point
        )
        logger.info(
            "[Log partition=%s, dir=%s] Loaded log with %d segments, log start offset %d and log end offset %d in %d ms",
            self.name, os.path.dirname(dir_), len(self._segments), self.log_start_offset, self._next_offset,
            time_ms() - started,
        )  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"Log(dir={self.dir}, logStartOffset={self.log_start_offset}, logEndOffset={self._next_offset})"
        )

    # -- offsets --------------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set by the replica manager; kept within [log start offset, log end offset]."""
        with self._lock:
            self._high_watermark = hw = min(max(offset, self.log_start_offset), self._next_offset)
            self.producer_state.on_high_watermark_updated(hw)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of a transaction still open or whose marker is not yet replicated."""
        return self.producer_state.first_unstable_offset

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read up to: min(first unstable offset, high watermark)."""
        hw = self._high_watermark
        if not self.producer_state.txns:
            return hw  # no transaction open or settling: every fetch of plain data stops here
        first_unstable = self.producer_state.first_unstable_offset
        return hw if first_unstable is None or first_unstable > hw else first_unstable

    def cleanable_upper_bound(self) -> int:
        """min(last stable offset, active segment base), read under the lock: the cleaner's
        threads ask while the loop appends (the open transactions' maps change then)."""
        with self._lock:
            return min(self.last_stable_offset, self.active_segment.base_offset)

    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self.recovery_point

    @property
    def active_segment(self) -> LogSegment:
        result: LogSegment = self._segments.peekitem(-1)[1]
        return result

    @property
    def log_segments(self) -> list[LogSegment]:
        with self._lock:
            return list(self._segments.values())

    @property
    def number_of_segments(self) -> int:
        return len(self._segments)

    @property
    def size(self) -> int:
        with self._lock:
            return sum(s.size for s in self._segments.values())

    def segments_in_range(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """The segments that may hold offsets in [from_offset, to_offset) (Kafka's logSegments)."""
        with self._lock:
            first = max(self._segments.bisect_right(from_offset) - 1, 0)
            last = self._segments.bisect_left(to_offset)
            return list(self._segments.values()[first:last])

    def last_records_of_active_producers(self) -> dict[int, LastRecord]:
        """producer id -> its last data batch's last offset (None when its last batch was
        dropped by an epoch bump) and its epoch: the cleaner keeps those batches (Kafka's
        lastRecordsOfActiveProducers), so the producer's sequence and epoch survive cleaning."""
        with self._lock:
            return {
                pid: LastRecord(e.last_offset if e.last_offset >= 0 else None, e.producer_epoch)
                for pid, e in self.producer_state.producers.items()
            }

    def replace_segments(self, new: LogSegment, old: list[LogSegment], expected_sizes: list[int]) -> None:
        """Swap the cleaned segment `new` (files ending `.cleaned`) in for `old`.

        Raises SegmentsChangedError, swapping nothing, when `old` is no longer what the
        cleaner read (a truncation or retention got there first). Only this takes the lock,
        not the rewrite before it.
        """
        with self._lock:
            if self._closed:
                raise SegmentsChangedError(f"Log {self.name} is closed")
            for segment, size in zip(old, expected_sizes, strict=True):
                if self._segments.get(segment.base_offset) is not segment or segment.size != size:
                    raise SegmentsChangedError(f"Segment {segment} of {self.name} changed during cleaning")
            change_file_suffixes(new, CLEANED_SUFFIX, SWAP_SUFFIX)
            for segment in old:
                del self._segments[segment.base_offset]
            self._segments[new.base_offset] = new
            self._hw_position = None
            delete_replaced(old)
            change_file_suffixes(new, SWAP_SUFFIX, "")

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config

    # -- append ---------------------------------------------------------------------------------

    def append_as_leader(
        self,
        records: memoryview | bytes | bytearray,
        leader_epoch: int = 0,
        *,
        from_coordinator: bool = False,
    ) -> LogAppendInfo:
        """Validate a producer's batches, assign offsets in place, write them.

        A writable buffer (the network receive buffer) is patched where it is; a read-only one
        is copied once first. A retried batch of an idempotent producer is not written again:
        the answer carries its original offsets and `duplicate=True`. `from_coordinator`: the
        transaction markers (control batches) a coordinator writes with WriteTxnMarkers.
        """
        # io_guarded, spelled out: this runs for every produced partition, and the decorator's
        # generic (*args, **kwargs) wrapper was measured at ~0.2 us per call.
        channel = self.failure_channel
        if channel is not None and channel.offline_dirs:
            check_for_log_dir_failure(self)
        try:
            buf = _byte_view(records)
            with self._lock:
                config = self.config
                batches = validate_records(buf, config.max_message_bytes, from_client=not from_coordinator)
                if not batches:
                    return self._empty_append_info()
                if "compact" in config.cleanup_policy:
                    check_keys_for_compacted_topic(buf, batches, self.name)
                idempotent = False
                for _, header in batches:
                    if header.producer_id >= 0:
                        idempotent = True
                        if (
                            not from_coordinator
                            and (dup := self.producer_state.find_duplicate(header)) is not None
                        ):
                            return LogAppendInfo(
                                dup.first_offset, dup.last_offset, dup.timestamp, dup.last_offset,
                                dup.timestamp if config.log_append_time else NO_TIMESTAMP,
                                self.log_start_offset, dup.last_offset - dup.first_offset + 1, 0, duplicate=True,
                            )  # fmt: skip
                now = self._time_ms()
                log_append_time = config.log_append_time
                if not log_append_time and config.message_timestamp_difference_max_ms < LONG_MAX:
                    self._check_timestamps(batches, now)
                if buf.readonly:
                    buf = memoryview(bytearray(buf))
                first_offset = offset = self._next_offset
                max_timestamp, offset_of_max_timestamp, num_messages = NO_TIMESTAMP, first_offset, 0
                assigned = []
                for position, header in batches:
                    set_base_offset(buf, position, offset, leader_epoch)
                    timestamp = header.max_timestamp
                    if log_append_time:
                        set_log_append_time(buf, position, header.size, now)
                        timestamp = now
                    last = offset + header.last_offset_delta
                    if timestamp > max_timestamp:
                        max_timestamp, offset_of_max_timestamp = timestamp, last
                    if idempotent:
                        marker = (
                            parse_control_batch(buf, position)
                            if from_coordinator and header.is_control
                            else None
                        )
                        assigned.append((header, offset, marker))
                    num_messages += header.records_count
                    offset = last + 1
                updates = (
                    self.producer_state.prepare(assigned, check_sequence=not from_coordinator)
                    if idempotent
                    else None
                )
                self._append(buf, first_offset, offset - 1, max_timestamp, offset_of_max_timestamp, now)
                if updates is not None:
                    self._commit_producer_state(updates)
                if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                    self.maybe_assign_epoch_start_offset(leader_epoch, first_offset)
                return LogAppendInfo(
                    first_offset, offset - 1, max_timestamp, offset_of_max_timestamp,
                    now if log_append_time else NO_TIMESTAMP, self.log_start_offset, num_messages, buf.nbytes,
                )  # fmt: skip
        except OSError as e:
            raise io_failed(self, "Error while appending records to {tp} in dir {dir}", e) from e

    @io_guarded("Error while appending records to {tp} in dir {dir}")
    def append_as_follower(self, records: memoryview | bytes | bytearray) -> LogAppendInfo:
        """Append a leader's batches with the leader's offsets, epochs and timestamps."""
        buf = _byte_view(records)
        with self._lock:
            batches = validate_records(buf, None, from_client=False)
            if not batches:
                return self._empty_append_info()
            first = batches[0][1].base_offset
            if first < self._next_offset:
                raise UnexpectedAppendOffsetException(
                    f"Unexpected offset in append to {self.name}. First offset {first} is less than the "
                    f"next offset {self._next_offset}."
                )
            max_timestamp, offset_of_max_timestamp, num_messages, expected = NO_TIMESTAMP, first, 0, first
            for _, header in batches:
                if header.base_offset < expected:
                    raise OffsetsOutOfOrderException(f"Out of order offsets found in append to {self.name}")
                if header.max_timestamp > max_timestamp:
                    max_timestamp, offset_of_max_timestamp = header.max_timestamp, header.last_offset
                num_messages += header.records_count
                expected = header.next_offset
            updates = self.producer_state.prepare(
                (
                    (h, h.base_offset, parse_control_batch(buf, p) if h.is_control else None)
                    for p, h in batches
                ),
                verify=False,
            )
            self._append(buf, first, expected - 1, max_timestamp, offset_of_max_timestamp)
            self._commit_producer_state(updates)
            # The leader's epochs come with its batches. Their checkpoint is written off the
            # replication round trip, like a new leader's (see `maybe_assign_epoch_start_offset`):
            # synced here, each follower's first batch of every epoch cost two fsyncs before its
            # next fetch, so an acks=all produce to a partition new to an epoch waited for them.
            cache, changed = self.leader_epoch_cache, False
            for _, h in batches:
                if h.partition_leader_epoch >= 0:
                    changed = cache.assign(h.partition_leader_epoch, h.base_offset) or changed
            if changed:
                self._checkpoint_epochs()
            return LogAppendInfo(
                first, expected - 1, max_timestamp, offset_of_max_timestamp, NO_TIMESTAMP,
                self.log_start_offset, num_messages, buf.nbytes,
            )  # fmt: skip

    def _commit_producer_state(self, prepared: PreparedAppend) -> None:
        """Apply an append's producer state, and index the transactions its ABORT markers end
        in the segment that holds each marker (the active one: it was just written there)."""
        state = self.producer_state
        state.commit(prepared)
        for txn in prepared.completed:
            if txn.is_aborted:
                self.active_segment.txn_index.append(state.aborted_txn_entry(txn))

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound_offset), from the `.txnindex`
        of the segment holding `start_offset` on (Kafka's collectAbortedTransactions)."""
        with self._lock:
            out: list[AbortedTxn] = []
            segments = self._segments.values()
            for segment in segments[max(self._segments.bisect_right(start_offset) - 1, 0) :]:
                if not len(segment.txn_index):
                    continue
                found = segment.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
                out.extend(found.aborted)
                if found.is_complete:
                    break
            return out

    def _append(
        self,
        buf: memoryview,
        first: int,
        last: int,
        max_ts: int,
        offset_of_max_ts: int,
        now: int | None = None,
    ) -> None:
        config = self.config
        now = self._time_ms() if now is None else now
        params = RollParams(config.segment_ms, config.segment_bytes, max_ts, last, buf.nbytes, now)
        segment = self._segments.peekitem(-1)[1]
        if segment.should_roll(params):
            segment = self.roll(first)
        segment.append(last, max_ts, offset_of_max_ts, buf)
        self._next_offset = last + 1
        if self.unflushed_messages >= config.flush_messages:
            self.flush()

    def _check_timestamps(self, batches: list[Any], now: int) -> None:
        limit = self.config.message_timestamp_difference_max_ms
        for _, header in batches:
            for ts in (header.base_timestamp, header.max_timestamp):
                if ts != NO_TIMESTAMP and abs(ts - now) > limit:
                    raise InvalidTimestampException(
                        f"Timestamp {ts} of message in {self.name} is out of range. The timestamp should be "
                        f"within [{now - limit}, {now + limit}]"
                    )

    def _empty_append_info(self) -> LogAppendInfo:
        return LogAppendInfo(-1, -1, NO_TIMESTAMP, -1, NO_TIMESTAMP, self.log_start_offset, 0, 0)

    # -- roll and flush -------------------------------------------------------------------------

    def _roll_jitter(self) -> int:
        jitter = min(self.config.segment_jitter_ms, self.config.segment_ms)
        return random.randrange(jitter) if jitter > 0 else 0

    @io_guarded("Error while rolling log segment for {tp} in dir {dir}")
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, log end offset)."""
        with self._lock:
            new_offset = max(expected_next_offset or 0, self._next_offset)
            active = self.active_segment
            if active.base_offset == new_offset and active.size == 0:
                return active  # rolling an empty segment into another empty one gains nothing
            for path in segment_paths(self.dir, new_offset):
                if os.path.exists(path):
                    logger.warning("Newly rolled segment file %s already exists; deleting it first", path)
                    os.unlink(path)
            active.on_become_inactive_segment()
            segment = LogSegment.open(self.dir, new_offset, self.config, self._time_ms, self._roll_jitter())
            self._segments[new_offset] = segment
            logger.info("[Log partition=%s] Rolled new log segment at offset %d", self.name, new_offset)
            # The state as of the end of the previous segment, so that a later load starts
            # its scan at a segment boundary; encoded now, written off the caller's thread.
            write_snapshot = self.producer_state.prepare_snapshot(new_offset)
            keep_snapshots_from = min_snapshot_offset_to_retain(self._segments, self.recovery_point)

        def after_roll() -> None:
            try:
                if write_snapshot is not None:
                    write_snapshot()
                self.producer_state.delete_snapshots_below(keep_snapshots_from)
            except OSError as e:
                raise io_failed(self, "Error while rolling log segment for {tp} in dir {dir}", e) from e
            self.flush(new_offset)

        if self._scheduler is not None:
            self._scheduler(after_roll)
        else:
            after_roll()
        return segment

    @io_guarded("Error while flushing log for {tp} in dir {dir}")
    def flush(self, up_to: int | None = None, *, syncer: Syncer = FSYNC_EACH) -> None:
        """fsync the segments holding offsets below `up_to` (default: all), then move the recovery point.

        With `DEFERRED` (LogManager.shutdown) nothing is synced yet the recovery point moves:
        the caller syncs the log dir before it checkpoints that recovery point.
        """
        with self._lock:
            offset = self._next_offset if up_to is None else min(up_to, self._next_offset)
            if offset <= self.recovery_point:
                return
            first = max(self._segments.bisect_right(self.recovery_point) - 1, 0)
            last = self._segments.bisect_left(offset)
            segments = list(self._segments.values()[first : max(last, first + 1)])
        # LogFlushStats: an fsync of the log, on an io thread (a deferred one is no sample).
        with LOG_FLUSH.time() if syncer is FSYNC_EACH else contextlib.nullcontext():
            if not self.leader_epoch_cache.is_empty():
                # The epochs of the offsets the recovery point passes must be durable first: a
                # recovery reads them from the checkpoint, not from those batches. Nothing is
                # written when the batched write already made them so.
                self.leader_epoch_cache.flush(syncer)
            for segment in segments:
                segment.flush(syncer)
        with self._lock:
            if offset > self.recovery_point:
                self.recovery_point = offset
                self.last_flush_time = self._time_ms()

    # -- read -----------------------------------------------------------------------------------

    @io_guarded("Error while reading records from {tp} in dir {dir}")
    def read(
        self, start_offset: int, max_length: int, max_offset: int | None = None, min_one_message: bool = True
    ) -> FetchDataInfo:
        """File regions from `start_offset`, at most `max_length` bytes, ending before `max_offset`.

        Continues into the next segment when a segment's data ran out before the budget (the
        regions then join on a batch boundary). Raises OffsetOutOfRangeException outside
        [log start offset, log end offset].
        """
        with self._lock:
            end = self._next_offset
            if start_offset == end:
                active = self.active_segment
                return FetchDataInfo(LogOffsetMetadata(end, active.base_offset, active.size))
            if start_offset > end or start_offset < self.log_start_offset:
                raise OffsetOutOfRangeException(
                    f"Received request for offset {start_offset} for partition {self.name}, but we only have "
                    f"log segments in the range {self.log_start_offset} to {end}."
                )
            limit = end if max_offset is None else min(max_offset, end)
            if start_offset >= limit:
                return FetchDataInfo(LogOffsetMetadata(start_offset))
            limit_base, limit_position = self._position_of(limit)
            keys = self._segments.keys()
            index = max(self._segments.bisect_right(start_offset) - 1, 0)
            regions, total, metadata, incomplete = [], 0, None, False
            remaining, min_one = max_length, min_one_message
            while index < len(keys) and keys[index] <= limit_base:
                segment: LogSegment = self._segments[keys[index]]
                max_position = limit_position if segment.base_offset == limit_base else segment.size
                info = segment.read(start_offset, remaining, max_position, min_one)
                index += 1
                if info is None:
                    continue
                if metadata is None:
                    metadata, incomplete = info.fetch_offset_metadata, info.first_entry_incomplete
                if not info.records:
                    break
                region = info.records[0]
                regions.append(region)
                total += region.length
                remaining -= region.length
                min_one = False
                if remaining <= 0 or region.position + region.length < max_position:
                    break
            if metadata is None:
                return FetchDataInfo(LogOffsetMetadata(end))
            return FetchDataInfo(metadata, regions, total, incomplete)

    def _position_of(self, offset: int) -> tuple[int, int]:
        """(segment base offset, byte position) where the batch holding `offset` starts."""
        if offset == self._next_offset:
            active = self.active_segment
            return active.base_offset, active.size
        cached = self._hw_position
        if cached is not None and cached[0] == offset:
            return cached[1], cached[2]
        segment: LogSegment = self._segments.peekitem(max(self._segments.bisect_right(offset) - 1, 0))[1]
        found = segment.translate_offset(offset)
        position = segment.size if found is None else found.position
        self._hw_position = (offset, segment.base_offset, position)
        return segment.base_offset, position

    def _remove_segments(self, segments: list[LogSegment]) -> None:
        for segment in segments:
            del self._segments[segment.base_offset]
            segment.delete()
        self._hw_position = None

    def _rebuild_producer_state(self) -> int:
        """From the newest snapshot at or below the log end offset, scanning only the batches after it;
        returns the offset the scan started at."""
        segments = self._segments
        rebuild_txn_index = any(s.txn_index.needs_rebuild for s in segments.values())
        scan_from = self.producer_state.truncate_and_reload(
            self.log_start_offset,
            self._next_offset,
            lambda offset: producer_batches_from(segments, offset),
            use_snapshots=not rebuild_txn_index,
        )
        # Markers met by the replay whose `.txnindex` entry was lost (crash, corrupt file).
        for txn in self.producer_state.replayed_aborted:
            segment = segments.peekitem(max(segments.bisect_right(txn.last_offset) - 1, 0))[1]
            segment.txn_index.append_if_new(txn)
        if rebuild_txn_index:
            for segment in segments.values():
                segment.txn_index.needs_rebuild = False
        return scan_from

    def remove_expired_producers(self, expiration_ms: int) -> int:
        """producer.id.expiration.ms: forget producers whose last batch is that old."""
        with self._lock:
            return self.producer_state.remove_expired_producers(self._time_ms(), expiration_ms)

    # -- retention ------------------------------------------------------------------------------

    @io_guarded("Error while deleting segments for {tp} in dir {dir}")
    def delete_old_segments(self) -> int:
        """Apply retention; returns the number of segments deleted."""
        return sum(self._delete_old(rule) for rule in self.retention.rules(self.config))

    @io_guarded("Exception while increasing log start offset for {tp} in dir {dir}")
    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Move the log start offset forward (DeleteRecords); never past the high watermark."""
        with self._lock:
            if new_log_start_offset > self._high_watermark:
                raise OffsetOutOfRangeException(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition {self.name} "
                    f"since it is larger than the high watermark {self._high_watermark}"
                )
            if new_log_start_offset <= self.log_start_offset:
                return False
            logger.info(
                "[Log partition=%s] Incremented log start offset to %d", self.name, new_log_start_offset
            )
            self.log_start_offset = new_log_start_offset
            self.producer_state.truncate_head(new_log_start_offset)
            if self.leader_epoch_cache.truncate_from_start(new_log_start_offset):
                self.leader_epoch_cache.flush()
            return True

    def _delete_old(self, rule: Rule) -> int:
        with self._lock:
            view = RetentionView(
                list(self._segments.values()), self._high_watermark, self._next_offset, self.log_start_offset
            )
            deletion = rule(view)
            if deletion is None:
                return 0
            deletable = deletion.segments
            if len(deletable) == len(self._segments):
                self.roll()
            logger.info(
                "[Log partition=%s] Deleting segments due to %s: %s",
                self.name,
                deletion.reason,
                ",".join(map(repr, deletable)),
            )
            self._remove_segments(deletable)
            first_base = self._segments.peekitem(0)[0]
            if first_base > self.log_start_offset:
                self.log_start_offset = first_base
                self._high_watermark = max(self._high_watermark, first_base)
            self.producer_state.truncate_head(self.log_start_offset)
            if self.leader_epoch_cache.truncate_from_start(self.log_start_offset):
                self.leader_epoch_cache.flush()
            return len(deletable)

    # -- truncation -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _cleaning_paused(self, offset: int) -> Iterator[None]:
        if self.cleaning_pause is None:
            yield
        else:
            with self.cleaning_pause(offset):
                yield

    @io_guarded("Error while truncating log for {tp} in dir {dir}")
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything from `target_offset` on (follower truncation); False if nothing changed.
        A truncation below the active segment pauses and aborts the cleaning of this log first
        (`cleaning_pause`), as Kafka's LogManager.truncateTo: the cleaner only works on the
        segments before the active one, so a truncation within it (a follower's usual one, often
        to its own end) leaves the cleaner and its checkpoint alone. At a leadership change of
        thousands of partitions each follower truncates each of them, and a pause cost two log
        lines and a read of the cleaner checkpoint file apiece."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.name} to a negative offset ({target_offset}).")
        if target_offset >= self.active_segment.base_offset:
            with self._lock:
                # Checked again under the lock: a roll meanwhile may have put the target below
                # the active segment, and the pause must be taken before the lock (it waits for
                # a cleaner that may need the lock).
                if target_offset >= self.active_segment.base_offset:
                    return self._truncate_locked(target_offset)
        with self._cleaning_paused(target_offset), self._lock:
            return self._truncate_locked(target_offset)

    def _truncate_locked(self, target_offset: int) -> bool:
        """The truncation itself; the caller holds the log lock (and the cleaning pause the
        target needs)."""
        if target_offset >= self._next_offset:
            logger.info(
                "[Log partition=%s] Truncating to %d has no effect as the largest offset in the log is %d",
                self.name, target_offset, self._next_offset - 1,
            )  # fmt: skip
            return False
        logger.info("[Log partition=%s] Truncating to offset %d", self.name, target_offset)
        if self._segments.peekitem(0)[0] > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        doomed = [s for s in self._segments.values() if s.base_offset > target_offset]
        self._remove_segments(doomed)
        self.active_segment.truncate_to(target_offset)
        self._next_offset = target_offset
        self.log_start_offset = min(self.log_start_offset, target_offset)
        self._after_truncation()
        self._rebuild_producer_state()
        if self.leader_epoch_cache.truncate_from_end(target_offset):
            self.leader_epoch_cache.flush()
        return True

    @io_guarded("Error while truncating the entire log for {tp} in dir {dir}")
    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start an empty log at `new_offset`."""
        with self._cleaning_paused(new_offset), self._lock:
            logger.info("[Log partition=%s] Truncate and start at offset %d", self.name, new_offset)
            self._remove_segments(list(self._segments.values()))
            for path in segment_paths(self.dir, new_offset):
                if os.path.exists(path):
                    os.unlink(path)
            self._segments[new_offset] = LogSegment.open(
                self.dir, new_offset, self.config, self._time_ms, self._roll_jitter()
            )
            self._next_offset = self.log_start_offset = new_offset
            self._after_truncation()
            self.producer_state.truncate()
            if self.leader_epoch_cache.clear():
                self.leader_epoch_cache.flush()

    def _after_truncation(self) -> None:
        self._hw_position = None
        # log_dir_mover cuts the future log at the lowest of these before copying on.
        marker = self.truncated_to
        self.truncated_to = self._next_offset if marker is None else min(marker, self._next_offset)
        self.recovery_point = min(self.recovery_point, self._next_offset)
        self._high_watermark = min(max(self._high_watermark, self.log_start_offset), self._next_offset)

    # -- leader epochs (KIP-101) ----------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A leader's new epoch begins at `start_offset` (its log end offset when elected).

        Runs on the event loop, so the checkpoint file is written on the io threads, in a batch
        with the others a LeaderAndIsr changed (epoch_checkpoint_writer.py); until it is synced,
        an unclean restart rebuilds the entries of the batches written since the recovery point,
        which `flush` does not move past an epoch before its checkpoint is durable.
        """
        with self._lock:
            changed = self.leader_epoch_cache.assign(leader_epoch, start_offset)
        if changed:
            self._checkpoint_epochs()

    def _checkpoint_epochs(self) -> None:
        """The epochs changed: their checkpoint goes out with the writer's next batch (without a
        writer, on the scheduler; without one, now)."""
        if self._epoch_checkpoints is not None:
            self._epoch_checkpoints.request(self)
        else:
            self._schedule(self.leader_epoch_cache.flush)

    def write_epoch_checkpoint_unsynced(self) -> UnsyncedWrite | None:
        """The leader-epoch checkpoint written without a sync, for EpochCheckpointWriter; None
        when it is durable already or the log is closed (its close wrote it)."""
        with self._lock:
            if self._closed:
                return None
            return self.leader_epoch_cache.write_unsynced()

    def end_offset_for_epoch(self, leader_epoch: int) -> OffsetAndEpoch | None:
        """OffsetsForLeaderEpoch: the end offset of `leader_epoch` here and the epoch that
        answer belongs to; None when this log cannot place the epoch."""
        with self._lock:
            found = self.leader_epoch_cache.end_offset_for(leader_epoch, self._next_offset)
        return None if found.offset == UNDEFINED_EPOCH_OFFSET else found

    def _schedule(self, task: Callable[[], None]) -> None:
        if self._scheduler is not None:
            self._scheduler(task)
        else:
            task()

    # -- timestamps -----------------------------------------------------------------------------

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first offset whose timestamp is >= target, or a special target's answer.

        -2 (earliest) gives the log start offset, -1 (latest) the log end offset, -3 (max
        timestamp) the offset of the largest timestamp; None when no record is that late.
        Each answer names the leader epoch its offset was written in, when known (KIP-320).
        """
        with self._lock:
            cache = self.leader_epoch_cache
            if target_timestamp == EARLIEST_TIMESTAMP:
                start = self.log_start_offset
                return TimestampAndOffset(NO_TIMESTAMP, start, cache.epoch_for_offset(start))
            if target_timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(NO_TIMESTAMP, self._next_offset, cache.latest_epoch)
            segments = list(self._segments.values())
            if target_timestamp == MAX_TIMESTAMP:
                best = max(segments, key=lambda s: s.max_timestamp_so_far)
                if best.max_timestamp_so_far < 0:
                    return TimestampAndOffset(NO_TIMESTAMP, -1)
                offset = best.offset_of_max_timestamp_so_far
                return TimestampAndOffset(best.max_timestamp_so_far, offset, cache.epoch_for_offset(offset))
            for segment in segments:
                if segment.largest_timestamp >= target_timestamp:
                    result: TimestampAndOffset | None = segment.find_offset_by_timestamp(
                        target_timestamp, self.log_start_offset
                    )
                    return result
            return None

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self, *, syncer: Syncer = FSYNC_EACH) -> None:
        """Write what the next start reads instead of scanning (the epoch checkpoint, a producer
        snapshot at the log end) and close the files; `DEFERRED` as for `flush`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self.leader_epoch_cache.is_empty():
                self.leader_epoch_cache.flush(syncer)  # a write the scheduler had not run yet
            job = self._end_snapshot_job(syncer)
            if job is not None:
                job()  # the next start scans nothing
            for segment in self._segments.values():
                segment.close()

    def write_end_snapshot_early(self, *, syncer: Syncer = FSYNC_EACH) -> None:
        """Write now the producer snapshot `close` would write at the log end (a stopping broker
        does, while the controller moves its leadership away): the close then finds it there and
        writes nothing, unless the log moved on meanwhile."""
        with self._lock:
            job = None if self._closed else self._end_snapshot_job(syncer)
        if job is not None:
            job()

    def _end_snapshot_job(self, syncer: Syncer) -> Callable[[], None] | None:
        """The write of the producer snapshot at the log end, under the log's lock; None when one
        is there already, or for an empty log without producers, which has nothing to keep (like
        Kafka's: no snapshot, instead of 10k files written at shutdown)."""
        if self._next_offset > self.log_start_offset or self.producer_state.producers:
            return self.producer_state.prepare_snapshot(self._next_offset, syncer)
        return None

    def close_handlers(self) -> None:
        """Close the files without writing anything (Kafka's closeHandlers): the log's dir
        failed, so no snapshot or index trim may be attempted there."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for segment in self._segments.values():
                segment.close_handlers()

    def rename_dir(self, new_dir: str) -> None:
        """Move the log's directory (topic deletion renames before deleting), keeping files open."""
        with self._lock:
            os.rename(self.dir, new_dir)
            self.dir = new_dir
            self.producer_state.update_dir(new_dir)
            checkpoint = self.leader_epoch_cache.checkpoint
            checkpoint.path = os.path.join(new_dir, os.path.basename(checkpoint.path))
            for segment in self._segments.values():
                log_path, index_path, time_index_path = segment_paths(new_dir, segment.base_offset)
                segment.log.path, segment.offset_index.path, segment.time_index.path = (
                    log_path, index_path, time_index_path,
                )  # fmt: skip
                segment.txn_index.rename_to(txn_index_path(new_dir, segment.base_offset))

    def delete(self) -> None:
        """Delete every segment and the directory."""
        with self._lock:
            self._remove_segments(list(self._segments.values()))
            shutil.rmtree(self.dir, ignore_errors=True)


def _byte_view(records: memoryview | bytes | bytearray) -> memoryview:
    view = records if type(records) is memoryview else memoryview(records)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")
