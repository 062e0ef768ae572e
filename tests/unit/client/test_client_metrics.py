"""Client metrics in Kafka's shape: rates, averages and maxima over 2 samples of 30 s."""

from __future__ import annotations

import math

import pytest

from kafkapy.client.client_metrics import ConsumerMetrics, ProducerMetrics, Stat

pytestmark = pytest.mark.timeout(30)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_avg_max_and_total_over_the_current_samples() -> None:
    clock = Clock()
    stat = Stat(clock)
    clock.now += 60  # the stat has existed for a minute
    for v in (10, 20, 30):
        stat.record(v)
    assert stat.total == 60 and stat.count == 3
    assert stat.avg() == 20 and stat.max() == 30
    assert stat.rate() == pytest.approx(60 / 30)  # at least one window of elapsed time
    assert stat.count_rate() == pytest.approx(3 / 30)
    clock.now += 61  # both samples expired: rates and averages forget, totals stay
    assert stat.rate() == 0.0 and math.isnan(stat.avg()) and stat.total == 60


def test_a_young_stat_divides_by_its_age() -> None:
    clock = Clock()
    stat = Stat(clock)
    clock.now += 2
    stat.record(100)
    assert stat.rate() == pytest.approx(50)


def test_snapshots_use_kafka_s_names() -> None:
    p = ProducerMetrics()
    p.record_send.record(5)
    p.batch_size.record(1000)
    p.request_latency_ms.record(3.0)
    names = p.snapshot()["producer-metrics"]
    assert names["record-send-total"] == 5 and names["batch-size-avg"] == 1000
    assert names["request-latency-avg"] == 3.0 and names["request-total"] == 1
    c = ConsumerMetrics()
    c.records_lag.record(42)
    assert c.snapshot()["consumer-fetch-manager-metrics"]["records-lag-max"] == 42
