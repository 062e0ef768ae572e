"""Which old segments are rewritten together into one cleaned segment (Kafka's groupSegmentsBySize).

A group must fit one segment (segment.bytes), its indexes must fit segment.index.bytes, and
its offsets must fit the 4-byte offsets relative to the group's first base offset.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkapy.protocol.record_batch import INT32_MAX
from kafkapy.server.log.log_segment import LogSegment


def group_segments_by_size(
    segments: Sequence[LogSegment], max_size: int, max_index_size: int, first_uncleanable_offset: int
) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        first = segments[i]
        group = [first]
        log_size = first.size
        index_size = first.offset_index.size_in_bytes
        time_index_size = first.time_index.size_in_bytes
        i += 1
        while i < len(segments):
            nxt = segments[i]
            if (
                log_size + nxt.size > max_size
                or index_size + nxt.offset_index.size_in_bytes > max_index_size
                or time_index_size + nxt.time_index.size_in_bytes > max_index_size
                or _last_offset_of(segments, i, first_uncleanable_offset) - first.base_offset > INT32_MAX
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            index_size += nxt.offset_index.size_in_bytes
            time_index_size += nxt.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


def _last_offset_of(segments: Sequence[LogSegment], i: int, first_uncleanable_offset: int) -> int:
    """The largest offset segment `i` may hold: the next one's base offset less one (its own
    last offset would need a scan), or the offset before the uncleanable part for the last."""
    if i + 1 < len(segments):
        return segments[i + 1].base_offset - 1
    return first_uncleanable_offset - 1
