"""SkimpyOffsetMap: key -> latest offset over a log's dirty section, in a fixed-size table.

As in Kafka, a key is stored as its 16-byte MD5 digest next to an 8-byte offset, 24 bytes a
slot, in one preallocated buffer, so the memory a cleaner thread uses is at most the dedupe
buffer it was given whatever the keys look like. The buffer is an anonymous mmap rather than a
bytearray (which zero-fills, making all 128 MiB resident at once): pages become resident only
as slots are used, and `clear` maps a fresh one. Open addressing with linear probing;
a slot whose digest is all zeros is empty (an MD5 of all zeros is as unlikely as the hash
collisions Kafka already accepts). Two keys with the same digest count as one key: the cost is
Kafka's too, one in 2^128.
"""

from __future__ import annotations

import hashlib
import mmap
import struct

HASH_SIZE = 16  # MD5
BYTES_PER_ENTRY = HASH_SIZE + 8
_OFFSET = struct.Struct(">q")
_SLOT_OF = struct.Struct(">Q")  # the first 8 digest bytes choose the slot
_EMPTY = bytes(HASH_SIZE)


class OffsetMapFullError(RuntimeError):
    """A put of a new key into a map whose slots are all taken."""


class SkimpyOffsetMap:
    def __init__(self, memory: int) -> None:
        self.slots = max(memory // BYTES_PER_ENTRY, 1)
        self._table = mmap.mmap(-1, self.slots * BYTES_PER_ENTRY)
        self._view = memoryview(self._table)
        self.size = 0
        self.latest_offset = -1
        self.lookups = 0
        self.probes = 0

    @staticmethod
    def hash_key(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def _find(self, digest: bytes) -> int:
        """The byte position of `digest`'s slot, or of the empty slot where it would go."""
        view, slots = self._view, self.slots
        slot = _SLOT_OF.unpack_from(digest)[0] % slots
        for _ in range(slots):
            position = slot * BYTES_PER_ENTRY
            stored = view[position : position + HASH_SIZE]
            if stored == digest or stored == _EMPTY:
                self.probes += 1
                result: int = position
                return result
            self.probes += 1
            slot += 1
            if slot == slots:
                slot = 0
        return -1

    def put(self, key: bytes, offset: int) -> None:
        digest = self.hash_key(key)
        position = self._find(digest)
        if position < 0:
            raise OffsetMapFullError(f"Offset map is full ({self.slots} slots)")
        self.lookups += 1
        if self._view[position : position + HASH_SIZE] == _EMPTY:
            self._table[position : position + HASH_SIZE] = digest
            self.size += 1
        _OFFSET.pack_into(self._table, position + HASH_SIZE, offset)
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset stored for `key`, or -1."""
        position = self._find(self.hash_key(key))
        self.lookups += 1
        if position < 0 or self._view[position : position + HASH_SIZE] == _EMPTY:
            return -1
        result: int = _OFFSET.unpack_from(self._table, position + HASH_SIZE)[0]
        return result

    def clear(self) -> None:
        # A fresh calloc'ed buffer: pages the next cleaning never touches cost nothing.
        self._view.release()
        self._table = mmap.mmap(-1, self.slots * BYTES_PER_ENTRY)
        self._view = memoryview(self._table)
        self.size = 0
        self.latest_offset = -1
        self.lookups = self.probes = 0

    def update_latest_offset(self, offset: int) -> None:
        """The map covers offsets up to here even when the last records had no new key."""
        self.latest_offset = offset

    @property
    def utilization(self) -> float:
        return self.size / self.slots
