"""Moving a replica between this broker's log.dirs: Kafka's future log and
ReplicaAlterLogDirsThread, one thread per move (moves are rare and operator-driven).

The future log lives in `<dest>/<topic>-<partition>.<uuid>-future` and copies the current log's
batches with their offsets, epochs and producer state (Log.append_as_follower). Each round reads
at most ROUND_BYTES under the current log's lock, so it never sees a half-truncated segment;
truncations of the current log (follower truncation, leader change) are seen through
`Log.truncated_to` and applied to the future log, and its log start offset follows the current
one. Once caught up, the last bytes are copied and the logs swapped while the current log's lock
is held (appends wait for those few milliseconds): the future directory is flushed and renamed to
`<dest>/<topic>-<partition>`, the current Log object adopts its segments, producer state and
leader epoch cache (so the partition, the fetchers and the purgatory keep the object they hold),
and the old directory is renamed `-delete` and removed after file.delete.delay.ms (a fetch
response still sending from its files keeps working). A broker shutdown mid-move keeps the
`-future` directory; the next start loads it and, once LeaderAndIsr hosts the replica again,
resumes the copy from where it stopped (first cut back, by leader epoch, to what the current log
still has), as Kafka's futureLogs do.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from typing import Protocol

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_manager import DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX
from kafkapy.server.log.log_segment import LogSegment
from kafkapy.server.replication_quota import ReplicationQuotaManager

log = logging.getLogger("kafkapy.server.ReplicaAlterLogDirsThread")

ROUND_BYTES = 1024 * 1024
QUOTA_WAIT_S = 0.1


def future_dir_name(tp: TopicPartition) -> str:
    return f"{tp}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def _read_round(current: Log, start: int) -> bytes:
    """Up to ROUND_BYTES of whole batches from `start` (caller holds current's lock)."""
    info = current.read(start, ROUND_BYTES, max_offset=None, min_one_message=True)
    data = b"".join(os.pread(r.fd, r.length, r.position) for r in info.records)
    # A read may end inside a batch (consumers skip that part); the copy takes whole batches:
    # baseOffset i64 | batchLength i32, the batch being 12 + batchLength bytes.
    end = 0
    while end + 12 <= len(data):
        size = 12 + int.from_bytes(data[end + 8 : end + 12], "big")
        if end + size > len(data):
            break
        end += size
    return data[:end]


def _follow_truncation_and_start(current: Log, future: Log) -> None:
    """Apply the current log's truncations and log start offset to the future log (caller holds
    current's lock; the future log is written by the mover only)."""
    cut, current.truncated_to = current.truncated_to, None
    if cut is not None and cut < future.log_end_offset:
        future.truncate_to(cut)
    start = current.log_start_offset
    if start >= future.log_end_offset and start != future.log_start_offset:
        future.truncate_fully_and_start_at(start)
    elif start > future.log_start_offset:
        future.high_watermark = future.log_end_offset
        future.maybe_increment_log_start_offset(start)


def _truncate_to_current(current: Log, future: Log) -> None:
    """A future log resumed after a restart may hold what the current log no longer has (an
    unclean restart truncated it, or it followed another leader since): cut the future log where
    both agree, by leader epoch as Kafka's ReplicaAlterLogDirsThread does with the current log in
    the leader's place. A fresh future log is empty and untouched."""
    if future.log_end_offset == future.log_start_offset:
        return
    with current._lock:
        end = min(future.log_end_offset, current.log_end_offset)
        epoch = future.latest_epoch
        if epoch is not None:
            found = current.end_offset_for_epoch(epoch)
            end = current.log_start_offset if found is None else min(end, found.offset)
        current.truncated_to = None  # what happened before now is covered by this cut
    if end < future.log_end_offset:
        log.info(
            "[ReplicaAlterLogDirsThread] Truncating the future log of %s to %d to match the current log",
            future.name,
            end,
        )
        if end <= future.log_start_offset:
            future.truncate_fully_and_start_at(max(end, current.log_start_offset))
        else:
            future.truncate_to(end)


def _copy_round(current: Log, future: Log, quota: ReplicationQuotaManager | None = None) -> bool:
    """One round; True when it reached the current log's end when it read (what remains is what
    was appended since: little enough to copy with appends held)."""
    with current._lock:
        _follow_truncation_and_start(current, future)
        if future.log_end_offset >= current.log_end_offset:
            return True
        end = current.log_end_offset
        data = _read_round(current, future.log_end_offset)
    if data:
        future.append_as_follower(data)
        if quota is not None:
            quota.record(len(data))
    return future.log_end_offset >= end


def _adopt(current: Log, future: Log, final_dir: str) -> tuple[str, list[LogSegment]]:
    """Make `current` the log in `final_dir` with the future log's files (caller holds both
    locks, logs equal); returns the old directory's `-delete` name and its segments, left open
    for fetch responses already holding their file regions."""
    future.flush()
    future.leader_epoch_cache.flush()
    future.rename_dir(final_dir)
    old_dir, old_segments = current.dir, list(current._segments.values())
    doomed = os.path.join(
        os.path.dirname(old_dir), f"{os.path.basename(old_dir)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    )
    os.rename(old_dir, doomed)
    current.dir = future.dir
    current._segments = future._segments
    current.producer_state = future.producer_state
    current.leader_epoch_cache = future.leader_epoch_cache
    current.recovery_point = future.recovery_point
    current._hw_position = None
    current.truncated_to = None
    return doomed, old_segments


class LogDirMover(threading.Thread):
    """Copies `current` into `future` until caught up, then swaps them."""

    def __init__(
        self,
        tp: TopicPartition,
        current: Log,
        future: Log,
        final_dir: str,
        is_current: Callable[[], bool],
        on_done: Callable[[LogDirMover, bool], None],
        delete_delay_s: float,
        quota: Callable[[], ReplicationQuotaManager | None] = lambda: None,
    ) -> None:
        super().__init__(name=f"ReplicaAlterLogDirsThread-{tp}", daemon=True)
        self.tp = tp
        self.current = current
        self.future = future
        self.final_dir = final_dir
        self.destination = os.path.dirname(final_dir)
        self._is_current = is_current
        self._on_done = on_done
        self._delete_delay_s = delete_delay_s
        self._quota = quota
        self._stopping = threading.Event()  # not _stop: Thread has a method of that name
        # Set by a broker shutdown: the future log stays on disk and the next start resumes it,
        # closed with the shutdown's syncer (the LogManager syncs the dir after the movers stop).
        self._keep_future = False
        self._close_syncer: Syncer = FSYNC_EACH

    def shutdown(self, keep_future: bool = False, syncer: Syncer = FSYNC_EACH) -> None:
        self._keep_future = keep_future
        self._close_syncer = syncer
        self._stopping.set()

    def run(self) -> None:
        swapped = False
        try:
            swapped = self._move()
        except Exception:  # noqa: BLE001 - a failed move leaves the current log as it was
            log.exception(
                "[ReplicaAlterLogDirsThread] Moving %s to %s failed; the replica stays in %s",
                self.tp,
                self.destination,
                os.path.dirname(self.current.dir),
            )
        if not swapped:
            channel = self.future.failure_channel
            if channel is not None and channel.has_offline_log_dir(self.destination):
                self.future.close_handlers()  # a failed dir is left as it is, like its other logs
            elif self._keep_future and self._is_current():
                self.future.close(syncer=self._close_syncer)
                log.info(
                    "[ReplicaAlterLogDirsThread] Stopped moving %s at offset %d; the move resumes at the "
                    "next start",
                    self.tp,
                    self.future.log_end_offset,
                )
            else:
                try:
                    self.future.close()
                finally:
                    shutil.rmtree(self.future.dir, ignore_errors=True)
        self._on_done(self, swapped)

    def _move(self) -> bool:
        log.info(
            "[ReplicaAlterLogDirsThread] Moving %s from %s to %s",
            self.tp,
            os.path.dirname(self.current.dir),
            self.destination,
        )
        _truncate_to_current(self.current, self.future)
        while not self._stopping.is_set():
            if not self._is_current():
                return False  # the replica was deleted or stopped meanwhile
            quota = self._quota()
            if quota is not None and quota.is_quota_exceeded():
                # replica.alter.log.dirs.io.max.bytes.per.second: the copy competes with the
                # request path for the disk and the GIL, so it waits while over the bound.
                self._stopping.wait(QUOTA_WAIT_S)
                continue
            if _copy_round(self.current, self.future, quota):
                with self.current._lock:
                    # Appends wait here: finish the copy and swap with nothing arriving.
                    while (
                        self.future.log_end_offset < self.current.log_end_offset
                        or self.current.truncated_to is not None
                    ):
                        before = self.future.log_end_offset
                        _copy_round(self.current, self.future)
                        if (
                            self.future.log_end_offset == before
                            and self.current.truncated_to is None
                            and before < self.current.log_end_offset
                        ):
                            raise RuntimeError(f"no progress copying {self.tp} at offset {before}")
                    if not self._is_current():
                        return False
                    with self.future._lock:
                        doomed, retired = _adopt(self.current, self.future, self.final_dir)
                self._schedule_delete(doomed, retired)
                log.info(
                    "[ReplicaAlterLogDirsThread] The current replica of %s is now in %s, log end offset %d",
                    self.tp,
                    self.destination,
                    self.current.log_end_offset,
                )
                return True
        return False

    def _schedule_delete(self, doomed: str, retired: list[LogSegment]) -> None:
        def delete() -> None:
            for segment in retired:
                segment.close_handlers()  # their files are about to go: nothing to write
            shutil.rmtree(doomed, ignore_errors=True)

        timer = threading.Timer(self._delete_delay_s, delete)
        timer.daemon = True
        timer.start()


class _Logs(Protocol):
    log_dirs: list[str]

    def get_log(self, tp: TopicPartition) -> Log | None: ...


class LogDirMoves:
    """The moves under way on one broker (Kafka's futureLogs + ReplicaAlterLogDirsManager)."""

    def __init__(self, logs: _Logs) -> None:
        self._logs = logs
        self._lock = threading.Lock()
        self._moves: dict[TopicPartition, LogDirMover] = {}
        # Set by the server once its quotas exist (replica.alter.log.dirs.io.max.bytes.per.second).
        self.quota: ReplicationQuotaManager | None = None

    def destination(self, tp: TopicPartition) -> str | None:
        with self._lock:
            mover = self._moves.get(tp)
        return None if mover is None else mover.destination

    def future_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return {tp: m.future for tp, m in self._moves.items()}

    def start(self, tp: TopicPartition, current: Log, destination: str) -> None:
        """Move `tp`'s replica into `destination` (a configured dir other than its own); a move
        to another dir already under way is abandoned first, as Kafka's futureReplicaDirChanged."""
        with self._lock:
            running = self._moves.get(tp)
            if running is not None and running.destination == destination:
                return
        if running is not None:
            running.shutdown()
            running.join(30)
        future = Log(os.path.join(destination, future_dir_name(tp)), current.config, had_clean_shutdown=True)
        future.failure_channel = current.failure_channel
        if current.log_start_offset > 0:
            future.truncate_fully_and_start_at(current.log_start_offset)
        mover = LogDirMover(
            tp,
            current,
            future,
            os.path.join(destination, str(tp)),
            lambda: self._logs.get_log(tp) is current,
            self._finished,
            current.config.file_delete_delay_ms / 1000,
            lambda: self.quota,
        )
        with self._lock:
            self._moves[tp] = mover
        mover.start()

    def stop_moves_in(self, log_dir: str) -> list[TopicPartition]:
        """A log dir failed: stop the moves into or out of it (their future logs are abandoned);
        returns the partitions whose future log was there."""
        with self._lock:
            movers = [
                m for m in self._moves.values() if log_dir in (m.destination, os.path.dirname(m.current.dir))
            ]
        for mover in movers:
            mover.shutdown()
        for mover in movers:
            mover.join(30)
        return sorted(m.tp for m in movers if m.destination == log_dir)

    def resume(self, tp: TopicPartition, current: Log, future: Log) -> None:
        """Carry on with a move found unfinished at start-up (its `-future` log was loaded)."""
        destination = os.path.dirname(future.dir)
        with self._lock:
            running = tp in self._moves  # a new AlterReplicaLogDirs came first: it wins
            if not running:
                mover = LogDirMover(
                    tp,
                    current,
                    future,
                    os.path.join(destination, str(tp)),
                    lambda: self._logs.get_log(tp) is current,
                    self._finished,
                    current.config.file_delete_delay_ms / 1000,
                    lambda: self.quota,
                )
                self._moves[tp] = mover
        if running:
            future.close()
            shutil.rmtree(future.dir, ignore_errors=True)
            return
        log.info(
            "[ReplicaAlterLogDirsThread] Resuming the move of %s to %s from offset %d",
            tp,
            destination,
            future.log_end_offset,
        )
        mover.start()

    def _finished(self, mover: LogDirMover, swapped: bool) -> None:
        with self._lock:
            if self._moves.get(mover.tp) is mover:
                del self._moves[mover.tp]

    def shutdown(self, syncer: Syncer = FSYNC_EACH) -> set[str]:
        """Stop every move, keeping its future log for the next start (closed with `syncer`);
        returns the dirs of the moves that did not stop in time: one may still write there, so
        they must not be marked clean."""
        with self._lock:
            movers = list(self._moves.values())
        for mover in movers:
            mover.shutdown(keep_future=True, syncer=syncer)
        for mover in movers:
            mover.join(30)
        return {d for m in movers if m.is_alive() for d in (m.destination, os.path.dirname(m.current.dir))}
