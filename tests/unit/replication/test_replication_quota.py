"""Replication throttles: Kafka's Rate arithmetic over 11 one-second windows, and the
throttled-replica lists of the topic configs."""

from __future__ import annotations

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.replication_quota import (
    Rate,
    ReplicationQuotaConfig,
    ReplicationQuotaManager,
    parse_throttled_partitions,
    validate_throttled_replicas,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_young_rate_counts_as_ten_full_windows() -> None:
    """Kafka's Rate.windowSize: fewer than samples-1 full windows count as samples-1."""
    clock = Clock()
    rate = Rate(ReplicationQuotaConfig(), clock)
    rate.record(10_000)
    assert rate.measure() == pytest.approx(1000.0)  # 10 kB over the minimum 10 s
    clock.now += 0.5
    assert rate.measure() == pytest.approx(10_000 / 10.5)


def test_a_steady_flow_measures_its_rate() -> None:
    clock = Clock()
    rate = Rate(ReplicationQuotaConfig(), clock)
    for _ in range(40):  # 40 s at 1000 B/s, recorded every 100 ms
        for _ in range(10):
            rate.record(100)
            clock.now += 0.1
    # 11 windows kept: the oldest started 10.x s ago.
    assert rate.measure() == pytest.approx(1000.0, rel=0.1)


def test_old_samples_expire() -> None:
    clock = Clock()
    rate = Rate(ReplicationQuotaConfig(), clock)
    rate.record(1_000_000)
    clock.now += 11.0
    assert rate.measure() == 0.0


def test_the_quota_is_exceeded_only_above_its_bound() -> None:
    clock = Clock()
    quota = ReplicationQuotaManager(ReplicationQuotaConfig(), clock)
    quota.record(50_000_000)
    assert not quota.is_quota_exceeded()  # unbounded by default
    quota.update_quota(1_000_000)
    assert quota.is_quota_exceeded()  # 50 MB over 10 s = 5 MB/s
    clock.now += 11
    assert not quota.is_quota_exceeded()


def test_throttled_partitions_per_topic_and_all() -> None:
    quota = ReplicationQuotaManager()
    assert not quota.any_throttled and not quota.is_throttled(TopicPartition("t", 0))
    quota.mark_throttled("t", [0, 2])
    assert quota.is_throttled(TopicPartition("t", 0)) and not quota.is_throttled(TopicPartition("t", 1))
    quota.mark_throttled("u", None)
    assert quota.is_throttled(TopicPartition("u", 7))
    quota.remove_throttle("t")
    quota.remove_throttle("u")
    assert not quota.any_throttled


def test_throttled_replicas_keep_the_partitions_of_this_broker() -> None:
    assert parse_throttled_partitions("0:1,1:2,2:1", 1) == [0, 2]
    assert parse_throttled_partitions("0:1,1:2", 3) == []
    assert parse_throttled_partitions(" * ", 3) is None


@pytest.mark.parametrize("value", ["*", "0:1", "0:1,1:2", ""])
def test_valid_throttled_replica_lists(value: str) -> None:
    validate_throttled_replicas("leader.replication.throttled.replicas", value)


@pytest.mark.parametrize("value", ["x", "0-1", "0:1,", "*,0:1"])
def test_invalid_throttled_replica_lists_get_kafkas_message(value: str) -> None:
    with pytest.raises(
        ValueError, match=r"must be the literal '\*' or a list of replicas in the following format"
    ):
        validate_throttled_replicas("leader.replication.throttled.replicas", value)
