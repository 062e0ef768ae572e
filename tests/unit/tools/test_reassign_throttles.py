"""The throttles of a reassignment, as Kafka 2.8's ReassignPartitionsCommand computes them."""

from __future__ import annotations

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.reassign_cmd.throttles import (
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    PartitionMove,
    calculate_moves,
    clearing_lines,
    follower_throttles,
    leader_throttles,
    reassigning_brokers,
    topic_throttle_configs,
)

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def test_sources_are_the_current_replicas_and_destinations_the_new_ones() -> None:
    moves = calculate_moves({T0: [2, 3], T1: [0, 1]}, {T0: [0, 1], T1: [0, 1]})
    assert moves[T0] == PartitionMove(frozenset({0, 1}), frozenset({2, 3}))
    assert moves[T1] == PartitionMove(frozenset({0, 1}), frozenset())


def test_an_ongoing_reassignment_counts_from_its_original_replicas() -> None:
    moves = calculate_moves({T0: [3]}, {T0: [0, 2]}, {T0: [0]})
    assert moves[T0] == PartitionMove(frozenset({0}), frozenset({3}))


def test_throttled_replica_lists_per_topic_sorted_as_text() -> None:
    moves = calculate_moves(
        {T0: [2, 3], TopicPartition("t", 10): [2], U0: [1]},
        {T0: [0, 1], TopicPartition("t", 10): [0], U0: [1]},
    )
    assert leader_throttles(moves) == {"t": "0:0,0:1,10:0", "u": "0:1"}
    assert follower_throttles(moves) == {"t": "0:2,0:3,10:2"}
    assert topic_throttle_configs(moves) == {
        "t": {LEADER_REPLICAS: "0:0,0:1,10:0", FOLLOWER_REPLICAS: "0:2,0:3,10:2"},
        "u": {LEADER_REPLICAS: "0:1"},
    }
    assert reassigning_brokers(moves) == [0, 1, 2, 3]


def test_clearing_lines_are_kafkas() -> None:
    assert clearing_lines([2, 0, 1], ["t"]) == [
        "Clearing broker-level throttles on brokers 0,1,2",
        "Clearing topic-level throttles on topic t",
    ]
    assert clearing_lines([0], ["t", "u"]) == [
        "Clearing broker-level throttles on broker 0",
        "Clearing topic-level throttles on topics t,u",
    ]
