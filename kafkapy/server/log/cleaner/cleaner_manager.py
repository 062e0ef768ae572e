"""LogCleanerManager: which log to clean next, who is cleaning what, and where cleaning got to.

Progress is Kafka's `cleaner-offset-checkpoint` in each log dir (the offset checkpoint
format: the first dirty offset of each compacted log). Each log being cleaned or paused has a
state, as in Kafka: in progress, aborted (an abort was asked while in progress: the cleaner
stops at its next check and the log becomes paused), or paused N times (truncation, deletion;
`resume_cleaning` undoes one pause).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.cleaner.cleaner import LogCleaningAbortedError, LogToClean
from kafkapy.server.log.log import Log
from kafkapy.server.log.offset_checkpoint import OffsetCheckpointFile

logger = logging.getLogger("kafkapy.log.LogCleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

IN_PROGRESS, ABORTED, PAUSED = "LogCleaningInProgress", "LogCleaningAborted", "LogCleaningPaused"


@dataclass(slots=True)
class _State:
    name: str
    pauses: int = 0


class LogCleanerManager:
    def __init__(
        self, log_dirs: list[str], logs: Callable[[], dict[TopicPartition, Log]], time_ms: Callable[[], int]
    ) -> None:
        self.log_dirs = log_dirs
        self._logs = logs
        self._time_ms = time_ms
        self._lock = threading.Condition()
        self._states: dict[TopicPartition, _State] = {}
        self.uncleanable: set[TopicPartition] = set()

    # -- checkpoints ----------------------------------------------------------------------------

    def _checkpoint(self, log_dir: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        offsets: dict[TopicPartition, int] = {}
        for log_dir in self.log_dirs:
            try:
                offsets.update(self._checkpoint(log_dir).read())
            except OSError as e:
                logger.warning(
                    "Failed to access checkpoint file %s in dir %s: %s", CLEANER_OFFSET_CHECKPOINT, log_dir, e
                )
        return offsets

    def update_checkpoint(self, log_dir: str, tp: TopicPartition, offset: int | None) -> None:
        """Set (or with None remove) one partition's entry, keeping only logs still in that dir."""
        with self._lock:
            checkpoint = self._checkpoint(log_dir)
            try:
                offsets = checkpoint.read()
            except OSError:
                offsets = {}
            live = self._logs()
            offsets = {
                p: o for p, o in offsets.items() if p in live and os.path.dirname(live[p].dir) == log_dir
            }
            if offset is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = offset
            checkpoint.write(offsets)

    def maybe_truncate_checkpoint(self, log: Log, tp: TopicPartition, offset: int) -> None:
        """After a truncation below the checkpoint, cleaning resumes from the new end."""
        log_dir = os.path.dirname(log.dir)
        with self._lock:
            current = self.all_cleaner_checkpoints().get(tp)
            if current is not None and current > offset:
                self.update_checkpoint(log_dir, tp, offset)

    # -- choosing -------------------------------------------------------------------------------

    def cleanable_offsets(self, log: Log, checkpoint: int | None, now: int) -> tuple[int, int, bool]:
        """(first dirty offset, first uncleanable offset, must be compacted now)."""
        start, end = log.log_start_offset, log.log_end_offset
        first_dirty = start if checkpoint is None else checkpoint
        if checkpoint is not None and not start <= checkpoint <= end:
            logger.warning(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed offset "
                "%d is invalid.", log.name, start, checkpoint,
            )  # fmt: skip
            first_dirty = start
        # Never past the last stable offset (what consumers may not see yet may still be
        # truncated, and an open transaction's outcome decides what of it stays) nor into the
        # active segment.
        uncleanable = log.cleanable_upper_bound()
        config = log.config
        dirty = log.segments_in_range(first_dirty, uncleanable)
        if config.min_compaction_lag_ms > 0:
            for segment in dirty:
                if segment.largest_timestamp > now - config.min_compaction_lag_ms:
                    uncleanable = min(uncleanable, max(segment.base_offset, first_dirty))
                    break
        need_now = False
        if config.max_compaction_lag_ms < (1 << 63) - 1 and dirty:
            first_ts = dirty[0].largest_timestamp
            need_now = first_ts >= 0 and now - first_ts > config.max_compaction_lag_ms
        return first_dirty, max(first_dirty, uncleanable), need_now

    def grab_filthiest_compacted_log(self) -> LogToClean | None:
        """The compacted log with the largest dirty ratio above its threshold, marked in progress."""
        now = self._time_ms()
        with self._lock:
            checkpoints = self.all_cleaner_checkpoints()
            candidates: list[LogToClean] = []
            for tp, log in self._logs().items():
                if "compact" not in log.config.cleanup_policy or tp in self._states or tp in self.uncleanable:
                    continue
                first_dirty, uncleanable, need_now = self.cleanable_offsets(log, checkpoints.get(tp), now)
                clean_bytes = sum(s.size for s in log.segments_in_range(log.log_start_offset, first_dirty))
                cleanable = sum(s.size for s in log.segments_in_range(first_dirty, uncleanable))
                if uncleanable <= first_dirty:
                    cleanable = 0
                candidates.append(LogToClean(log, first_dirty, uncleanable, clean_bytes, cleanable, need_now))
            # Kafka's rule: the ratio must exceed the threshold (or max.compaction.lag.ms passed).
            ready = [
                c for c in candidates
                if (c.need_compaction_now and c.cleanable_bytes > 0)
                or c.cleanable_ratio > c.log.config.min_cleanable_dirty_ratio
            ]  # fmt: skip
            if not ready:
                return None
            chosen = max(ready, key=lambda c: c.cleanable_ratio)
            self._states[_tp_of(chosen.log)] = _State(IN_PROGRESS)
            return chosen

    # -- states ---------------------------------------------------------------------------------

    def check_cleaning_aborted(self, log: Log) -> None:
        with self._lock:
            state = self._states.get(_tp_of(log))
            if state is not None and state.name == ABORTED:
                raise LogCleaningAbortedError(f"Cleaning of {log.name} was aborted")

    def done_cleaning(self, tp: TopicPartition, log_dir: str, end_offset: int | None) -> None:
        with self._lock:
            state = self._states.get(tp)
            if state is None:
                return
            if state.name == IN_PROGRESS:
                if end_offset is not None:
                    self.update_checkpoint(log_dir, tp, end_offset)
                del self._states[tp]
            elif state.name == ABORTED:
                self._states[tp] = _State(PAUSED, 1)
            self._lock.notify_all()

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        """Stop any cleaning of `tp` and keep it from starting until `resume_cleaning`;
        returns once no cleaner works on the log."""
        with self._lock:
            state = self._states.get(tp)
            if state is None:
                self._states[tp] = _State(PAUSED, 1)
            elif state.name == PAUSED:
                state.pauses += 1
            else:
                first = state.name == IN_PROGRESS
                state.name = ABORTED
                self._lock.notify_all()
                # The cleaner stops at its next check and done_cleaning pauses the log once:
                # that pause is the first aborter's, a second aborter adds its own.
                while (current := self._states.get(tp)) is not None and current.name != PAUSED:
                    self._lock.wait(0.5)
                if current is None:
                    self._states[tp] = _State(PAUSED, 1)
                elif not first:
                    current.pauses += 1
            logger.info("The cleaning for partition %s is aborted and paused", tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        with self._lock:
            state = self._states.get(tp)
            if state is None or state.name != PAUSED:
                return
            state.pauses -= 1
            if state.pauses <= 0:
                del self._states[tp]
            logger.info("Cleaning for partition %s is resumed", tp)

    def abort_cleaning(self, tp: TopicPartition, log_dir: str | None = None) -> None:
        """Topic deletion: abort, forget the checkpoint entry, leave the partition free."""
        self.abort_and_pause_cleaning(tp)
        self.resume_cleaning(tp)
        self.uncleanable.discard(tp)
        if log_dir is not None:
            self.update_checkpoint(log_dir, tp, None)

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """A failed log dir: its cleaner checkpoint is no longer read or written."""
        with self._lock:
            self.log_dirs = [d for d in self.log_dirs if d != log_dir]

    def mark_uncleanable(self, tp: TopicPartition) -> None:
        with self._lock:
            self.uncleanable.add(tp)


def _tp_of(log: Log) -> TopicPartition:
    return TopicPartition.from_dir_name(log.name)  # the dir name it was loaded with
