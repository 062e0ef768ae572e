"""The leader-epoch checkpoints of new leaders, written in batches with one sync per log dir.

A broker that becomes leader of a partition at a new epoch records where the epoch begins
(Log.maybe_assign_epoch_start_offset), and the partition's `leader-epoch-checkpoint` is written
again. One LeaderAndIsr does that for every partition it moves: when a broker of a 10k-partition
cluster stops, each survivor takes over or re-leads ~5k partitions at once. Written one by one,
each checkpoint cost an fsync of the file and one of its directory: two journal commits and
~0.2 ms of kernel CPU each, ~1 s of CPU per survivor on a machine the stopping broker shares.

Here a request only queues the log; one job on the io threads drains the queue: it writes every
queued log's checkpoint (temporary file, rename) without a sync, then syncs each log dir's
filesystem once (syncfs, through the LogManager) and only then takes the files as durable.
Requests made while a batch is being written wait for the next round of the same job. A file
not yet confirmed is written again with its own fsync by whoever needs it durable first: a
log's close, or its flush before the recovery point moves past the epoch (Log.flush).

The path was asynchronous already (the loop never waits for a checkpoint); what the batch
changes is when the files reach the disk: after the batch's syncfs rather than one by one. A
crash before that leaves the previous file or the new one whole (the rename), and recovery
assigns the epochs of the batches written since the recovery point from the batches.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkapy.server.log.io_guard import io_failed

if TYPE_CHECKING:
    from kafkapy.server.log.leader_epoch_cache import UnsyncedWrite
    from kafkapy.server.log.log import Log, Scheduler

logger = logging.getLogger("kafkapy.server.epoch.LeaderEpochFileCache")

_WRITE_FAILED = "Error while writing to checkpoint file {dir}/{tp}/leader-epoch-checkpoint"


class EpochCheckpointWriter:
    """Queues logs whose leader-epoch checkpoint changed; writes them in batches on `scheduler`.

    `sync_dir(log_dir)` syncs the filesystem of a log dir and says whether it succeeded (a
    failure takes the dir offline: that is the LogManager's to do).
    """

    def __init__(self, scheduler: Scheduler, sync_dir: Callable[[str], bool]) -> None:
        self._scheduler = scheduler
        self._sync_dir = sync_dir
        self._lock = threading.Lock()
        self._queued: dict[Log, None] = {}
        self._draining = False

    def request(self, log: Log) -> None:
        """`log`'s epochs changed: its checkpoint is written with the next batch."""
        with self._lock:
            self._queued[log] = None
            if self._draining:
                return
            self._draining = True
        try:
            self._scheduler(self._drain)
        except RuntimeError:
            # The io threads are shut down: the broker is stopping, and each log's close
            # writes its own checkpoint.
            with self._lock:
                self._draining = False

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = list(self._queued)
                self._queued.clear()
                if not batch:
                    self._draining = False
                    return
            try:
                self.write(batch)
            except BaseException:
                with self._lock:
                    self._draining = False
                raise

    def write(self, logs: list[Log]) -> None:
        """Write the checkpoints of `logs`, then sync each log dir once and confirm its files."""
        by_dir: dict[str, list[tuple[Log, UnsyncedWrite]]] = {}
        for log in logs:
            try:
                written = log.write_epoch_checkpoint_unsynced()
            except OSError as e:
                io_failed(log, _WRITE_FAILED, e)  # takes the dir offline
                continue
            if written is not None:
                by_dir.setdefault(os.path.dirname(log.dir), []).append((log, written))
        for log_dir, in_dir in by_dir.items():
            if not self._sync_dir(log_dir):
                continue  # not durable: a close or flush writes them again, if the dir lives on
            for log, written in in_dir:
                log.leader_epoch_cache.checkpoint.confirm(written)
            logger.debug("Wrote %d leader-epoch checkpoints in %s with one sync", len(in_dir), log_dir)
