"""RetentionPolicy: which old segments of a Log may be deleted, and why (Kafka's
deleteRetentionMsBreachedSegments, deleteRetentionSizeBreachedSegments and
deleteLogStartOffsetBreachedSegments).

The rules: segments go oldest first and stop at the first one that must stay; a segment goes
only when the high watermark has passed all of it (consumers may still need the rest); the last
segment goes only if it has data (the Log then rolls a new empty one first, because a log always
has an active segment). cleanup.policy=compact logs keep their segments except for those wholly
below the log start offset (DeleteRecords); the log cleaner (log/cleaner/) compacts them.

The policy only decides, from a snapshot the Log takes under its lock; the Log deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_segment import LogSegment

# (segment, the segment after it or None for the last) -> whether the rule wants it gone
Predicate = Callable[[LogSegment, "LogSegment | None"], bool]


@dataclass(frozen=True, slots=True)
class RetentionView:
    """What the rules look at, taken under the Log's lock."""

    segments: Sequence[LogSegment]  # oldest first
    high_watermark: int
    next_offset: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class Deletion:
    segments: list[LogSegment]
    reason: str  # worded as Kafka's "Deleting segments due to ..." line


# One retention rule: the segments it would delete now, or None.
Rule = Callable[[RetentionView], "Deletion | None"]


class RetentionPolicy:
    def __init__(self, time_ms: Callable[[], int]) -> None:
        self._time_ms = time_ms

    def rules(self, config: LogConfig) -> tuple[Rule, ...]:
        """The rules to apply, in Kafka's order; each sees the log as the previous one left it."""
        if config.delete:
            return (
                lambda view: self.retention_ms_breached(config, view),
                lambda view: self.retention_size_breached(config, view),
                self.log_start_offset_breached,
            )
        return (self.log_start_offset_breached,)

    def retention_ms_breached(self, config: LogConfig, view: RetentionView) -> Deletion | None:
        retention_ms = config.retention_ms
        if retention_ms < 0:
            return None
        now = self._time_ms()

        def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
            return now - segment.largest_timestamp > retention_ms

        return _deletion(view, breached, f"retention time {retention_ms}ms breach")

    def retention_size_breached(self, config: LogConfig, view: RetentionView) -> Deletion | None:
        retention_bytes = config.retention_bytes
        size = sum(s.size for s in view.segments)
        if retention_bytes < 0 or size < retention_bytes:
            return None
        excess = size - retention_bytes

        def breached(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return _deletion(view, breached, f"retention size {retention_bytes} breach")

    def log_start_offset_breached(self, view: RetentionView) -> Deletion | None:
        def breached(_segment: LogSegment, next_segment: LogSegment | None) -> bool:
            return next_segment is not None and next_segment.base_offset <= view.log_start_offset

        return _deletion(view, breached, f"log start offset {view.log_start_offset} breach")


def deletable_segments(view: RetentionView, predicate: Predicate) -> list[LogSegment]:
    """The oldest segments the predicate wants gone, stopping at the first one that must stay."""
    segments = view.segments
    deletable: list[LogSegment] = []
    for i, segment in enumerate(segments):
        next_segment = segments[i + 1] if i + 1 < len(segments) else None
        upper = next_segment.base_offset if next_segment else view.next_offset
        is_last_and_empty = next_segment is None and segment.size == 0
        if view.high_watermark >= upper and not is_last_and_empty and predicate(segment, next_segment):
            deletable.append(segment)
        else:
            break
    return deletable


def _deletion(view: RetentionView, predicate: Predicate, reason: str) -> Deletion | None:
    found = deletable_segments(view, predicate)
    return Deletion(found, reason) if found else None
