"""Background samplers for the console's plots: consumer group lag and per-topic throughput over
time, each kept in a bounded ring.

    history = History("127.0.0.1:9092", metrics_urls=["http://127.0.0.1:9404/metrics", ...])
    history.start()                            # on the console's running asyncio loop
    history.group_lag_series("billing")        # [(unix time, total lag), ...] oldest first
    history.partition_lag("billing")           # {TopicPartition: lag or None}, the latest sample
    history.partition_lag_series("billing", TopicPartition("orders", 0))  # [(time, lag or None)]
    history.topic_rate_series("orders")        # [(time, bytes in/s, bytes out/s, messages in/s)]
    history.topic_rate_samples("orders")       # [RateSample]: the same, plus the counters' increase
    history.groups(), history.topics()         # what has series
    history.endpoint_errors()                  # {metrics url: why its last scrape failed}
    await history.stop()

Every `lag_interval_s` (default 5 s) a round measures the lag of each consumer group (or of the
`groups` given) as kafka-consumer-groups --describe does (group_lag.py); every `rate_interval_s`
a round scrapes each metrics URL (`http://host:port/metrics`; a bare `host:port` gets that form)
and turns BrokerTopicMetrics counters into rates (topic_rates.py: summed over brokers, counter
resets of a restarted broker handled, an unreachable endpoint skipped until it answers again).

Memory is bounded: each group and each topic keeps the last `capacity` samples (default 720: an
hour at 5 s), at most `max_series` groups and topics are tracked (later ones are not), and a
series that got no sample for `capacity` rounds (group deleted, topic gone) is dropped.

The rounds' blocking I/O (kafkapy's blocking GroupAdmin, urllib) runs on worker threads of their
own; the rings are only written on the event loop, so the accessors (plain, non-async methods)
read them consistently from the loop's handlers. `sample_lag()` / `sample_rates()` run one round
at once (also usable without start()).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.request
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.group_lag import GroupLag, lag_round
from kafkapy.console.topic_rates import Counters, RateTracker, Scrape, TopicRate, parse_topic_counters
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
DEFAULT_CAPACITY = 720
DEFAULT_MAX_SERIES = 1000
SCRAPE_TIMEOUT_S = 3.0
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LagSample:
    time: float
    total: int
    partitions: dict[TopicPartition, int | None]


@dataclass(frozen=True, slots=True)
class RateSample:
    """A topic's rates (per second) and what its counters grew by since the previous scrapes."""

    time: float
    bytes_in: float
    bytes_out: float
    messages_in: float
    increase: Counters  # bytes in, bytes out, messages in


class Rings(Generic[T]):
    """Named rings of samples with the bounds above; `round` counts rounds for expiry."""

    def __init__(self, capacity: int, max_series: int) -> None:
        self.capacity = capacity
        self.max_series = max_series
        self.series: dict[str, deque[T]] = {}
        self._last_round: dict[str, int] = {}
        self._round = 0

    def add_round(self, samples: dict[str, T]) -> None:
        self._round += 1
        for name, sample in samples.items():
            ring = self.series.get(name)
            if ring is None:
                if len(self.series) >= self.max_series:
                    continue
                ring = self.series[name] = deque(maxlen=self.capacity)
            ring.append(sample)
            self._last_round[name] = self._round
        for name in [n for n, r in self._last_round.items() if self._round - r >= self.capacity]:
            del self.series[name], self._last_round[name]

    def get(self, name: str) -> list[T]:
        return list(self.series.get(name, ()))

    def names(self) -> list[str]:
        return sorted(self.series)


def metrics_url(endpoint: str) -> str:
    return endpoint if "://" in endpoint else f"http://{endpoint}/metrics"


