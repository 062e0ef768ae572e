"""How much of its time the broker's event loop spends waiting for I/O.

The loop is kafkapy's network processor and request handler pool at once, so the honest
counterpart of Kafka's NetworkProcessorAvgIdlePercent is the share of wall time the loop sits
in its selector's select() (nothing to read, write or run). A selector subclass times each
call: two clock reads per loop iteration, not per request.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable

_BASE: type[selectors.BaseSelector] = selectors.DefaultSelector


class TimedSelector(_BASE):  # type: ignore[valid-type,misc]
    """The platform's default selector, counting the nanoseconds spent inside select()."""

    def __init__(self) -> None:
        super().__init__()
        self.idle_ns = 0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        start = time.monotonic_ns()
        try:
            return super().select(timeout)
        finally:
            self.idle_ns += time.monotonic_ns() - start


def timed_loop_factory(holder: list[TimedSelector]) -> Callable[[], asyncio.AbstractEventLoop]:
    """A loop factory for asyncio.Runner whose loop's selector is timed (put into `holder`)."""

    def factory() -> asyncio.AbstractEventLoop:
        selector = TimedSelector()
        holder.append(selector)
        return asyncio.SelectorEventLoop(selector)

    return factory


class IdleRatio:
    """Idle share of wall time between two readings of a growing idle counter (scrape thread)."""

    def __init__(self, read_idle_ns: Callable[[], int]) -> None:
        self._read = read_idle_ns
        self._last = (time.monotonic_ns(), read_idle_ns())
        self.value = 1.0

    def sample(self) -> float:
        now, idle = time.monotonic_ns(), self._read()
        wall = now - self._last[0]
        # Scrapes closer than 100 ms apart keep the previous figure rather than a noisy one.
        if wall >= 100_000_000:
            self.value = min(1.0, max(0.0, (idle - self._last[1]) / wall))
            self._last = (now, idle)
        return self.value
