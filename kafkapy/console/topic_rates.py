"""Per-topic throughput from the brokers' Prometheus endpoints: the pure part of history.py.

Each broker serves BrokerTopicMetrics counters per topic (docs/metrics.md):
`kafka_server_brokertopicmetrics_bytesin_total{topic="t"}`, `..._bytesout_total`,
`..._messagesin_total`, counting what that broker did as leader since it started. A topic's
cluster-wide rate is the sum over brokers of each broker's counter increase divided by the time
between that broker's two scrapes (each broker keeps its own previous scrape, so one that was
unreachable for a while contributes its increase over the whole gap when it answers again).

A counter that went down means the broker restarted and counts from zero again: its increase is
then the new value (Prometheus' rate() rule). A topic absent from a broker's previous scrape but
present now started counting since then, so its whole value is the increase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
_INDEX = {BYTES_IN: 0, BYTES_OUT: 1, MESSAGES_IN: 2}

Counters = tuple[float, float, float]  # bytes in, bytes out, messages in
_ZERO: Counters = (0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Scrape:
    """One broker's counters per topic, read at `monotonic` seconds."""

    monotonic: float
    topics: Mapping[str, Counters]


def parse_topic_counters(text: str) -> dict[str, Counters]:
    """The per-topic BytesIn/BytesOut/MessagesIn counters of one endpoint's text exposition (the
    all-topics series, without a topic label, is left out)."""
    found: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            index = _INDEX.get(sample.name)
            topic = sample.labels.get("topic")
            if index is None or topic is None:
                continue
            found.setdefault(topic, [0.0, 0.0, 0.0])[index] = sample.value
    return {topic: (v[0], v[1], v[2]) for topic, v in found.items()}


def _increase(previous: float, current: float) -> float:
    return current if current < previous else current - previous  # a drop: the broker restarted


@dataclass(frozen=True, slots=True)
class TopicRate:
    per_second: Counters
    increase: Counters  # what the counters grew by since the previous scrapes


def _add(a: Counters, b: Counters) -> Counters:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def broker_rates(previous: Scrape, current: Scrape) -> dict[str, TopicRate]:
    """One broker's increases between two of its scrapes, and per-second rates, per topic it
    reports now."""
    elapsed = current.monotonic - previous.monotonic
    if elapsed <= 0:
        return {}
    rates = {}
    for topic, now in current.topics.items():
        before = previous.topics.get(topic, _ZERO)
        increase = (_increase(before[0], now[0]), _increase(before[1], now[1]), _increase(before[2], now[2]))
        rates[topic] = TopicRate(
            (increase[0] / elapsed, increase[1] / elapsed, increase[2] / elapsed), increase
        )
    return rates


class RateTracker:
    """The previous scrape of each endpoint, and the cluster-wide rates each round gives."""

    def __init__(self) -> None:
        self._previous: dict[str, Scrape] = {}

    def update(self, scrapes: Mapping[str, Scrape]) -> dict[str, TopicRate]:
        """Sums over the endpoints scraped this round (those that failed are absent and keep
        their previous scrape); an endpoint's first scrape only sets its base."""
        total: dict[str, TopicRate] = {}
        for url, scrape in scrapes.items():
            previous = self._previous.get(url)
            self._previous[url] = scrape
            if previous is None:
                continue
            for topic, r in broker_rates(previous, scrape).items():
                t = total.get(topic)
                total[topic] = (
                    r
                    if t is None
                    else TopicRate(_add(t.per_second, r.per_second), _add(t.increase, r.increase))
                )
        return total

    def has_base(self) -> bool:
        return bool(self._previous)