def _scrape(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as response:
        text = response.read().decode("utf-8")
    return Scrape(time.monotonic(), parse_topic_counters(text))


class History:
    def __init__(
        self,
        bootstrap_servers: str,
        metrics_urls: Sequence[str] = (),
        lag_interval_s: float = DEFAULT_INTERVAL_S,
        rate_interval_s: float = DEFAULT_INTERVAL_S,
        capacity: int = DEFAULT_CAPACITY,
        groups: Sequence[str] | None = None,
        max_series: int = DEFAULT_MAX_SERIES,
        timeout_ms: int = 5000,
        group_admin_factory: Callable[[], GroupAdmin] | None = None,
    ) -> None:
        """`group_admin_factory` makes the lag sampler's client (on its thread), for TLS/SASL
        clusters; by default a plain GroupAdmin over `bootstrap_servers`."""
        self.bootstrap_servers = bootstrap_servers
        self._group_admin_factory = group_admin_factory
        self.metrics_urls = [metrics_url(u) for u in metrics_urls]
        self.lag_interval_s = lag_interval_s
        self.rate_interval_s = rate_interval_s
        self.tracked_groups = None if groups is None else list(groups)
        self.timeout_ms = timeout_ms
        self._lag: Rings[LagSample] = Rings(capacity, max_series)
        self._rates: Rings[RateSample] = Rings(capacity, max_series)
        self._tracker = RateTracker()
        self._endpoint_errors: dict[str, str] = {}
        self._admin: GroupAdmin | None = None
        # One thread for the group admin (one request at a time), a few for parallel scrapes.
        self._lag_executor = ThreadPoolExecutor(1, thread_name_prefix="kafkapy-console-lag")
        self._scrape_executor = ThreadPoolExecutor(
            max(1, min(8, len(self.metrics_urls))), thread_name_prefix="kafkapy-console-scrape"
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    # -- the web app's view ---------------------------------------------------------------------

    def groups(self) -> list[str]:
        return self._lag.names()

    def group_lag_series(self, group: str) -> list[tuple[float, int]]:
        return [(s.time, s.total) for s in self._lag.get(group)]

    def partition_lag(self, group: str) -> dict[TopicPartition, int | None]:
        samples = self._lag.get(group)
        return dict(samples[-1].partitions) if samples else {}

    def partition_lag_series(self, group: str, partition: TopicPartition) -> list[tuple[float, int | None]]:
        return [(s.time, s.partitions[partition]) for s in self._lag.get(group) if partition in s.partitions]

    def topics(self) -> list[str]:
        return self._rates.names()

    def topic_rate_series(self, topic: str) -> list[tuple[float, float, float, float]]:
        return [(s.time, s.bytes_in, s.bytes_out, s.messages_in) for s in self._rates.get(topic)]

    def topic_rate_samples(self, topic: str) -> list[RateSample]:
        return self._rates.get(topic)

    def endpoint_errors(self) -> dict[str, str]:
        return dict(self._endpoint_errors)

    # -- rounds ---------------------------------------------------------------------------------

    async def sample_lag(self) -> None:
        """One lag round now; a cluster that cannot be reached is logged and leaves no sample."""

        def measure() -> dict[str, GroupLag]:
            if self._admin is None:
                self._admin = (
                    self._group_admin_factory()
                    if self._group_admin_factory is not None
                    else GroupAdmin(self.bootstrap_servers, timeout_ms=self.timeout_ms)
                )
            return lag_round(self._admin, self.tracked_groups)

        try:
            lags = await asyncio.get_running_loop().run_in_executor(self._lag_executor, measure)
        except Exception as e:  # noqa: BLE001 - the sampler keeps going; the next round retries
            log.warning("Group lag not sampled: %s", e)
            return
        now = time.time()
        self._lag.add_round({g: LagSample(now, lag.total, dict(lag.partitions)) for g, lag in lags.items()})

    async def sample_rates(self) -> None:
        """One scrape of every metrics URL (in parallel); rates are added once an endpoint has a
        previous scrape to compare with."""
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self._scrape_executor, _scrape, url) for url in self.metrics_urls]
        results = await asyncio.gather(*futures, return_exceptions=True)
        scrapes: dict[str, Scrape] = {}
        for url, result in zip(self.metrics_urls, results, strict=True):
            if isinstance(result, BaseException):
                if url not in self._endpoint_errors:
                    log.warning("Metrics endpoint %s not scraped: %s", url, result)
                self._endpoint_errors[url] = str(result) or type(result).__name__
            else:
                self._endpoint_errors.pop(url, None)
                scrapes[url] = result
        had_base = self._tracker.has_base()
        rates = self._tracker.update(scrapes)
        if had_base and scrapes:
            now = time.time()
            self._rates.add_round({t: _rate_sample(now, r) for t, r in rates.items()})

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start both samplers on the running loop (lag only without metrics URLs)."""
        if self._tasks or self._stopped:
            return
        self._tasks.append(asyncio.create_task(self._every(self.lag_interval_s, self.sample_lag)))
        if self.metrics_urls:
            self._tasks.append(asyncio.create_task(self._every(self.rate_interval_s, self.sample_rates)))

    async def stop(self) -> None:
        """Stop sampling (once: a stopped History is not started again); the series stay."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._stopped:
            return
        self._stopped = True
        # Closed on the lag thread, after a round still running there (which may have just made
        # the client); stop() does not wait for that round.
        self._lag_executor.submit(self._close_admin)
        self._lag_executor.shutdown(wait=False)
        self._scrape_executor.shutdown(wait=False)

    def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()

    @staticmethod
    async def _every(interval_s: float, sample: Callable[[], Awaitable[None]]) -> None:
        """Rounds at a fixed rate (a slow round delays the next, never piles them up)."""
        next_at = time.monotonic()
        while True:
            await sample()
            next_at = max(next_at + interval_s, time.monotonic())
            await asyncio.sleep(next_at - time.monotonic())


def _rate_sample(now: float, rate: TopicRate) -> RateSample:
    per_second = rate.per_second
    return RateSample(now, per_second[0], per_second[1], per_second[2], rate.increase)
