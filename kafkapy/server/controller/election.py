"""Partition leader election: pure functions, no ZooKeeper, no controller state.

The four algorithms are Kafka's PartitionLeaderElectionAlgorithms; the `leader_for_*` helpers turn
one partition's current LeaderAndIsr into the new one (Kafka's `Election` object). Liveness is
passed in as a predicate so tests can describe a cluster with a set.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition, new_leader


class ElectionStrategy(enum.Enum):
    OFFLINE = "OfflinePartitionLeaderElectionStrategy"
    # ElectLeaders with election_type UNCLEAN: the offline election with unclean election allowed
    # whatever the topic's unclean.leader.election.enable says (Kafka's allowUnclean = true).
    OFFLINE_UNCLEAN = "OfflinePartitionLeaderElectionStrategy(true)"
    REASSIGN = "ReassignPartitionLeaderElectionStrategy"
    PREFERRED = "PreferredReplicaPartitionLeaderElectionStrategy"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ElectionResult:
    partition: TopicPartition
    leader_and_isr: LeaderAndIsr | None  # None: no eligible leader
    # Brokers that must receive the LeaderAndIsr request for the new state.
    recipients: tuple[int, ...]


# --- the algorithms -------------------------------------------------------------------------------


def offline_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int], unclean_enabled: bool
) -> int | None:
    """First live in-sync replica in assignment order; else, if unclean election is allowed, the
    first live replica at all (accepting data loss)."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica
    if unclean_enabled:
        for replica in assignment:
            if replica in live_replicas:
                return replica
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int]
) -> int | None:
    for replica in reassignment:
        if replica in live_replicas and replica in isr:
            return replica
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int]
) -> int | None:
    """Only the preferred (first assigned) replica qualifies, and only if it is live and in sync."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Collection[int],
    live_replicas: Collection[int],
    shutting_down_brokers: Collection[int],
) -> int | None:
    for replica in assignment:
        if replica in live_replicas and replica in isr and replica not in shutting_down_brokers:
            return replica
    return None


# --- one partition's new state ----------------------------------------------------------------------

IsOnline = Callable[[int], bool]


def leader_for_offline(
    partition: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online: IsOnline,
    unclean_enabled: bool,
) -> ElectionResult:
    live = [r for r in assignment if is_online(r)]
    leader = offline_partition_leader_election(assignment, current.isr, live, unclean_enabled)
    if leader is None:
        return ElectionResult(partition, None, tuple(live))
    # A clean election keeps the live part of the ISR; an unclean leader starts a new ISR alone.
    new_isr = [r for r in current.isr if is_online(r)] if leader in current.isr else [leader]
    return ElectionResult(partition, current.new_leader_and_isr(leader, new_isr), tuple(live))


def leader_for_reassign(
    partition: TopicPartition, current: LeaderAndIsr, target_replicas: Sequence[int], is_online: IsOnline
) -> ElectionResult:
    live = [r for r in target_replicas if is_online(r)]
    leader = reassign_partition_leader_election(target_replicas, current.isr, live)
    new_state = new_leader(current, leader) if leader is not None else None
    return ElectionResult(partition, new_state, tuple(target_replicas))


def leader_for_preferred_replica(
    partition: TopicPartition, current: LeaderAndIsr, assignment: Sequence[int], is_online: IsOnline
) -> ElectionResult:
    live = [r for r in assignment if is_online(r)]
    leader = preferred_replica_partition_leader_election(assignment, current.isr, live)
    new_state = new_leader(current, leader) if leader is not None else None
    return ElectionResult(partition, new_state, tuple(assignment))


def leader_for_controlled_shutdown(
    partition: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online_or_shutting_down: IsOnline,
    shutting_down_brokers: Collection[int],
) -> ElectionResult:
    live = [r for r in assignment if is_online_or_shutting_down(r)]
    leader = controlled_shutdown_partition_leader_election(
        assignment, current.isr, live, shutting_down_brokers
    )
    # The shutting-down brokers leave the ISR too, so they are not elected again once they are gone.
    new_isr = [r for r in current.isr if r not in shutting_down_brokers]
    new_state = current.new_leader_and_isr(leader, new_isr) if leader is not None else None
    return ElectionResult(partition, new_state, tuple(live))
