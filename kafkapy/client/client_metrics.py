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


class ProducerMetrics:
    """Kafka's producer-metrics group (the sender thread records, once per batch or request)."""

    def __init__(self) -> None:
        self.record_send = Stat()  # value: records in a batch acknowledged
        self.record_error = Stat()  # value: records of a batch that failed
        self.record_retry = Stat()  # value: records of a batch sent again
        self.batch_size = Stat()  # value: bytes of a batch sent
        self.records_per_request = Stat()
        self.request_latency_ms = Stat()
        self.outgoing_bytes = Stat()  # value: bytes of a Produce request

    def snapshot(self) -> dict[str, dict[str, float]]:
        return {
            "producer-metrics": {
                "record-send-rate": self.record_send.rate(),
                "record-send-total": self.record_send.total,
                "record-error-rate": self.record_error.rate(),
                "record-error-total": self.record_error.total,
                "record-retry-rate": self.record_retry.rate(),
                "record-retry-total": self.record_retry.total,
                "batch-size-avg": self.batch_size.avg(),
                "batch-size-max": self.batch_size.max(),
                "records-per-request-avg": self.records_per_request.avg(),
                "request-latency-avg": self.request_latency_ms.avg(),
                "request-latency-max": self.request_latency_ms.max(),
                "request-rate": self.request_latency_ms.count_rate(),
                "request-total": float(self.request_latency_ms.count),
                "outgoing-byte-rate": self.outgoing_bytes.rate(),
                "outgoing-byte-total": self.outgoing_bytes.total,
            }
        }


class ConsumerMetrics:
    """Kafka's consumer-fetch-manager-metrics group (recorded once per fetch response)."""

    def __init__(self) -> None:
        self.records_consumed = Stat()  # value: records of one fetch response
        self.bytes_consumed = Stat()  # value: record bytes of one fetch response
        self.fetch_latency_ms = Stat()
        self.records_lag = Stat()  # value: the largest partition lag after one fetch response

    def snapshot(self) -> dict[str, dict[str, float]]:
        return {
            "consumer-fetch-manager-metrics": {
                "records-consumed-rate": self.records_consumed.rate(),
                "records-consumed-total": self.records_consumed.total,
                "bytes-consumed-rate": self.bytes_consumed.rate(),
                "bytes-consumed-total": self.bytes_consumed.total,
                "records-per-request-avg": self.records_consumed.avg(),
                "fetch-size-avg": self.bytes_consumed.avg(),
                "fetch-size-max": self.bytes_consumed.max(),
                "fetch-latency-avg": self.fetch_latency_ms.avg(),
                "fetch-latency-max": self.fetch_latency_ms.max(),
                "fetch-rate": self.fetch_latency_ms.count_rate(),
                "fetch-total": float(self.fetch_latency_ms.count),
                "records-lag-max": self.records_lag.max(),
            }
        }
