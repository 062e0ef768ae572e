"""The log manager's periodic tasks (retention, flush, checkpoints, producer id expiration),
scheduled like Kafka's.

They are scheduled on the event loop but run in executor threads: fsync and segment deletion
must never stall request handling.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("kafkapy.log.LogManager")

_NEVER = 2**62


class LogTasks:
    def __init__(self, config: Any, log_manager: Any, replica_manager: Any) -> None:
        self.config = config
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        c = self.config
        self._every(
            "kafka-log-retention",
            c.log_retention_check_interval_ms,
            self.log_manager.cleanup_logs,
            self._retention_done,
        )
        self._every("kafka-log-flusher", c.log_flush_scheduler_interval_ms, self.log_manager.flush_dirty_logs)
        self._every(
            "kafka-recovery-point-checkpoint",
            c.log_flush_offset_checkpoint_interval_ms,
            self.log_manager.checkpoint_recovery_points,
        )
        self._every(
            "kafka-log-start-offset-checkpoint",
            c.log_flush_start_offset_checkpoint_interval_ms,
            self.log_manager.checkpoint_log_start_offsets,
        )
        # Kafka runs this per log; one task over every log does the same work with one timer.
        expiration_ms = c.producer_id_expiration_ms
        self._every(
            "PeriodicProducerExpirationCheck",
            c.producer_id_expiration_check_interval_ms,
            lambda: self.log_manager.remove_expired_producers(expiration_ms),
        )
        self._every(
            "highwatermark-checkpoint",
            c.get("replica.high.watermark.checkpoint.interval.ms") or 5000,
            self.log_manager.checkpoint_high_watermarks,
        )

    def _retention_done(self, deleted: int) -> None:
        """Retention moved log start offsets (in a thread): followers' fetch sessions, which
        read only partitions marked as changed, read every partition once to tell them."""
        if deleted:
            self.replica_manager.fetch_session_watch.changed_everything()

    def _every(
        self,
        name: str,
        interval_ms: int | None,
        fn: Callable[[], Any],
        then: Callable[[Any], None] | None = None,
    ) -> None:
        """Run `fn` off the loop every `interval_ms`, and `then` with its result on the loop."""
        if interval_ms is None or interval_ms <= 0 or interval_ms >= _NEVER:
            return
        self._tasks.append(asyncio.ensure_future(self._loop(name, interval_ms / 1000, fn, then)))

    async def _loop(
        self, name: str, interval_s: float, fn: Callable[[], Any], then: Callable[[Any], None] | None
    ) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            try:
                result = await loop.run_in_executor(None, fn)
                if then is not None:
                    then(result)
            except Exception:
                log.exception("Uncaught exception in scheduled task '%s'", name)

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._tasks.clear()
