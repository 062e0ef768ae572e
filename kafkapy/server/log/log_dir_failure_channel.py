"""LogDirFailureChannel: where an I/O error on a log dir is reported, once per dir.

Any thread that hits an OSError while touching a log dir (an append on the event loop, a
replica fetcher's append, a flush or checkpoint on an io thread, a log-dir move) reports the
dir here. The first report of a dir logs the error and queues the dir; the broker's
LogDirFailureHandler thread takes it from the queue and stops serving every replica in it
(ReplicaManager.handle_log_dir_failure). Later reports of the same dir only log, as Kafka's
channel does, so one failing disk is handled once however many logs trip over it.
"""

from __future__ import annotations

import logging
import queue
import threading

log = logging.getLogger("kafkapy.server.LogDirFailureChannel")


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Read without the lock on the append path (an empty set costs one truth test there).
        self.offline_dirs: frozenset[str] = frozenset()
        self._queue: queue.Queue[str | None] = queue.Queue()

    def has_offline_log_dir(self, log_dir: str) -> bool:
        return log_dir in self.offline_dirs

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, error: BaseException | None) -> None:
        """Log `message` with the error; queue `log_dir` for the handler the first time only."""
        log.error(message, exc_info=error)
        with self._lock:
            if log_dir in self.offline_dirs:
                return
            self.offline_dirs = self.offline_dirs | {log_dir}
        self._queue.put(log_dir)

    def take_next_offline_log_dir(self, timeout: float | None = None) -> str | None:
        """Blocking: the next dir to take offline; None when the channel is closed (or on timeout)."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        """Wake the handler so it can stop."""
        self._queue.put(None)
