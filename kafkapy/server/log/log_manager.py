"""LogManager: every partition log of the broker, across its log dirs.

Each log dir is locked (`.lock`, flock) for the life of the broker, holds one directory per
partition (`<topic>-<partition>`) and three checkpoint files. A clean shutdown leaves a
`.kafka_cleanshutdown` marker; without it, the next start recovers every log from its
recovery point. Loading at start-up and closing at shutdown run on a pool of
num.recovery.threads.per.data.dir threads per log dir, as Kafka's do; the shutdown makes each
dir durable with one syncfs instead of a sync per file (see `shutdown`). Periodic work (flush,
retention, checkpoints, producer id expiration) is plain methods that the server schedules
on a background thread.

A log dir that fails (an OSError creating or locking it, loading it, or in any log operation
or checkpoint later) is reported to the LogDirFailureChannel; `handle_log_dir_failure` then
closes its logs without deleting them and leaves it out of every later placement, checkpoint
and shutdown marker. With no log dir left the broker halts, as Kafka's does.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from kafkapy.common.gc_pause import cyclic_gc_paused
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaStorageException
from kafkapy.server.log.cleaner.log_cleaner import CleanerConfig, LogCleaner
from kafkapy.server.log.durability import DEFERRED, Syncer, sync_filesystem
from kafkapy.server.log.epoch_checkpoint_writer import EpochCheckpointWriter
from kafkapy.server.log.log import Log, Scheduler, system_time_ms
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_dir_failure_channel import LogDirFailureChannel
from kafkapy.server.log.offset_checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    OffsetCheckpointFile,
)

logger = logging.getLogger("kafkapy.log.LogManager")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"


class LogDirLockedException(RuntimeError):
    """Another process (or LogManager) holds a log dir: two brokers must never share one."""


class LogManager:
    def __init__(
        self,
        log_dirs: list[str],
        default_config: LogConfig,
        topic_configs: Mapping[str, LogConfig] | None = None,
        *,
        time_ms: Callable[[], int] = system_time_ms,
        scheduler: Scheduler | None = None,
        recovery_threads_per_data_dir: int = 1,
        cleaner_config: CleanerConfig | None = None,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        """Create missing log dirs and lock them all; `startup()` loads the logs. A dir that
        cannot be created or locked is offline from the start (fatal when all are)."""
        if recovery_threads_per_data_dir < 1:
            raise ValueError(
                f"num.recovery.threads.per.data.dir must be at least 1: {recovery_threads_per_data_dir}"
            )
        self.recovery_threads_per_data_dir = recovery_threads_per_data_dir
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config
        self._topic_configs = dict(topic_configs or {})
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self._time_ms = time_ms
        self._scheduler = scheduler
        # Changed leader-epoch checkpoints: batched, one syncfs per dir (none without io threads).
        self._epoch_checkpoints = (
            EpochCheckpointWriter(scheduler, self._sync_dir_quietly) if scheduler is not None else None
        )
        self._logs: dict[TopicPartition, Log] = {}
        # AlterReplicaLogDirs for a replica not created yet: where its log goes once it is
        # (Kafka's preferredLogDirs), consumed by get_or_create_log.
        self._preferred_log_dirs: dict[TopicPartition, str] = {}
        # `-future` logs found at start-up: a log-dir move the last run did not finish, resumed
        # once the replica is hosted again (take_future_log), as Kafka's futureLogs are.
        self._future_logs: dict[TopicPartition, Log] = {}
        # Replicas moving to another of our dirs (AlterReplicaLogDirs); imported here because
        # the mover builds Logs and this module must stay importable without it.
        from kafkapy.server.log_dir_mover import LogDirMoves

        self.moves = LogDirMoves(self)
        self._lock = threading.Lock()
        # Set when the logs are about to close: an early write-back still running stops there.
        self._early_write_back_cut = threading.Event()
        # What each checkpoint file was last written with by us: {path: offsets}.
        self._checkpointed: dict[str, dict[TopicPartition, int]] = {}
        # Logs being created outside the lock, each with the event its waiters wait for.
        self._creating: dict[TopicPartition, threading.Event] = {}
        self._dir_locks: dict[str, int] = {}
        self.cleaner_config = cleaner_config  # None: no cleaner (tests of the log alone)
        self.cleaner: LogCleaner | None = None
        try:
            for log_dir in self.log_dirs:
                try:
                    os.makedirs(log_dir, exist_ok=True)
                    if not os.access(log_dir, os.R_OK | os.W_OK | os.X_OK):
                        raise PermissionError(f"{log_dir} is not a readable and writable directory")
                except OSError as e:
                    self.failure_channel.maybe_add_offline_log_dir(
                        log_dir, f"Failed to create or validate data directory {log_dir}", e
                    )
                    continue
                try:
                    self._dir_locks[log_dir] = _lock_dir(log_dir)
                except OSError as e:  # LogDirLockedException (another broker has it) stays fatal
                    self.failure_channel.maybe_add_offline_log_dir(
                        log_dir, f"Disk error while locking directory {log_dir}", e
                    )
            if not self.live_log_dirs:
                raise KafkaStorageException(
                    f"None of the specified log dirs from {', '.join(self.log_dirs)} can be created or validated"
                )
        except BaseException:
            self._release_locks()
            raise

    @property
    def live_log_dirs(self) -> list[str]:
        """The configured log dirs that have not failed, in configuration order."""
        offline = self.failure_channel.offline_dirs
        return [d for d in self.log_dirs if d not in offline]

    def is_log_dir_online(self, log_dir: str) -> bool:
        return log_dir in self.log_dirs and not self.failure_channel.has_offline_log_dir(log_dir)

    # -- lifecycle ------------------------------------------------------------------------------

    def had_clean_shutdown(self) -> bool:
        """Whether every log dir holds the clean shutdown marker (call before `startup`)."""
        return all(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE)) for d in self.live_log_dirs)

    def startup(self) -> None:
        """Load every log of every dir, the dirs side by side, each on its own thread pool.

        The first error is raised once every load has ended, except an I/O error, which takes
        its dir offline (Kafka's "Error while loading log dir"); a dir's clean shutdown marker
        goes only when all of its logs loaded.
        """
        pools = {d: self._recovery_pool(d) for d in self.live_log_dirs}
        # The load builds the broker's largest structure (every log, its segments and indexes):
        # without the cyclic collector walking it over and over as it grows (kafkapy.common.gc_pause).
        with cyclic_gc_paused():
            self._load_all(pools)
        if self.cleaner_config is not None and self.cleaner_config.enable_cleaner:
            self.cleaner = LogCleaner(
                self.cleaner_config, self.live_log_dirs, self.logs_by_topic_partition, self._time_ms
            )
            for log in self.all_logs():
                self._attach_cleaner(log)
            self.cleaner.startup()

    def _load_all(self, pools: dict[str, ThreadPoolExecutor]) -> None:
        """`startup`'s loads, each dir's on its pool, and what their outcome means for the dir."""
        try:
            loads: dict[str, tuple[list[Future[None]], str | None]] = {}
            errors: list[BaseException] = []
            for d in pools:
                try:
                    loads[d] = self._load_logs(d, pools[d])
                except OSError as e:
                    self.failure_channel.maybe_add_offline_log_dir(d, f"Error while loading log dir {d}", e)
            for d, (futures, marker) in loads.items():
                dir_errors = [e for e in (f.exception() for f in futures) if e is not None]
                io_errors = [e for e in dir_errors if isinstance(e, OSError)]
                if io_errors:
                    self.failure_channel.maybe_add_offline_log_dir(
                        d, f"Error while loading log dir {d}", io_errors[0]
                    )
                    self._drop_logs_in(d)
                errors += [e for e in dir_errors if not isinstance(e, OSError)]
                if marker is not None and not dir_errors:
                    os.unlink(marker)  # from now on a crash must lead to recovery
            if errors:
                raise errors[0]
            if not self.live_log_dirs:
                raise KafkaStorageException(
                    f"None of the specified log dirs from {', '.join(self.log_dirs)} can be loaded"
                )
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True, cancel_futures=True)

    def _attach_cleaner(self, log: Log) -> None:
        if self.cleaner is not None:
            log.cleaning_pause = lambda offset, log=log: self._cleaning_paused(log, offset)

    @contextlib.contextmanager
    def _cleaning_paused(self, log: Log, truncate_offset: int) -> Iterator[None]:
        """Around a truncation: abort any cleaning of the log, then move the cleaner checkpoint
        back to the truncation offset if it was past it (Kafka's truncateTo)."""
        cleaner = self.cleaner
        if cleaner is None:
            yield
            return
        tp = TopicPartition.from_dir_name(log.name)
        cleaner.abort_and_pause_cleaning(tp)
        try:
            yield
            cleaner.manager.maybe_truncate_checkpoint(log, tp, truncate_offset)
        finally:
            cleaner.resume_cleaning(tp)

    def _recovery_pool(self, log_dir: str) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(
            self.recovery_threads_per_data_dir, thread_name_prefix=f"log-recovery-{os.path.basename(log_dir)}"
        )

    def shutdown(self) -> None:
        """Flush and close every log, make each live dir durable with one syncfs, then write the
        checkpoints and the clean shutdown markers.

        The logs are written without a sync per file (DEFERRED: 10k logs cost ~5 synchronous
        writes each that way, ~0.6 ms a log on one recovery thread); one syncfs per dir then
        writes all of it back. Only after it has succeeded are the recovery points checkpointed and the
        marker written, so nothing says "clean" before the data it covers is on disk; a dir
        whose syncfs fails is taken offline and gets neither, and a crash before that point
        leaves no marker, so the next start recovers as after any crash.
        """
        logger.info("Shutting down.")
        if self.cleaner is not None:
            self.cleaner.shutdown()
            self.cleaner = None
        # Leaves unfinished future logs for the next start to resume; they are loaded as clean
        # when the marker is there, so their writes must be covered by the syncfs below too.
        busy_dirs = self.moves.shutdown(syncer=DEFERRED)
        with self._lock:
            logs = dict(self._logs)
            pending = list(self._future_logs.items())  # not resumed yet: closed with the others
            self._future_logs.clear()
        failed_dirs: set[str] = set()
        for log_dir in busy_dirs:
            logger.warning(
                "A log-dir move in %s did not stop; the dir is left without a clean shutdown marker", log_dir
            )
            failed_dirs.add(log_dir)
        live_dirs = self.live_log_dirs
        pools = {d: self._recovery_pool(d) for d in live_dirs}
        try:
            by_dir: dict[str, list[tuple[TopicPartition, Log]]] = {d: [] for d in pools}
            for tp, log in [*logs.items(), *pending]:
                in_dir = by_dir.get(os.path.dirname(log.dir))
                if in_dir is None:  # a log left in a dir that failed meanwhile
                    log.close_handlers()
                    continue
                in_dir.append((tp, log))
            # One job per recovery thread, each closing its share of the dir's logs: a future
            # per log (Kafka's one job per log) costs more than the close itself here, as the
            # waiting thread and the closing one hand the GIL back and forth for every log
            # (10k empty logs: ~1 s of handoffs for ~0.7 s of closing).
            threads = self.recovery_threads_per_data_dir
            jobs = [
                pools[d].submit(_flush_and_close_all, in_dir[i::threads], DEFERRED)
                for d, in_dir in by_dir.items()
                for i in range(threads)
                if in_dir[i::threads]
            ]
            for job in jobs:
                for tp, log, error in job.result():
                    logger.error("Error while closing log %s", tp, exc_info=error)
                    failed_dirs.add(os.path.dirname(log.dir))
            # Every dir is synced, a dir with a failed close too: its checkpoints are written.
            # Side by side, each on its dir's recovery thread (dirs on separate disks overlap).
            syncs = [pools[d].submit(self._sync_dir, d) for d in self.live_log_dirs if d in pools]
            for sync in syncs:
                sync.result()
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True)
        # A dir whose syncfs failed is offline now: no checkpoint or marker below covers it.
        self.checkpoint_recovery_points(logs)
        self.checkpoint_log_start_offsets(logs)
        self.checkpoint_high_watermarks(logs)
        for log_dir in self.live_log_dirs:
            if log_dir not in failed_dirs:
                logger.debug("Writing clean shutdown marker at %s", log_dir)
                with open(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), "w"):
                    pass
        with self._lock:
            self._logs.clear()
        self._release_locks()
        logger.info("Shutdown complete.")

    def write_back_early(self) -> None:
        """Start the close's work while a stopping broker waits for the controller to move its
        leadership away (seconds at thousands of partitions): write each log's end snapshot now
        (the close then finds it there and writes none, unless the log moved on meanwhile), then
        write back what the live dirs hold (one syncfs each, an error taking the dir offline as
        at shutdown), so that the syncfs of `shutdown` finds little left. Nothing is marked
        clean here; the final syncfs still comes before the checkpoints and marker.
        `cut_early_write_back` stops it between two logs: what is left, the close does."""
        cut = self._early_write_back_cut
        live = set(self.live_log_dirs)
        with self._lock:
            logs = list(self._logs.values())
        for log in logs:
            if cut.is_set():
                return
            if os.path.dirname(log.dir) in live:
                log.write_end_snapshot_early(syncer=DEFERRED)  # covered by the syncfs below
        for log_dir in self.live_log_dirs:
            if cut.is_set():
                return
            self._sync_dir(log_dir)

    def cut_early_write_back(self) -> None:
        """The logs are about to close: a `write_back_early` still running stops at the next log."""
        self._early_write_back_cut.set()

    def _sync_dir(self, log_dir: str) -> None:
        """syncfs the filesystem of `log_dir` through its `.lock` descriptor, opened at start-up,
        so that a write-back error since then (the kernel's flusher losing a page of an
        unflushed segment before the shutdown) fails it too; an error takes the dir offline."""
        started = self._time_ms()
        if self._sync_dir_quietly(log_dir):
            logger.info(
                "Flushed the logs in %s to disk (syncfs) in %d ms", log_dir, self._time_ms() - started
            )

    def _sync_dir_quietly(self, log_dir: str) -> bool:
        """`_sync_dir` without its log line, for the batched epoch checkpoints: whether the
        dir's filesystem was synced (False for a dir offline or released meanwhile)."""
        with self._lock:
            lock_fd = self._dir_locks.get(log_dir)
            # A descriptor of our own: shutdown or a dir failure may close the lock's meanwhile.
            fd = os.dup(lock_fd) if lock_fd is not None else None
        if fd is None:
            return False
        try:
            sync_filesystem(fd)
        except OSError as e:
            self.failure_channel.maybe_add_offline_log_dir(
                log_dir, f"Error while flushing logs to disk in dir {log_dir}", e
            )
            return False
        finally:
            os.close(fd)
        return True

    def _release_locks(self, log_dir: str | None = None) -> None:
        with self._lock:  # `_sync_dir_quietly` dups a lock's descriptor under it
            for d, fd in list(self._dir_locks.items()):
                if log_dir is None or d == log_dir:
                    with contextlib.suppress(OSError):
                        fcntl.flock(fd, fcntl.LOCK_UN)
                        os.close(fd)
                    del self._dir_locks[d]

    # -- a failed log dir -----------------------------------------------------------------------

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """Stop serving `log_dir` (Kafka's LogManager.handleLogDirFailure): its logs and future
        logs are closed without being flushed or deleted, and it leaves placement, checkpoints and
        cleaning. Halts the process when no log dir is left."""
        logger.warning("Stopping serving logs in dir %s", log_dir)
        if not self.live_log_dirs:
            logger.critical(
                "Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_dirs)
            )
            halt(1)
        moved = self.moves.stop_moves_in(log_dir)
        offline = self._drop_logs_in(log_dir)
        logger.warning(
            "Logs for partitions %s are offline and logs for future partitions %s are offline due to failure on "
            "log directory %s", ",".join(map(str, offline)), ",".join(map(str, moved)), log_dir,
        )  # fmt: skip
        self._release_locks(log_dir)

    def _drop_logs_in(self, log_dir: str) -> list[TopicPartition]:
        with self._lock:
            offline = sorted(tp for tp, log in self._logs.items() if os.path.dirname(log.dir) == log_dir)
            logs = [self._logs.pop(tp) for tp in offline]
            for tp, dir_ in list(self._preferred_log_dirs.items()):
                if dir_ == log_dir:
                    del self._preferred_log_dirs[tp]
        if self.cleaner is not None:
            self.cleaner.manager.handle_log_dir_failure(log_dir)
            for tp in offline:
                self.cleaner.manager.abort_cleaning(tp)  # no checkpoint update: the dir is gone
        for log in logs:
            log.close_handlers()
        return offline

    # -- loading --------------------------------------------------------------------------------

    def _load_logs(self, log_dir: str, pool: ThreadPoolExecutor) -> tuple[list[Future[None]], str | None]:
        """Submit the load of each log of `log_dir`; returns the futures and the clean
        shutdown marker to remove once they all succeed (None after an unclean shutdown)."""
        marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        if clean:
            logger.info("Skipping recovery for all logs in %s since clean shutdown file was found", log_dir)
        else:
            logger.info(
                "Attempting recovery for all logs in %s since no clean shutdown file was found", log_dir
            )
        recovery_points = _read_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT)
        start_offsets = _read_checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = _read_checkpoint(log_dir, REPLICATION_CHECKPOINT)
        with os.scandir(log_dir) as entries:  # the entries' types come with the listing: no stat each
            names = sorted(e.name for e in entries if e.is_dir())
        jobs: list[tuple[TopicPartition, str, bool]] = []
        for name in names:
            path = os.path.join(log_dir, name)
            if name.endswith(DELETE_DIR_SUFFIX):
                logger.info("Deleting %s, a log marked for deletion before the last shutdown", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            future = name.endswith(FUTURE_DIR_SUFFIX)
            try:
                # A future log is named `<topic>-<partition>.<uuid>-future`.
                jobs.append(
                    (TopicPartition.from_dir_name(name.rsplit(".", 1)[0] if future else name), path, future)
                )
            except ValueError as e:
                logger.warning("Skipping %s: %s", path, e)
        loaded = _Counter()

        def load(tp: TopicPartition, path: str, future: bool) -> None:
            logger.debug("Loading log '%s'", os.path.basename(path))  # (debug in Kafka too: 10k lines)
            started = self._time_ms()
            # A future log has no checkpoint entries (they are kept per partition for the current
            # log): it is recovered from its start after an unclean shutdown.
            log = Log(
                path, self.config_for(tp.topic), 0 if future else recovery_points.get(tp, 0),
                0 if future else start_offsets.get(tp, 0),
                had_clean_shutdown=clean, time_ms=self._time_ms, scheduler=self._scheduler,
                epoch_checkpoints=self._epoch_checkpoints,
            )  # fmt: skip
            log.failure_channel = self.failure_channel
            if tp in high_watermarks and not future:
                log.high_watermark = high_watermarks[tp]
            with self._lock:
                logs = self._future_logs if future else self._logs
                if tp in logs:
                    raise RuntimeError(
                        f"Duplicate log directories for {tp} are found in both {logs[tp].dir} and {path}"
                    )
                logs[tp] = log
            logger.info(
                "Completed load of log %s with %d segments, log start offset %d and log end offset %d in %d ms "
                "(%d/%d loaded in %s)",
                tp, log.number_of_segments, log.log_start_offset, log.log_end_offset, self._time_ms() - started,
                loaded.next(), len(jobs), log_dir,
            )  # fmt: skip

        futures = [pool.submit(load, tp, path, future) for tp, path, future in jobs]
        return futures, marker if clean else None

    # -- logs -----------------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def get_log(self, tp: TopicPartition) -> Log | None:
        with self._lock:
            return self._logs.get(tp)

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def logs_by_topic_partition(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def get_or_create_log(
        self, tp: TopicPartition, config: LogConfig | None = None, *, is_new: bool = True
    ) -> Log:
        """The partition's log, created in the preferred or least loaded live dir if absent.

        `is_new` is LeaderAndIsr's flag: a replica that existed before (is_new false) is not
        created again while a log dir is offline, since its data may be in that dir (Kafka's
        rule: an empty copy elsewhere could become leader and lose it)."""
        while True:
            with self._lock:
                log = self._logs.get(tp)
                if log is not None:
                    return log
                creating = self._creating.get(tp)
                if creating is None:
                    offline = sorted(self.failure_channel.offline_dirs)
                    if not is_new and offline:
                        raise KafkaStorageException(
                            f"Can not create log for {tp} because log directories {','.join(offline)} are offline"
                        )
                    if config is not None:
                        self._topic_configs[tp.topic] = config
                    config = self.config_for(tp.topic)
                    preferred = self._preferred_log_dirs.pop(tp, None)
                    log_dir = (
                        preferred
                        if preferred is not None and self.is_log_dir_online(preferred)
                        else self._next_log_dir()
                    )
                    self._creating[tp] = threading.Event()
                    break
            creating.wait()  # another thread is creating it: take theirs (or try again if it failed)
        # The files are made outside the lock, so that LeaderAndIsr can create thousands of logs
        # on several threads (see ReplicaManager.create_missing_logs).
        path = os.path.join(log_dir, str(tp))
        try:
            log = self._create_log(tp, path, log_dir, config)
            with self._lock:
                if not self.is_log_dir_online(log_dir):
                    log.close_handlers()  # the dir failed meanwhile: its logs are offline
                    raise KafkaStorageException(f"Error while creating log for {tp} in dir {log_dir}")
                self._logs[tp] = log
                self._attach_cleaner(log)
        finally:
            with self._lock:
                self._creating.pop(tp).set()
        logger.info(
            "Created log for partition %s in %s with properties %s", tp, path, config.overrides(LogConfig())
        )
        return log

    def _create_log(self, tp: TopicPartition, path: str, log_dir: str, config: LogConfig) -> Log:
        try:
            log = Log(
                path, config, had_clean_shutdown=not os.path.exists(path),
                time_ms=self._time_ms, scheduler=self._scheduler, epoch_checkpoints=self._epoch_checkpoints,
            )  # fmt: skip
        except OSError as e:
            message = f"Error while creating log for {tp} in dir {log_dir}"
            self.failure_channel.maybe_add_offline_log_dir(log_dir, message, e)
            raise KafkaStorageException(f"{message}: {e}") from e
        log.failure_channel = self.failure_channel
        return log

    def take_future_log(self, tp: TopicPartition) -> Log | None:
        """The future log of `tp` loaded at start-up, handed over once to resume its move."""
        with self._lock:
            return self._future_logs.pop(tp, None)

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, log_dir: str) -> None:
        """Kafka's maybeUpdatePreferredLogDir: remembered only while `tp` has no log here."""
        with self._lock:
            if tp not in self._logs:
                self._preferred_log_dirs[tp] = log_dir

    def _next_log_dir(self) -> str:
        """The log dir with the fewest partitions, like Kafka's placement of a new log."""
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageException(f"No log directories available. Tried {', '.join(self.log_dirs)}")
        if len(live) == 1:
            return live[0]  # no count over every log (thousands of creations in one LeaderAndIsr)
        counts = dict.fromkeys(live, 0)
        for log in self._logs.values():
            parent = os.path.dirname(log.dir)
            if parent in counts:
                counts[parent] += 1
        return min(live, key=lambda d: counts[d])

    def delete_log(self, tp: TopicPartition) -> Log | None:
        """Rename the partition's dir to `<tp>.<uuid>-delete`, then remove it (a crash in between
        leaves a dir that the next start deletes)."""
        with self._lock:
            log = self._logs.pop(tp, None)
            future = self._future_logs.pop(tp, None)
        if future is not None:  # an unfinished move of a replica now deleted
            future.close_handlers()
            shutil.rmtree(future.dir, ignore_errors=True)
        if log is None:
            return None
        log_dir = os.path.dirname(log.dir)
        if self.cleaner is not None:
            # Deletion aborts a cleaning first: it would write into the renamed directory.
            self.cleaner.abort_cleaning(tp, log_dir)
        log.rename_dir(os.path.join(log_dir, f"{tp}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"))
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        log.delete()
        logger.info("Deleted log for partition %s in %s", tp, log.dir)
        return log

    def update_config(self, topic: str, config: LogConfig) -> None:
        with self._lock:
            self._topic_configs[topic] = config
            logs = [log for tp, log in self._logs.items() if tp.topic == topic]
        for log in logs:
            log.update_config(config)

    # -- periodic tasks -------------------------------------------------------------------------

    def flush_dirty_logs(self) -> None:
        """fsync the logs whose flush.ms has passed since their last flush."""
        now = self._time_ms()
        for tp, log in self.logs_by_topic_partition().items():
            try:
                if now - log.last_flush_time >= log.config.flush_ms:
                    log.flush()
            except KafkaStorageException:
                pass  # its dir failed: reported already, the failure handler takes it offline
            except Exception:
                logger.exception("Error flushing topic %s", tp.topic)

    def remove_expired_producers(self, expiration_ms: int) -> int:
        """producer.id.expiration.ms over every log; returns the number of producer ids dropped."""
        total = 0
        for tp, log in self.logs_by_topic_partition().items():
            try:
                total += log.remove_expired_producers(expiration_ms)
            except KafkaStorageException:
                pass
            except Exception:
                logger.exception("Error expiring producer ids of %s", tp)
        return total

    def cleanup_logs(self) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        total = 0
        for tp, log in self.logs_by_topic_partition().items():
            try:
                total += log.delete_old_segments()
            except KafkaStorageException:
                pass
            except Exception:
                logger.exception("Error applying retention to %s", tp)
        return total

    def checkpoint_recovery_points(self, logs: dict[TopicPartition, Log] | None = None) -> None:
        logs = self.logs_by_topic_partition() if logs is None else logs
        for log_dir in self.live_log_dirs:
            self._write_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT, logs, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self, logs: dict[TopicPartition, Log] | None = None) -> None:
        logs = self.logs_by_topic_partition() if logs is None else logs
        for log_dir in self.live_log_dirs:
            # Only logs whose start moved past their first segment need it, like Kafka.
            self._write_checkpoint(
                log_dir, LOG_START_OFFSET_CHECKPOINT, logs, lambda log: log.log_start_offset,
                lambda log: log.log_start_offset > log.log_segments[0].base_offset,
            )  # fmt: skip

    def checkpoint_high_watermarks(self, logs: dict[TopicPartition, Log] | None = None) -> None:
        logs = self.logs_by_topic_partition() if logs is None else logs
        for log_dir in self.live_log_dirs:
            self._write_checkpoint(log_dir, REPLICATION_CHECKPOINT, logs, lambda log: log.high_watermark)

    def _write_checkpoint(
        self,
        log_dir: str,
        name: str,
        logs: dict[TopicPartition, Log],
        value: Callable[[Log], int],
        include: Callable[[Log], bool] = lambda log: True,
    ) -> None:
        offsets = {
            tp: value(log) for tp, log in logs.items() if os.path.dirname(log.dir) == log_dir and include(log)
        }
        path = os.path.join(log_dir, name)
        if self._checkpointed.get(path) == offsets:
            # Unchanged since our last write (an idle broker's high watermarks every 5 s): the
            # file already says it, so no rewrite and fsync of 10k lines.
            return
        try:
            OffsetCheckpointFile(path).write(offsets)
            self._checkpointed[path] = offsets
        except OSError as e:
            self.failure_channel.maybe_add_offline_log_dir(
                log_dir, f"Disk error while writing to {name} file in directory {log_dir}", e
            )


