"""AbstractIndex: an mmap'd file of fixed-width entries sorted by key, searched by bisection.

The base class owns the file, the mapping and the search; subclasses declare the entry layout
(`ENTRY`), what an entry's sort key is, and their sanity rules. The file of an active segment
is preallocated to `max_index_size` rounded down to a whole number of entries, and trimmed to
its entries when the segment stops being active or the log is closed, so a trimmed file's
length tells how many entries it holds.

A broker hosts thousands of segments, most of them never read: like Kafka's LazyIndex, an index
is mapped on first use (its length alone tells how many entries it has) and holds no file
descriptor until then, so idle partitions cost one descriptor (their .log), not three (the
process limit is often 20k). A mapped index holds one: CPython's mmap keeps a dup of the file's.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
from typing import ClassVar

from kafkapy.server.log.durability import FSYNC_EACH, Syncer


class CorruptIndexException(Exception):
    """An index file breaks its format's invariants; the segment is recovered from its log."""


class IndexFullError(Exception):
    pass


class InvalidOffsetException(Exception):
    """An entry would break the index's ordering."""


class AbstractIndex:
    ENTRY: ClassVar[struct.Struct]

    def __init__(self, path: str, base_offset: int, max_index_size: int, writable: bool = True) -> None:
        self.path = path
        self.base_offset = base_offset
        self.writable = writable
        # Guards remapping against a flush or close from the background thread; lookups and
        # appends run on the owner's thread under the log's lock.
        self._lock = threading.Lock()
        entry_size = self.ENTRY.size
        try:
            length = os.stat(path).st_size
        except FileNotFoundError:
            length = 0
        new_file = length == 0
        if new_file and writable:
            length = max_index_size - max_index_size % entry_size
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, length)
            finally:
                os.close(fd)
        elif new_file:
            os.close(os.open(path, os.O_RDONLY | os.O_CREAT, 0o644))
        self._length = length
        # Mapped by `_mapped()` on first use; None again once closed.
        self._mm: mmap.mmap | None = None
        self._closed = False
        # A new file has no entries; an existing one was trimmed to its entries when closed.
        self._entries = 0 if new_file else length // entry_size
        self.max_index_size = max_index_size
        self._max_entries = length // entry_size

    # -- subclass contract ----------------------------------------------------------------------

    def _key(self, slot: int) -> int:
        """The sort key of entry `slot` (an absolute offset or a timestamp)."""
        raise NotImplementedError

    def sanity_check(self) -> None:
        raise NotImplementedError

    # -- file and mapping -----------------------------------------------------------------------

    def _map(self, length: int) -> mmap.mmap | None:
        """Map the file's first `length` bytes, resizing the file to them first if writable."""
        if length == 0 and not self.writable:
            return None
        fd = os.open(self.path, os.O_RDWR if self.writable else os.O_RDONLY)
        try:
            if self.writable and os.fstat(fd).st_size != length:
                os.ftruncate(fd, length)
            if length == 0:
                return None  # mmap refuses empty files
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            return mmap.mmap(fd, length, access=access)
        finally:
            os.close(fd)

    def _mapped(self) -> mmap.mmap:
        """The mapping, made on first use (lookups and appends call it before reading slots)."""
        mm = self._mm
        if mm is None:
            with self._lock:
                if self._mm is None:
                    if self._closed:
                        raise ValueError(f"index {self.path} is closed")
                    self._mm = self._map(self._length)
                mm = self._mm
            if mm is None:
                raise IndexError(f"index {self.path} is empty")
        return mm

    def unmap(self) -> None:
        """Drop the mapping (entries kept; no msync: the caller flushes a written index first
        unless, as after recovery, its writes are redone on a crash anyway); the next lookup
        or append maps the file again."""
        with self._lock:
            if self._mm is not None:
                self._mm.close()
                self._mm = None

    @property
    def is_mapped(self) -> bool:
        return self._mm is not None

    def _remap(self, length: int) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"index {self.path} is closed")
            was_mapped = self._mm is not None
            if self._mm is not None:
                self._mm.close()
                self._mm = None
            self._length = length
            self._max_entries = length // self.ENTRY.size
            if was_mapped:
                self._mm = self._map(length)
            else:
                # An index nobody has read stays unmapped: the resize is all it needs, in one
                # call rather than open/ftruncate/close (closing 10k logs trims 20k of them).
                os.truncate(self.path, length)

    def resize(self, new_size: int) -> bool:
        """Resize the file to `new_size` rounded down to whole entries (never below the entries)."""
        rounded = max(new_size - new_size % self.ENTRY.size, self._entries * self.ENTRY.size)
        if rounded == self._length:
            return False
        self._remap(rounded)
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.ENTRY.size)

    def reset(self) -> None:
        """Drop every entry and preallocate again (before a rebuild)."""
        self._entries = 0
        self.resize(self.max_index_size)

    def flush(self, syncer: Syncer = FSYNC_EACH) -> None:
        with self._lock:
            if self._mm is not None:
                syncer.sync_mapping(self._mm)

    def close(self) -> None:
        if self._closed:
            return
        self.trim_to_valid_size()
        with self._lock:
            if self._mm is not None:
                self._mm.close()
                self._mm = None
            self._closed = True

    def close_handler(self) -> None:
        """Unmap without trimming the file (its dir failed, or is about to be removed)."""
        with self._lock:
            if self._mm is not None:
                self._mm.close()
                self._mm = None
            self._closed = True

    def delete(self) -> None:
        self.close_handler()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename_to(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = path

    # -- entries --------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self.ENTRY.size

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def _entry(self, slot: int) -> tuple[int, ...]:
        return self.ENTRY.unpack_from(self._mm or self._mapped(), slot * self.ENTRY.size)

    def _append_entry(self, *values: int, write_through: bool = False) -> None:
        """`write_through`: the entry goes by pwrite, not through the mapping (the same page cache,
        so a mapping sees it). A segment's final time index entry at close: writing it through
        a mapping of the preallocated file costs a page fault that allocates the block (~1.4 ms
        here, most of a 10k-partition broker's clean shutdown), pwrite takes the page cache's
        cheap path. Either way the entry is left unforced, as Kafka leaves it at close."""
        if self._entries >= self._max_entries:
            raise IndexFullError(f"Attempt to append to a full index (size = {self._entries}) {self.path}")
        position = self._entries * self.ENTRY.size
        if write_through:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.pwrite(fd, self.ENTRY.pack(*values), position)
            finally:
                os.close(fd)
        else:
            self.ENTRY.pack_into(self._mm or self._mapped(), position, *values)
        self._entries += 1

    def _largest_lower_bound_slot(self, target: int) -> int:
        """Slot of the largest entry whose key is <= target, or -1 if there is none."""
        n = self._entries
        if n and self._mm is None:
            self._mapped()
        if n == 0 or self._key(0) > target:
            return -1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if self._key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _smallest_upper_bound_slot(self, target: int) -> int:
        """Slot of the smallest entry whose key is >= target, or -1 if there is none."""
        n = self._entries
        if n and self._mm is None:
            self._mapped()
        if n == 0 or self._key(n - 1) < target:
            return -1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if self._key(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = min(entries, self._entries)

    def _check_file_length(self) -> None:
        if self._length % self.ENTRY.size != 0:
            raise CorruptIndexException(
                f"Index file {self.path} is corrupt, found {self._length} bytes which is "
                f"neither positive nor a multiple of {self.ENTRY.size}."
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={self.path!r}, entries={self._entries}/{self._max_entries})"
