"""Replication throttles of a reassignment (Kafka 2.8's ReassignPartitionsCommand): which
replicas are throttled on which side, which brokers get the rate, and the lines printed.

--execute --throttle N throttles, on each moving topic, the existing replicas of the moving
partitions on the leader side (`leader.replication.throttled.replicas`) and the new ones on the
follower side (`follower.replication.throttled.replicas`), and sets both rates to N on every
broker involved; --verify removes all of it once nothing moves any more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkapy.common.topic_partition import TopicPartition

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, LOG_DIRS_RATE)
TOPIC_THROTTLES = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """Kafka's PartitionMove: the replicas data comes from, and the ones it goes to."""

    sources: frozenset[int]
    destinations: frozenset[int]


def calculate_moves(
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    ongoing_originals: Mapping[TopicPartition, Sequence[int]] | None = None,
) -> dict[TopicPartition, PartitionMove]:
    """Kafka's calculateProposedMoveMap: an ongoing reassignment's sources are its original
    replicas (they still hold the data)."""
    moves = {}
    for tp, target in proposed.items():
        sources = (ongoing_originals or {}).get(tp) or current.get(tp, ())
        moves[tp] = PartitionMove(frozenset(sources), frozenset(target) - frozenset(sources))
    return moves


def _per_topic(moves: Mapping[TopicPartition, PartitionMove], leader: bool) -> dict[str, str]:
    by_topic: dict[str, set[str]] = {}
    for tp, move in moves.items():
        replicas = move.sources if leader else move.destinations
        by_topic.setdefault(tp.topic, set()).update(f"{tp.partition}:{r}" for r in replicas)
    # Kafka collects them in a TreeSet of strings: sorted as text.
    return {topic: ",".join(sorted(items)) for topic, items in sorted(by_topic.items()) if items}


def leader_throttles(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, str]:
    return _per_topic(moves, leader=True)


def follower_throttles(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, str]:
    return _per_topic(moves, leader=False)


def reassigning_brokers(moves: Mapping[TopicPartition, PartitionMove]) -> list[int]:
    return sorted({b for move in moves.values() for b in move.sources | move.destinations})


def topic_throttle_configs(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, dict[str, str]]:
    """topic -> the throttled-replica configs to set on it."""
    leader, follower = leader_throttles(moves), follower_throttles(moves)
    out: dict[str, dict[str, str]] = {}
    for topic in sorted(leader.keys() | follower.keys()):
        out[topic] = {
            k: v
            for k, v in ((LEADER_REPLICAS, leader.get(topic)), (FOLLOWER_REPLICAS, follower.get(topic)))
            if v
        }
    return out


def throttle_set_line(throttle: int) -> str:
    return f"The inter-broker throttle limit was set to {throttle} B/s"


def clearing_lines(brokers: Iterable[int], topics: Iterable[str]) -> list[str]:
    """Kafka's clearAllThrottles lines."""
    broker_list, topic_list = sorted(set(brokers)), sorted(set(topics))
    return [
        f"Clearing broker-level throttles on broker{'' if len(broker_list) == 1 else 's'} "
        + ",".join(map(str, broker_list)),
        f"Clearing topic-level throttles on topic{'' if len(topic_list) == 1 else 's'} "
        + ",".join(topic_list),
    ]
