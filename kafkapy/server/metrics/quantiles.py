"""Quantiles of a bucketed histogram over a recent window, computed at scrape time.

Kafka's histograms (Yammer, exponentially decaying reservoir) describe roughly the last five
minutes. The equivalent here: the scrape thread keeps snapshots of each histogram's buckets (at
most one per SNAPSHOT_EVERY_S) and reports quantiles of what was recorded since the oldest
snapshot younger than WINDOW_S; the `_count` stays the total since start-up, as Kafka's Count.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from kafkapy.server.metrics.meters import Histogram

# Kafka's percentiles, as the JMX exporter labels them (0.999 for 999thPercentile).
QUANTILES = (("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
WINDOW_S = 300.0
SNAPSHOT_EVERY_S = 30.0


def quantile_us(buckets: list[int], q: float) -> float:
    """The q-quantile of log2-bucketed microsecond counts, interpolated inside its bucket."""
    total = sum(buckets)
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0
    for i, n in enumerate(buckets):
        if n and seen + n >= rank:
            if i == 0:
                return 0.0
            low = float(1 << (i - 1))
            return low + (low * (rank - seen) / n)  # the bucket spans [low, 2 * low)
        seen += n
    return float(1 << (len(buckets) - 1))


class WindowedQuantiles:
    """Snapshots of histograms (keyed by id) and quantiles of the recent window (scrape thread only)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._snapshots: dict[int, deque[tuple[float, list[int]]]] = {}

    def quantiles_ms(self, histogram: Histogram, implied_zeros: int = 0) -> list[tuple[str, float]]:
        now = self._clock()
        current = list(histogram.buckets)
        snaps = self._snapshots.setdefault(id(histogram), deque())
        while len(snaps) > 1 and now - snaps[0][0] > WINDOW_S:
            snaps.popleft()
        # The first scrape has no snapshot: it describes everything since start-up.
        base = snaps[0][1] if snaps else None
        if not snaps or now - snaps[-1][0] >= SNAPSHOT_EVERY_S:
            snaps.append((now, current))
        window = current if base is None else [c - b for c, b in zip(current, base, strict=True)]
        if implied_zeros:
            window[0] += implied_zeros
        return [(label, quantile_us(window, q) / 1000.0) for label, q in QUANTILES]
