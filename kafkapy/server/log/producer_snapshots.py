"""The producer state snapshot files of one log directory: which exist, writing and deleting them.

Rules (Kafka's ProducerStateManager):
- a snapshot at offset N holds the state of the log's batches below N, so it stays true for
  as long as the log keeps those batches: truncating to T deletes the snapshots above T, and
  a full truncation deletes them all;
- snapshots below the log start offset are useless and deleted;
- a corrupt snapshot is named in a WARN line and deleted, and the next older one is tried.

A snapshot taken at a roll is encoded under the log's lock (the state must not move) but
written later, off the event loop. A truncation may happen in between: it bumps a generation
number, and a write that finds the generation moved drops its file instead of installing a
snapshot of a history the log no longer has.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable

from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.producer_state_snapshot import (
    CorruptSnapshotException,
    SnapshotEntry,
    delete_quietly,
    encode_snapshot,
    install_snapshot,
    list_snapshot_offsets,
    read_snapshot_file,
    snapshot_path,
    write_temp_snapshot,
)

logger = logging.getLogger("kafkapy.log.ProducerStateManager")


class ProducerSnapshots:
    def __init__(self, dir_: str, topic_partition: str) -> None:
        self.dir = dir_
        self._prefix = f"[ProducerStateManager partition={topic_partition}]"
        self._lock = threading.Lock()
        self._generation = 0
        self._offsets: list[int] = list_snapshot_offsets(dir_)  # ascending

    @property
    def offsets(self) -> list[int]:
        with self._lock:
            return list(self._offsets)

    def latest_offset(self) -> int | None:
        with self._lock:
            return self._offsets[-1] if self._offsets else None

    def update_dir(self, dir_: str) -> None:
        """The log's directory was renamed (topic deletion): the files moved with it."""
        with self._lock:
            self.dir = dir_
            self._generation += 1  # a pending write in the old dir must not install

    # -- writing --------------------------------------------------------------------------------

    def prepare_write(
        self, offset: int, entries: list[SnapshotEntry], syncer: Syncer = FSYNC_EACH
    ) -> Callable[[], None] | None:
        """A job writing the snapshot at `offset`, or None when one already exists there.

        A snapshot at an offset is fully determined by the log below it, and every change to
        that part of the log deletes it, so an existing file is never stale.
        """
        with self._lock:
            if _contains(self._offsets, offset):
                return None
            generation, dir_ = self._generation, self.dir
        data = encode_snapshot(entries)

        def write() -> None:
            self._write(offset, data, generation, dir_, len(entries), syncer)

        return write

    def write(self, offset: int, entries: list[SnapshotEntry], syncer: Syncer = FSYNC_EACH) -> None:
        job = self.prepare_write(offset, entries, syncer)
        if job is not None:
            job()

    def _write(
        self, offset: int, data: bytes, generation: int, dir_: str, count: int, syncer: Syncer
    ) -> None:
        path = snapshot_path(dir_, offset)
        try:
            temp = write_temp_snapshot(path, data, syncer)
        except OSError as e:
            logger.warning("%s Failed to write producer snapshot %s: %s", self._prefix, path, e)
            return
        with self._lock:
            if generation != self._generation:
                delete_quietly(temp)  # truncated or moved meanwhile: the state is no longer true
                return
            try:
                install_snapshot(temp, path, syncer)
            except OSError as e:
                delete_quietly(temp)
                logger.warning("%s Failed to write producer snapshot %s: %s", self._prefix, path, e)
                return
            if not _contains(self._offsets, offset):
                bisect.insort(self._offsets, offset)
        logger.info(
            "%s Wrote producer snapshot at offset %d with %d producer ids", self._prefix, offset, count
        )

    # -- deleting -------------------------------------------------------------------------------

    def delete_above(self, offset: int) -> None:
        """Truncation to `offset`: snapshots past it describe batches that are gone."""
        with self._lock:
            self._generation += 1
            cut = bisect.bisect_right(self._offsets, offset)
            doomed, self._offsets = self._offsets[cut:], self._offsets[:cut]
            self._delete(doomed)

    def delete_below(self, offset: int) -> None:
        """Retention and DeleteRecords: snapshots below the log start offset are never loaded."""
        with self._lock:
            cut = bisect.bisect_left(self._offsets, offset)
            doomed, self._offsets = self._offsets[:cut], self._offsets[cut:]
            self._delete(doomed)

    def delete_all(self) -> None:
        with self._lock:
            self._generation += 1
            doomed, self._offsets = self._offsets, []
            self._delete(doomed)

    def _delete(self, offsets: list[int]) -> None:
        for offset in offsets:
            delete_quietly(snapshot_path(self.dir, offset))

    # -- reading --------------------------------------------------------------------------------

    def load_latest(self, up_to: int) -> tuple[int, list[SnapshotEntry]] | None:
        """The newest readable snapshot at or below `up_to` as (offset, entries), else None.

        Corrupt ones met on the way are deleted, so the next start does not trip on them again.
        """
        while True:
            with self._lock:
                index = bisect.bisect_right(self._offsets, up_to)
                if index == 0:
                    return None
                offset = self._offsets[index - 1]
                path = snapshot_path(self.dir, offset)
            try:
                logger.info("%s Loading producer state from snapshot file '%s'", self._prefix, path)
                return offset, read_snapshot_file(path)
            except (CorruptSnapshotException, OSError) as e:
                logger.warning("%s Failed to load producer snapshot from '%s': %s", self._prefix, path, e)
                with self._lock:
                    if _contains(self._offsets, offset):
                        self._offsets.remove(offset)
                    delete_quietly(path)


def _contains(offsets: list[int], offset: int) -> bool:
    i = bisect.bisect_left(offsets, offset)
    return i < len(offsets) and offsets[i] == offset
