"""LogCleaner: the cleaner threads (Kafka's LogCleaner and CleanerThread).

`log.cleaner.threads` plain threads, never the event loop. Each repeatedly takes the
filthiest compacted log from the LogCleanerManager, cleans it, records where it got to in
`cleaner-offset-checkpoint` and logs a summary to log-cleaner.log; with nothing to clean it
sleeps `log.cleaner.backoff.ms`. Each thread owns an offset map of
`log.cleaner.dedupe.buffer.size / log.cleaner.threads` bytes, and all share one throttle of
`log.cleaner.io.max.bytes.per.second`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.cleaner.cleaner import Cleaner, CleanerStats, LogCleaningAbortedError
from kafkapy.server.log.cleaner.cleaner_manager import LogCleanerManager
from kafkapy.server.log.cleaner.offset_map import SkimpyOffsetMap
from kafkapy.server.log.cleaner.throttler import Throttler
from kafkapy.server.log.log import Log
from kafkapy.server.log.segment_swap import SegmentsChangedError

logger = logging.getLogger("kafkapy.log.LogCleaner")

INT_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_io_bytes_per_second: float = 1.7976931348623157e308
    backoff_ms: int = 15000
    enable_cleaner: bool = True

    @classmethod
    def from_kafka_config(cls, config: Any) -> CleanerConfig:
        return cls(
            num_threads=config.get("log.cleaner.threads"),
            dedupe_buffer_size=config.get("log.cleaner.dedupe.buffer.size"),
            dedupe_buffer_load_factor=config.get("log.cleaner.io.buffer.load.factor"),
            io_buffer_size=config.get("log.cleaner.io.buffer.size"),
            max_io_bytes_per_second=config.get("log.cleaner.io.max.bytes.per.second"),
            backoff_ms=config.get("log.cleaner.backoff.ms"),
            enable_cleaner=config.get("log.cleaner.enable"),
        )


class LogCleaner:
    def __init__(
        self,
        config: CleanerConfig,
        log_dirs: list[str],
        logs: Callable[[], dict[TopicPartition, Log]],
        time_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.config = config
        self.manager = LogCleanerManager(log_dirs, logs, time_ms)
        self._stop = threading.Event()
        self._throttler = Throttler(config.max_io_bytes_per_second, self._stop)
        self._time_ms = time_ms
        self._threads: list[threading.Thread] = []
        self.cleanings = 0  # completed cleanings, for tests and metrics

    def startup(self) -> None:
        logger.info("Starting the log cleaner")
        for i in range(self.config.num_threads):
            thread = threading.Thread(
                target=self._run, args=(i,), name=f"kafka-log-cleaner-thread-{i}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def shutdown(self) -> None:
        logger.info("Shutting down the log cleaner.")
        self._stop.set()
        with self.manager._lock:
            self.manager._lock.notify_all()
        for thread in self._threads:
            thread.join()
        self._threads = []

    def wake(self) -> None:
        """Tests: skip the rest of the backoff (nothing else needs it)."""
        with self.manager._lock:
            self.manager._lock.notify_all()

    # -- hooks for the log manager --------------------------------------------------------------

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        self.manager.abort_and_pause_cleaning(tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        self.manager.resume_cleaning(tp)

    def abort_cleaning(self, tp: TopicPartition, log_dir: str) -> None:
        self.manager.abort_cleaning(tp, log_dir)

    # -- the threads ----------------------------------------------------------------------------

    def _run(self, cleaner_id: int) -> None:
        memory = min(self.config.dedupe_buffer_size // max(self.config.num_threads, 1), INT_MAX)
        offset_map = SkimpyOffsetMap(memory)
        cleaner = Cleaner(
            cleaner_id, offset_map, self.config.io_buffer_size // 2, self.config.dedupe_buffer_load_factor,
            self._throttler, self._check_done, self._time_ms,
        )  # fmt: skip
        while not self._stop.is_set():
            try:
                cleaned = self._clean_filthiest_log(cleaner)
            except Exception:
                logger.exception("Cleaner %d: unexpected error", cleaner_id)
                cleaned = False
            if not cleaned:
                with self.manager._lock:
                    if not self._stop.is_set():
                        self.manager._lock.wait(self.config.backoff_ms / 1000)
        logger.info("Cleaner %d: Stopped", cleaner_id)

    def _check_done(self, log: Log) -> None:
        if self._stop.is_set():
            raise LogCleaningAbortedError("The log cleaner is shutting down")
        self.manager.check_cleaning_aborted(log)

    def _clean_filthiest_log(self, cleaner: Cleaner) -> bool:
        to_clean = self.manager.grab_filthiest_compacted_log()
        if to_clean is None:
            return False
        log = to_clean.log
        tp = TopicPartition.from_dir_name(log.name)
        log_dir = os.path.dirname(log.dir)
        end_offset: int | None = None
        stats: CleanerStats | None = None
        try:
            end_offset, stats = cleaner.clean(to_clean)
        except (LogCleaningAbortedError, SegmentsChangedError) as e:
            logger.info("Cleaner %d: Cleaning of log %s aborted: %s", cleaner.id, log.name, e)
        except OSError as e:
            # The disk under the log failed: the dir goes offline (Kafka's cleaner reports it the same way).
            if log.failure_channel is not None:
                log.failure_channel.maybe_add_offline_log_dir(
                    log_dir, f"Failed to clean up log for {tp} in dir {log_dir} due to IOException", e
                )
            else:
                logger.exception("Cleaner %d: I/O error cleaning log %s", cleaner.id, log.name)
        except Exception:
            logger.exception(
                "Cleaner %d: Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as uncleanable",
                cleaner.id, log.name, tp,
            )  # fmt: skip
            self.manager.mark_uncleanable(tp)
        finally:
            self.manager.done_cleaning(tp, log_dir, end_offset)
        if end_offset is not None and stats is not None:
            # Counted once its progress is checkpointed and its summary logged: whoever waits on
            # the count sees both.
            self._record_stats(cleaner.id, log.name, to_clean.first_dirty_offset, end_offset, stats)
            self.cleanings += 1
        return True

    def _record_stats(self, cleaner_id: int, name: str, start: int, end: int, stats: CleanerStats) -> None:
        def mb(n: float) -> float:
            return n / (1024 * 1024)

        total, index = stats.elapsed_s, stats.elapsed_index_s
        clean_s = max(total - index, 1e-9)
        read, written = max(stats.bytes_read, 1), stats.bytes_written
        messages_read = max(stats.messages_read, 1)
        logger.info(
            "\n\tLog cleaner thread %d cleaned log %s (dirty section = [%d, %d])\n"
            "\t%,.1f MB of log processed in %,.1f seconds (%,.1f MB/sec).\n"
            "\tIndexed %,.1f MB in %.1f seconds (%,.1f Mb/sec, %.1f%% of total time)\n"
            "\tBuffer utilization: %.1f%%\n"
            "\tCleaned %,.1f MB in %.1f seconds (%,.1f Mb/sec, %.1f%% of total time)\n"
            "\tStart size: %,.1f MB (%,d messages)\n"
            "\tEnd size: %,.1f MB (%,d messages)\n"
            "\t%.1f%% size reduction (%.1f%% fewer messages)\n".replace("%,", "%"),
            cleaner_id, name, start, end,
            mb(stats.bytes_read), total, mb(stats.bytes_read) / total,
            mb(stats.map_bytes_read), index, mb(stats.map_bytes_read) / index, 100 * index / total,
            100 * stats.buffer_utilization,
            mb(stats.bytes_read), clean_s, mb(stats.bytes_read) / clean_s, 100 * clean_s / total,
            mb(stats.bytes_read), stats.messages_read,
            mb(written), stats.messages_written,
            100 * (1 - written / read), 100 * (1 - stats.messages_written / messages_read),
        )  # fmt: skip
