"""Partition and replica states, each with the table of states it may be entered from.

The tables are Kafka's (PartitionStateMachine.scala / ReplicaStateMachine.scala); both state
machines validate every transition against them with `is_valid_transition`.
"""

from __future__ import annotations

import enum


class PartitionState(enum.Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"

    def __str__(self) -> str:
        return self.value

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return _PARTITION_PREVIOUS[self]


_P = PartitionState
_PARTITION_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    # Created (replicas assigned) but no leader yet.
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    # Online -> Online is a re-election (preferred, controlled shutdown, reassignment).
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    # Only an offline partition (its topic being deleted) may disappear.
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
}


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    def __str__(self) -> str:
        return self.value

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return _REPLICA_PREVIOUS[self]


_R = ReplicaState
_REPLICA_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    # Ineligible -> Online: a broker holding a replica of a topic under deletion came back.
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.REPLICA_DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.REPLICA_DELETION_INELIGIBLE}),
    _R.REPLICA_DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.REPLICA_DELETION_SUCCESSFUL: frozenset({_R.REPLICA_DELETION_STARTED}),
    _R.REPLICA_DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.REPLICA_DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.REPLICA_DELETION_SUCCESSFUL}),
}


def is_valid_transition(
    current: PartitionState | ReplicaState, target: PartitionState | ReplicaState
) -> bool:
    return current in target.valid_previous_states
