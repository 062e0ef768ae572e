"""Hot-path meters: counters and log2-bucketed histograms updated without locks.

Kafka's Yammer meters and histograms are thread-safe objects with a decaying reservoir. Here the
produce and fetch paths run on the broker's one event loop, so their meters are plain slotted
objects that only the loop writes: an update is a few integer additions, no lock, no call into
prometheus_client. The scrape thread reads them as they are (a read may miss an update in
flight, never sees a torn integer under the GIL).

Histograms hold counts in power-of-two buckets of microseconds: bucket i counts values v with
v.bit_length() == i, that is [2^(i-1), 2^i) us, bucket 0 counts 0. Quantiles are estimated from
the buckets at scrape time (quantiles.py). Timers used off the loop (log flush, ZooKeeper,
controller elections) take their own lock, which no request path takes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Enough for any non-negative 64-bit value's bit_length(), so an update never checks a bound.
BUCKETS = 65
_MAX_BUCKET = BUCKETS - 1
# Produce and Fetch requests are timed at most one per SAMPLE_INTERVAL_NS per connection; every
# request is counted. Kafka's own histograms are samples too (a reservoir of 1028 values):
# quantiles of a sample are what they report. The decision is taken once per read, not per
# request: a per-request countdown (one in 8) measured ~1.5 us (9%) of broker CPU per pipelined
# single-record produce end to end, far more than its few bytecodes account for (the cause was
# not pinned down); a read that is due a sample times the request SAMPLE_POSITIONS picks.
SAMPLE_INTERVAL_NS = 1_000_000
# Which request of a due read of several pipelined requests is timed: a position in
# 0..SAMPLE_POSITIONS-1 taken from the clock's low bits, so requests behind others in a read are
# timed too (their queue time is the point of RequestQueueTimeMs), not only the first of each.
SAMPLE_POSITIONS = 16
MAX_API_KEY = 127


class Histogram:
    """Counts of microsecond values in log2 buckets, plus their count and sum (one writer)."""

    __slots__ = ("buckets", "count", "sum_us")

    def __init__(self) -> None:
        self.buckets = [0] * BUCKETS
        self.count = 0
        self.sum_us = 0

    def observe_us(self, us: int) -> None:
        if us < 0:
            us = 0
        self.buckets[min(us.bit_length(), _MAX_BUCKET)] += 1
        self.count += 1
        self.sum_us += us

    def sync_count(self) -> int:
        """For histograms the loop updates without touching `count` (RequestMetrics): the count
        is the buckets' sum, taken by the scrape thread."""
        self.count = sum(self.buckets)
        return self.count


