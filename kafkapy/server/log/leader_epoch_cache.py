"""LeaderEpochFileCache: the offset at which each leader epoch began in one log (KIP-101).

A follower that lost its place (a restart, a new leader) asks the leader where the latest
epoch it has ended, and truncates there instead of at its high watermark: records it holds
past that point were never part of the leader's log, and records before it are. The cache is
the answer to that question on both sides.

Kafka's file, `leader-epoch-checkpoint` in the partition's directory::

    0            version
    2            number of entries
    0 0          epoch, start offset: one line each, epochs and offsets increasing
    3 1500

Written like the offset checkpoints (temporary file, fsync, atomic rename), so a crash leaves
the old or the new file whole; at a clean shutdown the syncs wait for the log dir's syncfs
(durability.py), and a crash before it may leave a torn file, which the loader rebuilds from the
batches. An epoch change (a new leader's, a follower's first batch of an epoch) is written
without a sync of its own and synced with the other checkpoints of its batch
(epoch_checkpoint_writer.py); until then the file is not taken as durable, so a close or flush
writes it again with its own sync. The cache is not thread-safe on its own: the Log calls it
under its lock; only `flush` and `write_unsynced` (the file writes) may run on another thread,
and write the entries as they are when they run.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import NamedTuple

from kafkapy.protocol.constants import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkapy.server.log.durability import DEFERRED, FSYNC_EACH, Syncer
from kafkapy.server.log.offset_checkpoint import CheckpointFormatError

logger = logging.getLogger("kafkapy.server.epoch.LeaderEpochFileCache")

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CURRENT_VERSION = 0


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int

    def __str__(self) -> str:
        return f"EpochEntry(epoch={self.epoch}, startOffset={self.start_offset})"


class OffsetAndEpoch(NamedTuple):
    """Where an epoch ends (the first offset after it) and the epoch that answer belongs to."""

    offset: int
    leader_epoch: int


class UnsyncedWrite(NamedTuple):
    """A checkpoint written but not yet synced: `confirm` it once its filesystem is."""

    seq: int
    path: str
    entries: tuple[EpochEntry, ...]


class LeaderEpochCheckpointFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self._write_lock = threading.Lock()
        # (path, entries) as last read or durably written: a write of the same entries to the
        # same file is skipped, so closing 10k logs does not fsync 10k unchanged files (with
        # their dirs). A write not yet synced clears it until `confirm`.
        self._on_disk: tuple[str, tuple[EpochEntry, ...]] | None = None
        self._seq = 0  # writes so far: a confirmation of an older write than the last is stale

    def write(self, entries: Iterable[EpochEntry], syncer: Syncer = FSYNC_EACH) -> None:
        written = tuple(entries)
        with self._write_lock:
            if self._on_disk == (self.path, written):
                return
            self._write(written, syncer)
            self._on_disk = (self.path, written)

    def write_unsynced(self, entries: Iterable[EpochEntry]) -> UnsyncedWrite | None:
        """Write the file (temporary file, rename) without syncing it; None when these entries
        are durable there already. The caller syncs the filesystem, then calls `confirm`."""
        written = tuple(entries)
        with self._write_lock:
            if self._on_disk == (self.path, written):
                return None
            self._write(written, DEFERRED)
            self._on_disk = None
            return UnsyncedWrite(self._seq, self.path, written)

    def confirm(self, write: UnsyncedWrite) -> None:
        """`write`'s filesystem has been synced: its entries are durable, unless the file was
        written again since (that write's own sync or confirmation counts then)."""
        with self._write_lock:
            if write.seq == self._seq:
                self._on_disk = (write.path, write.entries)

    def _write(self, written: tuple[EpochEntry, ...], syncer: Syncer) -> None:
        lines = [str(CURRENT_VERSION), str(len(written)), *(f"{e.epoch} {e.start_offset}" for e in written)]
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            syncer.sync_file(f.fileno())
        os.replace(tmp, self.path)
        syncer.sync_dir(os.path.dirname(self.path))
        self._seq += 1

    def read(self) -> list[EpochEntry] | None:
        """The entries; None if there is no file. Raises CheckpointFormatError naming the file."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return None
        if not lines:
            raise CheckpointFormatError(f"Malformed checkpoint file ({self.path}): it is empty")
        if lines[0].strip() != str(CURRENT_VERSION):
            raise CheckpointFormatError(
                f"Unrecognized version of the checkpoint file ({self.path}): {lines[0]}"
            )
        try:
            expected = int(lines[1])
        except (IndexError, ValueError):
            raise CheckpointFormatError(
                f"Malformed line in checkpoint file ({self.path}): '{lines[1:2]}'"
            ) from None
        entries: list[EpochEntry] = []
        for line in lines[2:]:
            parts = line.split()
            if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
                raise CheckpointFormatError(f"Malformed line in checkpoint file ({self.path}): '{line}'")
            entry = EpochEntry(int(parts[0]), int(parts[1]))
            if (
                entry.epoch < 0
                or entry.start_offset < 0
                or (
                    entries
                    and (entry.epoch <= entries[-1].epoch or entry.start_offset < entries[-1].start_offset)
                )
            ):
                raise CheckpointFormatError(f"Entry out of order in checkpoint file ({self.path}): '{line}'")
            entries.append(entry)
        if len(entries) != expected:
            raise CheckpointFormatError(
                f"Expected {expected} entries in checkpoint file ({self.path}), but found {len(entries)}"
            )
        with self._write_lock:
            self._on_disk = (self.path, tuple(entries))
            self._seq += 1
        return entries


class LeaderEpochFileCache:
    """Epochs in increasing order, each with the first offset written in it."""

    def __init__(self, topic_partition: str, checkpoint: LeaderEpochCheckpointFile,
                 entries: Iterable[EpochEntry] = ()) -> None:  # fmt: skip
        self.topic_partition = topic_partition
        self.checkpoint = checkpoint
        self._epochs: list[EpochEntry] = list(entries)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.topic_partition}, {self._epochs})"

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1].epoch if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._epochs[0] if self._epochs else None

    def is_empty(self) -> bool:
        return not self._epochs

    def _log_prefix(self) -> str:
        return f"[LeaderEpochCache {self.topic_partition}]"

    # -- changes (each returns True when the file must be written) ------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` began at `start_offset`. Entries that contradict it (a later or
        equal epoch, or a later or equal start offset) were never committed and go first."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry ({epoch}, {start_offset})")
        if self._epochs:
            last = self._epochs[-1]
            if epoch == last.epoch and start_offset >= last.start_offset:
                return False
        removed: list[EpochEntry] = []
        while self._epochs and (
            self._epochs[-1].epoch >= epoch or self._epochs[-1].start_offset >= start_offset
        ):
            removed.append(self._epochs.pop())
        self._epochs.append(EpochEntry(epoch, start_offset))
        if removed:
            logger.info("%s New epoch entry %s caused truncation of conflicting entries %s. Cache now contains %d "
                        "entries.", self._log_prefix(), EpochEntry(epoch, start_offset),
                        [str(e) for e in reversed(removed)], len(self._epochs))  # fmt: skip
        elif len(self._epochs) > 1:
            logger.debug("%s Appended new epoch entry %s. Cache now contains %d entries.",
                         self._log_prefix(), EpochEntry(epoch, start_offset), len(self._epochs))  # fmt: skip
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """The log was truncated to `end_offset`: epochs that began at or after it are gone."""
        if end_offset < 0 or not self._epochs or self._epochs[-1].start_offset < end_offset:
            return False
        while self._epochs and self._epochs[-1].start_offset >= end_offset:
            self._epochs.pop()
        logger.info("%s Cleared entries from offset %d onwards. Cache now contains %d entries.",
                    self._log_prefix(), end_offset, len(self._epochs))  # fmt: skip
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at `start_offset`: the epoch holding it starts there too."""
        last_removed: EpochEntry | None = None
        while self._epochs and self._epochs[0].start_offset <= start_offset:
            last_removed = self._epochs.pop(0)
        if last_removed is None:
            return False
        first = EpochEntry(last_removed.epoch, start_offset)
        self._epochs.insert(0, first)
        if first == last_removed:
            return False
        logger.info("%s Cleared entries before offset %d. Cache now contains %d entries.",
                    self._log_prefix(), start_offset, len(self._epochs))  # fmt: skip
        return True

    def clear(self) -> bool:
        had = bool(self._epochs)
        self._epochs.clear()
        return had

    # -- questions ------------------------------------------------------------------------------

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> OffsetAndEpoch:
        """Where `requested_epoch` ended in this log, and the largest epoch <= it that we know.

        The latest epoch ends at the log end offset; an older one at the start of the next
        epoch we know. An epoch older than all we know answers the first known start offset
        (the data before it is gone; the follower may start there). An epoch we cannot place
        answers (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        epochs = self._epochs
        if requested_epoch == UNDEFINED_EPOCH or not epochs:
            return OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)
        if epochs[-1].epoch == requested_epoch:
            return OffsetAndEpoch(log_end_offset, requested_epoch)
        higher = next((e for e in epochs if e.epoch > requested_epoch), None)
        if higher is None:
            return OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)
        floor = None
        for e in epochs:
            if e.epoch > requested_epoch:
                break
            floor = e
        if floor is None:
            return OffsetAndEpoch(higher.start_offset, requested_epoch)
        return OffsetAndEpoch(higher.start_offset, floor.epoch)

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at `offset` was written in, if the cache knows."""
        found = None
        for e in self._epochs:
            if e.start_offset > offset:
                break
            found = e.epoch
        return found

    # -- the file -------------------------------------------------------------------------------

    def flush(self, syncer: Syncer = FSYNC_EACH) -> None:
        self.checkpoint.write(list(self._epochs), syncer)

    def write_unsynced(self) -> UnsyncedWrite | None:
        """The file written without a sync (server/log/epoch_checkpoint_writer.py batches them)."""
        return self.checkpoint.write_unsynced(list(self._epochs))
