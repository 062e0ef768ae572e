"""Throttler: keeps the cleaner's I/O under log.cleaner.io.max.bytes.per.second (Kafka's Throttler).

The rate is measured over check intervals of 300 ms; when an interval ran faster than the
bound, the thread sleeps as long as the bytes should have taken. Sleeping also hands the GIL
to the event loop, which is the point of the bound in kafkapy (see DESIGN.md).
"""

from __future__ import annotations

import threading
import time

CHECK_INTERVAL_S = 0.3


class Throttler:
    def __init__(self, desired_rate_per_s: float, stop: threading.Event | None = None) -> None:
        self.desired_rate_per_s = desired_rate_per_s
        self._stop = stop or threading.Event()
        self._period_start = time.monotonic()
        self._observed = 0.0
        self.throttled_s = 0.0
        self._lock = threading.Lock()  # one throttle for every cleaner thread, as in Kafka

    def maybe_throttle(self, observed: int) -> None:
        sleep_s = 0.0
        with self._lock:
            now = time.monotonic()
            if self._observed == 0 and now - self._period_start >= CHECK_INTERVAL_S:
                # The first bytes after an idle spell open a new period: time the cleaner spent
                # idle is no credit, or a short cleaning after a long pause ran unthrottled.
                self._period_start = now
            self._observed += observed
            elapsed = now - self._period_start
            # Checked every interval, or sooner once an interval's worth of bytes went by: a
            # burst shorter than the interval (a small log cleaned in 0.1 s) is held to the rate too.
            if elapsed < CHECK_INTERVAL_S and self._observed < self.desired_rate_per_s * CHECK_INTERVAL_S:
                return
            if self._observed > self.desired_rate_per_s * elapsed:
                sleep_s = self._observed / self.desired_rate_per_s - elapsed
                self.throttled_s += max(sleep_s, 0.0)
            self._period_start = now + max(sleep_s, 0.0)
            self._observed = 0.0
        if sleep_s > 0:
            self._stop.wait(sleep_s)  # a shutdown does not wait the sleep out