class _Counter:
    """The "(n/total loaded)" count shared by the loading threads of one dir."""

    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._value += 1
            return self._value


def halt(status: int) -> None:
    """Kafka's Exit.halt: end the process now, without shutdown hooks (the logs are unusable),
    after the log handlers have written what they hold."""
    logging.shutdown()
    os._exit(status)


def _flush_and_close(log: Log, syncer: Syncer) -> None:
    log.flush(syncer=syncer)
    log.close(syncer=syncer)


def _flush_and_close_all(
    logs: list[tuple[TopicPartition, Log]], syncer: Syncer
) -> list[tuple[TopicPartition, Log, BaseException]]:
    """Flush and close each log; the ones that failed, with their errors (one failing log
    must not leave the others open)."""
    failed: list[tuple[TopicPartition, Log, BaseException]] = []
    for tp, log in logs:
        try:
            _flush_and_close(log, syncer)
        except Exception as e:  # noqa: BLE001 - reported by the caller, per log
            failed.append((tp, log, e))
    return failed


def _lock_dir(log_dir: str) -> int:
    fd = os.open(os.path.join(log_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLockedException(
            f"Failed to acquire lock on file {LOCK_FILE} in {log_dir}. A Kafka instance in another process "
            "or thread is using this directory."
        ) from None
    return fd


def _read_checkpoint(log_dir: str, name: str) -> dict[TopicPartition, int]:
    try:
        return OffsetCheckpointFile(os.path.join(log_dir, name)).read()
    except OSError as e:
        logger.warning(
            "Error occurred while reading %s of directory %s, resetting it to 0: %s", name, log_dir, e
        )
        return {}
