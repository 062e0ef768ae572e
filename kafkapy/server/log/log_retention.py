"""How data leaves a Log: retention (old segments) and truncation (a diverged tail).

Retention follows Kafka's rules: segments go oldest first and stop at the first one that must stay; a segment
goes only when the high watermark has passed all of it (consumers may still need the rest);
the last segment goes only if it has data, and then a new empty one is rolled first, because
a log always has an active segment. cleanup.policy=compact logs keep their segments except
for those wholly below the log start offset (DeleteRecords); the log cleaner (log/cleaner/) compacts
them. A truncation pauses and aborts the cleaning of its log first (`cleaning_pause`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator

from sortedcontainers import SortedDict

from kafkapy.protocol.errors import OffsetOutOfRangeException
from kafkapy.server.log.leader_epoch_cache import LeaderEpochFileCache
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_segment import LogSegment, segment_paths
from kafkapy.server.log.producer_state import ProducerStateManager

logger = logging.getLogger("kafkapy.log.Log")

Predicate = Callable[[LogSegment, "LogSegment | None"], bool]


class RetentionAndTruncation:
    # Provided by Log.
    name: str
    config: LogConfig
    log_start_offset: int
    producer_state: ProducerStateManager
    leader_epoch_cache: LeaderEpochFileCache
    _lock: threading.RLock
    _segments: SortedDict
    _high_watermark: int
    _next_offset: int
    _time_ms: Callable[[], int]
    truncated_to: int | None

    dir: str
    recovery_point: int
    _hw_position: tuple[int, int, int] | None
    # Set by the LogManager when a cleaner runs: pauses (aborting) the cleaning of this log
    # around a truncation and moves its cleaner checkpoint back (Kafka's LogManager.truncateTo).
    cleaning_pause: Callable[[int], contextlib.AbstractContextManager[None]] | None

    @property
    def active_segment(self) -> LogSegment:
        raise NotImplementedError

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        raise NotImplementedError

    def _roll_jitter(self) -> int:
        raise NotImplementedError

    def _rebuild_producer_state(self) -> int:
        raise NotImplementedError

    def _remove_segments(self, segments: list[LogSegment]) -> None:
        raise NotImplementedError

    def delete_old_segments(self) -> int:
        """Apply retention; returns the number of segments deleted."""
        if self.config.delete:
            return (
                self._delete_retention_ms_breached()
                + self._delete_retention_size_breached()
                + self._delete_log_start_offset_breached()
            )
        return self._delete_log_start_offset_breached()

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

    def _delete_retention_ms_breached(self) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        now = self._time_ms()

        def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
            return now - segment.largest_timestamp > retention_ms

        return self._delete_old(breached, f"retention time {retention_ms}ms breach")

    def _delete_retention_size_breached(self) -> int:
        retention_bytes = self.config.retention_bytes
        with self._lock:
            size = sum(s.size for s in self._segments.values())
        if retention_bytes < 0 or size < retention_bytes:
            return 0
        excess = size - retention_bytes

        def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return self._delete_old(breached, f"retention size {retention_bytes} breach")

    def _delete_log_start_offset_breached(self) -> int:
        def breached(_segment: LogSegment, next_segment: LogSegment | None) -> bool:
            return next_segment is not None and next_segment.base_offset <= self.log_start_offset

        return self._delete_old(breached, f"log start offset {self.log_start_offset} breach")

    def _delete_old(self, predicate: Predicate, reason: str) -> int:
        with self._lock:
            deletable = self._deletable_segments(predicate)
            if not deletable:
                return 0
            if len(deletable) == len(self._segments):
                self.roll()
            logger.info(
                "[Log partition=%s] Deleting segments due to %s: %s",
                self.name,
                reason,
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

    def _deletable_segments(self, predicate: Predicate) -> list[LogSegment]:
        segments: list[LogSegment] = list(self._segments.values())
        deletable: list[LogSegment] = []
        for i, segment in enumerate(segments):
            next_segment = segments[i + 1] if i + 1 < len(segments) else None
            upper = next_segment.base_offset if next_segment else self._next_offset
            is_last_and_empty = next_segment is None and segment.size == 0
            if self._high_watermark >= upper and not is_last_and_empty and predicate(segment, next_segment):
                deletable.append(segment)
            else:
                break
        return deletable

    # -- truncation -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _cleaning_paused(self, offset: int) -> Iterator[None]:
        if self.cleaning_pause is None:
            yield
        else:
            with self.cleaning_pause(offset):
                yield

    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything from `target_offset` on (follower truncation); False if nothing changed."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.name} to a negative offset ({target_offset}).")
        with self._cleaning_paused(target_offset), self._lock:
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
        # Lowest end offset truncated to since a log-dir move last looked (log_dir_mover cuts
        # the future log there before copying on).
        marker = self.truncated_to
        self.truncated_to = self._next_offset if marker is None else min(marker, self._next_offset)
        self.recovery_point = min(self.recovery_point, self._next_offset)
        self._high_watermark = min(max(self._high_watermark, self.log_start_offset), self._next_offset)
