"""FileRecords: a segment's .log file, a plain concatenation of v2 record batches.

Writes go through `os.pwrite` at the tracked end and reads through `os.pread`/`mmap`, so no
file position is shared between the appending thread, fetches and the flusher. The object owns
the descriptor: fetch responses hold it (as `FileRegion.owner`) until sent, so a segment deleted
by retention or truncation keeps its data readable for fetches already in flight; the
descriptor closes when the last holder lets go.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from typing import NamedTuple

from kafkapy.protocol.file_region import FileRegion
from kafkapy.protocol.record_batch import (
    HEADER_SIZE,
    BatchHeader,
    TimestampType,
    checked_batch_size,
    read_header,
)
from kafkapy.protocol.record_codec import decode_batch_records
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.fetch_data_info import TimestampAndOffset


class LogOffsetPosition(NamedTuple):
    """Where a wanted offset's batch is: its last offset, its position and its size."""

    offset: int
    position: int
    size: int


class FileRecords:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = getattr(self, "fd", -1), -1
        if fd >= 0:
            os.close(fd)

    def delete(self) -> None:
        """Unlink the file; the descriptor stays open for in-flight fetches (see module doc)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def rename_to(self, path: str) -> None:
        os.replace(self.path, path)
        self.path = path

    def flush(self, syncer: Syncer = FSYNC_EACH) -> None:
        if self.fd >= 0:
            syncer.sync_file(self.fd)

    def last_modified_ms(self) -> int:
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def append(self, data: memoryview) -> int:
        """Write `data` at the end; the one copy of the records, into the page cache."""
        position = self.size
        written = os.pwrite(self.fd, data, position)
        if written == len(data):  # nearly always: a short write only when the disk fills
            self.size = position + written
            return written
        position, remaining = position + written, data[written:]
        while remaining:
            written = os.pwrite(self.fd, remaining, position)
            position += written
            remaining = remaining[written:]
        self.size = position
        return len(data)

    def truncate_to(self, size: int) -> int:
        if size < 0 or size > self.size:
            raise ValueError(
                f"Attempt to truncate log segment {self.path} to {size} bytes failed, size is {self.size}"
            )
        truncated = self.size - size
        if truncated:
            os.ftruncate(self.fd, size)
            self.size = size
        return truncated

    def slice(self, position: int, size: int) -> FileRegion:
        return FileRegion(self.fd, position, max(0, min(size, self.size - position)), owner=self)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    @contextlib.contextmanager
    def mapped(self) -> Iterator[memoryview]:
        """The whole file as a read-only memoryview (recovery reads it once, front to back)."""
        if self.size == 0:
            yield memoryview(b"")
            return
        mm = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ)
        view = memoryview(mm)
        try:
            yield view
        finally:
            view.release()
            mm.close()

    def batches_from(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch from `position`; stops at a torn tail.

        Reads headers only (one pread each): the index puts `position` at most one index
        interval before the wanted batch, so the scan is short.
        """
        end = self.size
        while end - position >= HEADER_SIZE:
            raw = os.pread(self.fd, HEADER_SIZE, position)
            if len(raw) < HEADER_SIZE:
                return
            header = read_header(raw)
            size = checked_batch_size(header)
            if position + size > end:
                return
            yield position, header
            position += size

    def search_for_offset_with_size(
        self, target_offset: int, starting_position: int
    ) -> LogOffsetPosition | None:
        """The first batch from `starting_position` whose last offset is >= target."""
        for position, header in self.batches_from(starting_position):
            if header.last_offset >= target_offset:
                return LogOffsetPosition(header.last_offset, position, header.size)
        return None

    def search_for_timestamp(
        self, target_timestamp: int, starting_position: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after `starting_offset` with a timestamp >= target."""
        for position, header in self.batches_from(starting_position):
            if header.max_timestamp < target_timestamp or header.last_offset < starting_offset:
                continue
            epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
            if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
                # Every record of a LogAppendTime batch carries the batch's timestamp.
                return TimestampAndOffset(
                    header.max_timestamp, max(header.base_offset, starting_offset), epoch
                )
            # ListOffsets by time is rare and answers one record: inflating this one batch is
            # what Kafka does too, and it keeps a consumer's seek-by-time exact.
            for record in decode_batch_records(self.read(position, header.size)):
                if record.timestamp >= target_timestamp and record.offset >= starting_offset:
                    return TimestampAndOffset(record.timestamp, record.offset, epoch)
        return None
