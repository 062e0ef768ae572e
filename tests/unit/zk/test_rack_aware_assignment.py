"""Kafka's rack-aware replica placement, checked against the cases of Kafka's AdminRackAwareTest
and against its invariants (replicas on distinct brokers, on as many racks as possible)."""

import random

import pytest

from kafkapy.protocol.errors import InvalidReplicationFactorException
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.rack_aware_assignment import (
    assign_replicas,
    assign_replicas_rack_aware,
    rack_alternated_broker_list,
)

RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_racks_alternate_in_the_broker_list():
    assert rack_alternated_broker_list(RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({b: r for b, r in RACKS.items() if b != 5}) == [0, 3, 1, 4, 2]


def test_placement_matches_kafkas():
    assert assign_replicas_rack_aware(RACKS, 7, 3, fixed_start_index=0, start_partition_id=0) == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


@pytest.mark.parametrize("seed", range(20))
def test_every_partition_spans_min_of_rf_and_racks(seed):
    rng = random.Random(seed)
    racks = {b: f"r{rng.randrange(3)}" for b in range(rng.randrange(3, 9))}
    rf = rng.randrange(1, len(racks) + 1)
    placed = assign_replicas_rack_aware(racks, 12, rf, rng=rng)
    for replicas in placed.values():
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, len(set(racks.values())))


def test_assign_replicas_chooses_the_algorithm():
    assert assign_replicas({1: None, 2: None}, 2, 2, fixed_start_index=0) == {0: [1, 2], 1: [2, 1]}
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
        assign_replicas({1: "a", 2: None}, 1, 1)
    with pytest.raises(InvalidReplicationFactorException):
        assign_replicas({1: "a", 2: "b"}, 1, 3)
