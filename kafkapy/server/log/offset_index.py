"""OffsetIndex: maps offsets to file positions in a segment's .log file.

File format: a sequence of 8-byte entries, big-endian, sorted by offset::

    relativeOffset  int32   offset - the segment's base offset
    position        int32   byte position of a batch in the .log file

The index is sparse: an entry every `index.interval.bytes` of appended data. A lookup returns
the largest entry at or below the target; the reader then scans batch headers from there.
"""

from __future__ import annotations

import struct
from typing import ClassVar, NamedTuple

from kafkapy.server.log.abstract_index import AbstractIndex, CorruptIndexException, InvalidOffsetException


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    ENTRY: ClassVar[struct.Struct] = struct.Struct(">ii")

    def _key(self, slot: int) -> int:
        result: int = self.base_offset + self.ENTRY.unpack_from(self._mm, slot * 8)[0]  # type: ignore[arg-type]
        return result

    def entry(self, slot: int) -> OffsetPosition:
        relative, position = self._entry(slot)
        return OffsetPosition(self.base_offset + relative, position)

    @property
    def last_offset(self) -> int:
        """The last indexed offset, or the base offset when the index is empty."""
        return self.entry(self._entries - 1).offset if self._entries else self.base_offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry with offset <= target, or (base offset, 0) when there is none."""
        slot = self._largest_lower_bound_slot(target_offset)
        return OffsetPosition(self.base_offset, 0) if slot < 0 else self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        if self._entries and offset <= self.last_offset:
            raise InvalidOffsetException(
                f"Attempt to append an offset ({offset}) to position {self._entries} no larger than "
                f"the last offset appended ({self.last_offset}) to {self.path}."
            )
        self._append_entry(offset - self.base_offset, position)

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= `offset`."""
        slot = self._largest_lower_bound_slot(offset)
        if slot < 0:
            self._truncate_to_entries(0)
        elif self.entry(slot).offset == offset:
            self._truncate_to_entries(slot)
        else:
            self._truncate_to_entries(slot + 1)

    def sanity_check(self) -> None:
        self._check_file_length()
        if self._entries and self.last_offset < self.base_offset:
            raise CorruptIndexException(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last offset "
                f"is {self.last_offset} which is less than the base offset {self.base_offset}."
            )