class Timer:
    """Kafka's `...RateAndTimeMs` timers for work off the loop (several threads may record)."""

    __slots__ = ("histogram", "_lock")

    def __init__(self) -> None:
        self.histogram = Histogram()
        self._lock = threading.Lock()

    def record_ns(self, elapsed_ns: int) -> None:
        with self._lock:
            self.histogram.observe_us(elapsed_ns // 1000)

    @contextmanager
    def time(self) -> Iterator[None]:
        start = time.monotonic_ns()
        try:
            yield
        finally:
            self.record_ns(time.monotonic_ns() - start)


class Counter:
    """A monotonic count bumped by threads other than the loop (ISR changes, elections)."""

    __slots__ = ("value", "_lock")

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def inc(self, n: int = 1) -> None:
        with self._lock:
            self.value += n


class TopicStats:
    """One topic's BrokerTopicMetrics counts (Kafka's meters' Count)."""

    __slots__ = (
        "messages_in",
        "bytes_in",
        "bytes_out",
        "bytes_rejected",
        "failed_produce_requests",
        "failed_fetch_requests",
        "total_produce_requests",
        "total_fetch_requests",
        "replication_bytes_in",
        "replication_bytes_out",
    )

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.bytes_rejected = 0
        self.failed_produce_requests = 0
        self.failed_fetch_requests = 0
        self.total_produce_requests = 0
        self.total_fetch_requests = 0
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0


class BrokerTopicStats:
    """Per-topic counts; the all-topics figures are their sums, taken at scrape time so the
    hot path updates one object, not two. A deleted topic's counts fold into `retired` so the
    all-topics counters never go back."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}
        self.retired = TopicStats()
        # Replication bytes have no per-topic meter in Kafka: counted here directly.
        self.all = TopicStats()

    def topic(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def remove_topic(self, topic: str) -> None:
        stats = self.topics.pop(topic, None)
        if stats is not None:
            for name in TopicStats.__slots__:
                setattr(self.retired, name, getattr(self.retired, name) + getattr(stats, name))

    def all_topics(self) -> TopicStats:
        total = TopicStats()
        for stats in [*list(self.topics.values()), self.retired, self.all]:
            for name in TopicStats.__slots__:
                setattr(total, name, getattr(total, name) + getattr(stats, name))
        return total


class ApiStats:
    """One API's RequestMetrics. A timed request records its queue, local and total time; remote
    and response-send time are recorded only when non-zero (a request that waited, a response
    sent in chunks): the rest are implied zeros, added into bucket 0 at scrape time. The
    request counts per version are RequestMetrics.counts (the processor bumps them)."""

    __slots__ = ("name", "by_version", "queue", "local", "remote", "send", "total")

    def __init__(self, name: str, by_version: list[int]) -> None:
        self.name = name
        self.by_version = by_version
        self.queue = Histogram()
        self.local = Histogram()
        self.remote = Histogram()
        self.send = Histogram()
        self.total = Histogram()

    @property
    def requests(self) -> int:
        return sum(self.by_version)


class RequestMetrics:
    """RequestMetrics of every API, indexed by api key (a list index is the cheapest lookup).

    Times are `time.monotonic_ns()` values; `>> 10` turns nanoseconds into ~microseconds
    (1.024 us units) without a division: the histograms' buckets are powers of two anyway.
    """

    def __init__(self, api_name: Callable[[int], str]) -> None:
        self._api_name = api_name
        self.apis: list[ApiStats | None] = [None] * (MAX_API_KEY + 1)
        # counts[api key][version]: RequestsPerSec, bumped by the processor for every request.
        self.counts: list[list[int]] = [[0] * 32 for _ in range(MAX_API_KEY + 1)]

    @property
    def handler_busy_ns(self) -> int:
        """Busy time of the request handlers (their local time, scaled up from the timed
        sample), for RequestHandlerAvgIdlePercent."""
        busy = 0.0
        for st in self.counted():
            timed = sum(st.local.buckets)
            if timed:
                busy += st.local.sum_us * st.requests / timed
        return int(busy) << 10

    def stats(self, api_key: int) -> ApiStats:
        st = self.apis[api_key]
        if st is None:
            st = self.apis[api_key] = ApiStats(self._api_name(api_key), self.counts[api_key])
        return st

    def counted(self) -> list[ApiStats]:
        """Every API that has been asked (for the scrape thread)."""
        return [self.stats(key) for key, versions in enumerate(self.counts) if any(versions)]

    def record(
        self, api_key: int, received: int, started: int, local_done: int, ready: int, end: int
    ) -> None:
        """One completed request: received -> handler started -> handler returned (local) ->
        response ready (remote: a request that waited) -> response written (send: a response
        sent in chunks under flow control). Most requests have ready == end == local_done."""
        # The api key passed the handler's routing (a supported api).
        st = self.apis[api_key]
        if st is None:
            st = self.stats(api_key)
        # Per request, a bucket and a sum per histogram and nothing more: each histogram's
        # count is its buckets' sum, taken at scrape time (Histogram.sync_count).
        q = (started - received) >> 10
        h = st.queue
        h.buckets[q.bit_length()] += 1
        h.sum_us += q
        local = (local_done - started) >> 10
        h = st.local
        h.buckets[local.bit_length()] += 1
        h.sum_us += local
        total = (end - received) >> 10
        h = st.total
        h.buckets[total.bit_length()] += 1
        h.sum_us += total
        if ready != local_done:
            st.remote.observe_us((ready - local_done) >> 10)
        if end != ready:
            st.send.observe_us((end - ready) >> 10)
