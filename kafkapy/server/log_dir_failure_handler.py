"""Kafka's LogDirFailureHandler: one thread that takes each failed log dir from the
LogDirFailureChannel and has the replica manager stop serving it.

The replica manager's state belongs to the event loop, so the handling runs there (as a
coroutine submitted from this thread); the thread waits for it, so failures are handled one
dir at a time and in the order they were reported.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine

from kafkapy.server.log.log_dir_failure_channel import LogDirFailureChannel

log = logging.getLogger("kafkapy.server.ReplicaManager")

# Long enough for the handling's ZooKeeper write; a handler that never ends must not hang shutdown.
HANDLING_TIMEOUT_S = 120.0


class LogDirFailureHandler(threading.Thread):
    def __init__(
        self,
        broker_id: int,
        channel: LogDirFailureChannel,
        handle: Callable[[str], Coroutine[object, object, None]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(name="LogDirFailureHandler", daemon=True)
        self._broker_id = broker_id
        self._channel = channel
        self._handle = handle
        self._loop = loop
        self._stopping = threading.Event()

    def initiate_shutdown(self) -> None:
        self._stopping.set()
        self._channel.close()

    def run(self) -> None:
        while not self._stopping.is_set():
            log_dir = self._channel.take_next_offline_log_dir()
            if log_dir is None or self._stopping.is_set():
                continue
            try:
                asyncio.run_coroutine_threadsafe(self._handle(log_dir), self._loop).result(HANDLING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - the next failed dir must still be handled
                log.exception(
                    "[ReplicaManager broker=%d] Error while handling the failure of log dir %s",
                    self._broker_id,
                    log_dir,
                )
