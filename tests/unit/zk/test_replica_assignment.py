"""Kafka's rack-unaware replica placement."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kafkapy.protocol.errors import InvalidPartitionsException, InvalidReplicationFactorException
from kafkapy.zk.replica_assignment import assign_replicas_to_brokers


def test_matches_kafkas_fixed_start_example() -> None:
    # The expectation of Kafka's AdminTest.testReplicaAssignment.
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


@pytest.mark.parametrize(("brokers", "partitions", "rf"), [(1, 1, 1), (3, 7, 3), (5, 50, 2), (6, 12, 4)])
def test_each_partition_has_rf_distinct_brokers(brokers: int, partitions: int, rf: int) -> None:
    broker_ids = [100 + i for i in range(brokers)]
    for seed in range(20):
        result = assign_replicas_to_brokers(broker_ids, partitions, rf, rng=random.Random(seed))
        assert sorted(result) == list(range(partitions))
        for replicas in result.values():
            assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= set(broker_ids)


def test_leaders_and_replicas_spread_evenly() -> None:
    brokers = [1, 2, 3, 4]
    result = assign_replicas_to_brokers(brokers, 40, 3, rng=random.Random(7))
    leaders = Counter(r[0] for r in result.values())
    assert set(leaders.values()) == {10}
    replicas = Counter(b for r in result.values() for b in r)
    assert set(replicas.values()) == {30}


def test_deterministic_with_fixed_start_random_otherwise() -> None:
    a = assign_replicas_to_brokers([0, 1, 2], 6, 2, fixed_start_index=1)
    assert a == assign_replicas_to_brokers([0, 1, 2], 6, 2, fixed_start_index=1)
    assert a[0][0] == 1
    starts = {assign_replicas_to_brokers([0, 1, 2], 1, 1, rng=random.Random(s))[0][0] for s in range(50)}
    assert starts == {0, 1, 2}


def test_start_partition_id_numbers_new_partitions() -> None:
    result = assign_replicas_to_brokers([0, 1, 2], 2, 2, fixed_start_index=0, start_partition_id=3)
    assert sorted(result) == [3, 4]


def test_errors_have_kafkas_messages() -> None:
    with pytest.raises(
        InvalidReplicationFactorException, match=r"^Replication factor: 3 larger than available brokers: 1\.$"
    ):
        assign_replicas_to_brokers([0], 1, 3)
    with pytest.raises(InvalidReplicationFactorException, match="must be larger than 0"):
        assign_replicas_to_brokers([0], 1, 0)
    with pytest.raises(InvalidPartitionsException, match="Number of partitions must be larger than 0"):
        assign_replicas_to_brokers([0], 0, 1)
