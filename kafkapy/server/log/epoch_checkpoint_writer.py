"""Leader-epoch checkpoints written in batches, off the caller's thread, one sync per log dir.

A broker that becomes leader of a partition at a new epoch records where the epoch begins
(Log.maybe_assign_epoch_start_offset), and a follower records each new epoch its leader's
batches carry (Log.append_as_follower); each time the partition's `leader-epoch-checkpoint` is
written again. One LeaderAndIsr does that for every partition it moves: when a broker of a
10k-partition cluster stops, each survivor takes over or re-leads ~5k partitions at once. And
the first record of every partition after a leader change makes each follower write one:
synced on the fetcher thread, its two fsyncs came before the follower's next fetch, so every
acks=all produce to such a partition waited for them (filling 10k new partitions with one
record each, the followers' fetcher threads spent ~65% of their time there).

Here a request only queues the log; one job on the io threads drains the queue: it writes every
queued log's checkpoint (temporary file, rename) without a sync, then syncs each log dir's
filesystem once (syncfs, through the LogManager) and only then takes the files as durable.
Requests made while a batch is being written wait for the next round of the same job (syncfs
writes back the filesystem's other dirty pages too, segments included: the batch waits for
that, no produce or fetch does). A file
not yet confirmed is written again with its own fsync by whoever needs it durable first: a
log's close, or its flush before the recovery point moves past the epoch (Log.flush).

Kafka syncs these writes where they happen. What a crash can lose here is the entries added
since the last synced write: the file is rewritten whole and renamed, so it holds the old
entries or the new ones, and the entries lost all begin past the recovery point (Log.flush
makes them durable before it moves it), where an unclean start reads the batches again and
assigns their epochs (log_loader.load_leader_epoch_cache). Kafka moved its producer-state
snapshot's fsync to the log flush on the same ground (KAFKA-15046). A new leader's entry for
an epoch with no batch yet is the one a crash can drop for good; until the leader appends, the
end offset it answers for its previous epoch (OffsetsForLeaderEpoch) is its log end either way.
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
