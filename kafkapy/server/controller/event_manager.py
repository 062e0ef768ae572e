"""ControllerEventManager: one queue, one thread, every controller event processed in order.

Like Kafka's ControllerEventManager, this is what makes the controller lock-free: ZooKeeper
callbacks and API handlers only `put` events; the thread calls `processor.process(event)` one at
a time. `clear_and_put` drops pending work (on session expiry), giving each dropped event to
`processor.preempt` so waiters (controlled shutdown futures) are answered instead of hanging.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Protocol

from kafkapy.server.controller.events import ControllerEvent, ShutdownEventThread

log = logging.getLogger("kafkapy.controller")


class EventProcessor(Protocol):
    def process(self, event: ControllerEvent) -> None: ...

    def preempt(self, event: ControllerEvent) -> None: ...


class QueuedEvent:
    __slots__ = ("event", "enqueue_time", "_processing_started", "_done")

    def __init__(self, event: ControllerEvent) -> None:
        self.event = event
        self.enqueue_time = time.monotonic()
        self._processing_started = False
        self._done = threading.Event()

    def process(self, processor: EventProcessor) -> None:
        if self._processing_started:
            return
        self._processing_started = True
        try:
            processor.process(self.event)
        finally:
            self._done.set()

    def preempt(self, processor: EventProcessor) -> None:
        if self._processing_started:
            return
        self._processing_started = True
        try:
            processor.preempt(self.event)
        finally:
            self._done.set()

    def await_processing(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class ControllerEventManager:
    def __init__(self, controller_id: int, processor: EventProcessor) -> None:
        self._controller_id = controller_id
        self._processor = processor
        self._queue: queue.Queue[QueuedEvent] = queue.Queue()
        # Guards only put/clear so that clear_and_put is atomic against concurrent puts;
        # controller state itself is never touched outside the event thread.
        self._put_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name=f"controller-event-thread-{controller_id}", daemon=True
        )
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def put(self, event: ControllerEvent) -> QueuedEvent:
        queued = QueuedEvent(event)
        with self._put_lock:
            if self._closed and not isinstance(event, ShutdownEventThread):
                # After close nobody would process it; answer waiters right away.
                queued.preempt(self._processor)
                return queued
            self._queue.put(queued)
        return queued

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        with self._put_lock:
            while True:
                try:
                    pending = self._queue.get_nowait()
                except queue.Empty:
                    break
                pending.preempt(self._processor)
            queued = QueuedEvent(event)
            if self._closed:
                queued.preempt(self._processor)
            else:
                self._queue.put(queued)
            return queued

    def is_empty(self) -> bool:
        return self._queue.empty()

    def close(self, timeout: float = 30.0) -> None:
        with self._put_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(QueuedEvent(ShutdownEventThread()))
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        # Anything still queued behind the shutdown marker is answered, not dropped silently.
        while True:
            try:
                self._queue.get_nowait().preempt(self._processor)
            except queue.Empty:
                break

    def _run(self) -> None:
        log.info("[ControllerEventThread controllerId=%d] Starting", self._controller_id)
        while True:
            queued = self._queue.get()
            if isinstance(queued.event, ShutdownEventThread):
                queued._done.set()
                break
            try:
                queued.process(self._processor)
            except Exception:
                # One failing event must not kill the controller; Kafka logs and continues too.
                log.exception(
                    "[ControllerEventThread controllerId=%d] Uncaught error processing event %s",
                    self._controller_id,
                    queued.event,
                )
        log.info("[ControllerEventThread controllerId=%d] Stopped", self._controller_id)
