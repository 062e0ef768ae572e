"""Client metrics in Kafka's shape: sampled rates, averages and maxima over recent windows.

Kafka's clients keep `metrics.num.samples` (2) samples of `metrics.sample.window.ms` (30 s) per
stat and report over the samples still current; a rate divides by the time they cover. Here
each Stat records (value) under a lock (the sender or fetcher thread records, the application
reads), and `ClientMetrics.snapshot()` returns kafka-python's shape:
{group: {metric name: value}}.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

SAMPLE_WINDOW_S = 30.0
NUM_SAMPLES = 2


class _Sample:
    __slots__ = ("start", "count", "total", "max")

    def __init__(self, start: float) -> None:
        self.start = start
        self.count = 0
        self.total = 0.0
        self.max = -math.inf


class Stat:
    """One measured quantity: its samples give Kafka's -rate, -avg, -max; `total` its -total."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: list[_Sample] = []
        self.total = 0.0
        self.count = 0
        self._created = clock()

    def record(self, value: float = 1.0) -> None:
        now = self._clock()
        with self._lock:
            current = self._samples[-1] if self._samples else None
            if current is None or now - current.start >= SAMPLE_WINDOW_S:
                current = _Sample(now)
                self._samples.append(current)
                del self._samples[:-NUM_SAMPLES]
            current.count += 1
            current.total += value
            if value > current.max:
                current.max = value
            self.total += value
            self.count += 1

    def _current(self, now: float) -> list[_Sample]:
        return [s for s in self._samples if now - s.start < SAMPLE_WINDOW_S * NUM_SAMPLES]

    def rate(self) -> float:
        """Sum of the recorded values per second over the current samples (Kafka's Rate)."""
        now = self._clock()
        with self._lock:
            samples = self._current(now)
            if not samples:
                return 0.0
            # Kafka's Rate divides by the elapsed window, at least (num samples - 1) windows,
            # never more than since the stat began.
            elapsed = max(now - samples[0].start, SAMPLE_WINDOW_S * (NUM_SAMPLES - 1))
            elapsed = min(elapsed, max(now - self._created, 1e-3))
            return sum(s.total for s in samples) / elapsed

    def count_rate(self) -> float:
        """Occurrences per second (Kafka's Rate over a Count)."""
        now = self._clock()
        with self._lock:
            samples = self._current(now)
            if not samples:
                return 0.0
            elapsed = max(now - samples[0].start, SAMPLE_WINDOW_S * (NUM_SAMPLES - 1))
            elapsed = min(elapsed, max(now - self._created, 1e-3))
            return sum(s.count for s in samples) / elapsed

    def avg(self) -> float:
        with self._lock:
            samples = self._current(self._clock())
            n = sum(s.count for s in samples)
            return sum(s.total for s in samples) / n if n else math.nan

    def max(self) -> float:
        with self._lock:
            samples = [s for s in self._current(self._clock()) if s.count]
            return max(s.max for s in samples) if samples else math.nan


class Gauge:
    """A value set by the client (records-lag-max's per-fetch maximum)."""

    def __init__(self) -> None:
        self.value = math.nan

    def set(self, value: float) -> None:
        self.value = value
