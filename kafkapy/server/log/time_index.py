"""TimeIndex: maps timestamps to offsets, for ListOffsets by time and time-based retention.

File format: a sequence of 12-byte entries, big-endian, sorted by timestamp::

    timestamp       int64   the largest timestamp seen up to the indexed batch
    relativeOffset  int32   offset - the segment's base offset (of that batch's last record)

An entry is written only when the timestamp grows, so timestamps and offsets both increase.
When the index is full, one slot stays free for the final entry written when the segment
stops being active (Kafka's rule), so the last timestamp of a segment is always indexed.
"""

from __future__ import annotations

import struct
from typing import ClassVar, NamedTuple

from kafkapy.protocol.constants import NO_TIMESTAMP
from kafkapy.server.log.abstract_index import (
    AbstractIndex,
    CorruptIndexException,
    IndexFullError,
    InvalidOffsetException,
)


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    ENTRY: ClassVar[struct.Struct] = struct.Struct(">qi")

    def _key(self, slot: int) -> int:
        result: int = self.ENTRY.unpack_from(self._mm, slot * 12)[0]  # type: ignore[arg-type]
        return result

    def entry(self, slot: int) -> TimestampOffset:
        timestamp, relative = self._entry(slot)
        return TimestampOffset(timestamp, self.base_offset + relative)

    @property
    def last_entry(self) -> TimestampOffset:
        return (
            self.entry(self._entries - 1)
            if self._entries
            else TimestampOffset(NO_TIMESTAMP, self.base_offset)
        )

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    def maybe_append(
        self, timestamp: int, offset: int, skip_full_check: bool = False, write_through: bool = False
    ) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's;
        `write_through` as for `_append_entry` (the final entry at close)."""
        if not skip_full_check and self.is_full:
            raise IndexFullError(
                f"Attempt to append to a full time index (size = {self._entries}) {self.path}"
            )
        last = self.last_entry
        if self._entries and offset < last.offset:
            raise InvalidOffsetException(
                f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than the last "
                f"offset appended ({last.offset}) to {self.path}."
            )
        if self._entries and timestamp < last.timestamp:
            raise InvalidOffsetException(
                f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger than the "
                f"last timestamp appended ({last.timestamp}) to {self.path}."
            )
        if not self._entries or timestamp > last.timestamp:
            if self._entries >= self.max_entries:
                self.resize((self._entries + 1) * self.ENTRY.size)  # a trimmed file taking its final entry
            self._append_entry(timestamp, offset - self.base_offset, write_through=write_through)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= target, or (NO_TIMESTAMP, base offset)."""
        slot = self._largest_lower_bound_slot(target_timestamp)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot < 0 else self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset is >= `offset` (offsets increase with the slots)."""
        lo, hi = 0, self._entries
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.entry(mid).offset < offset:
                lo = mid + 1
            else:
                hi = mid
        self._truncate_to_entries(lo)

    def sanity_check(self) -> None:
        self._check_file_length()
        if not self._entries:
            return
        last = self.last_entry
        first = self.entry(0)
        if last.timestamp < first.timestamp:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last "
                f"timestamp is {last.timestamp} which is less than the first timestamp {first.timestamp}"
            )
        if last.offset < self.base_offset:
            raise CorruptIndexException(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last "
                f"offset is {last.offset} which is less than the first offset {self.base_offset}"
            )
