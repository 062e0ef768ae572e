"""Partition reassignment arithmetic and validation: pure functions, no ZooKeeper, no controller.

Kafka 2.4+ (KIP-455) keeps a reassignment in flight inside the partition's assignment:
`replicas` is the full replica set RS, `adding_replicas` (AR) and `removing_replicas` (RR) say
how it differs from the original (ORS = RS - AR) and the target (TRS = RS - RR) replica sets.
These are Kafka's ReplicaAssignment.reassignTo / originReplicas / targetReplicas and
KafkaController.validateReplicas / maybeBuildReassignment.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kafkapy.protocol.errors import InvalidReplicaAssignmentException, KafkaError
from kafkapy.server.controller.leader_and_isr import ReplicaAssignment


def origin_replicas(assignment: ReplicaAssignment) -> tuple[int, ...]:
    """ORS: what the partition had before the reassignment started."""
    return tuple(r for r in assignment.replicas if r not in assignment.adding_replicas)


def target_replicas(assignment: ReplicaAssignment) -> tuple[int, ...]:
    """TRS: what the partition will have once the reassignment completes."""
    return tuple(r for r in assignment.replicas if r not in assignment.removing_replicas)


def is_being_reassigned(assignment: ReplicaAssignment) -> bool:
    return bool(assignment.adding_replicas or assignment.removing_replicas)


def reassign_to(current: ReplicaAssignment, target: Sequence[int]) -> ReplicaAssignment:
    """RS = TRS followed by the original replicas not in it (Kafka's `(target ++ origin).distinct`,
    so the target's first replica stays the preferred leader); AR = RS - ORS, RR = RS - TRS.
    Reassigning a partition that is already moving starts from its original replicas."""
    origin = origin_replicas(current)
    full: list[int] = []
    for r in (*target, *origin):
        if r not in full:
            full.append(r)
    return ReplicaAssignment(
        tuple(full),
        tuple(r for r in full if r not in origin),
        tuple(r for r in full if r not in target),
    )


def build_reassignment(current: ReplicaAssignment, target: Sequence[int] | None) -> ReplicaAssignment | None:
    """The assignment to move to; `target` None cancels (back to the original replicas).
    None when there is nothing to cancel (Kafka answers NO_REASSIGNMENT_IN_PROGRESS)."""
    if target is not None:
        return reassign_to(current, target)
    if is_being_reassigned(current):
        return reassign_to(current, origin_replicas(current))
    return None


def validate_replicas(
    current: ReplicaAssignment, target: Sequence[int], live_broker_ids: Collection[int]
) -> KafkaError | None:
    """Why `target` cannot be reassigned to, with Kafka's messages; None if it can."""
    if not target:
        return InvalidReplicaAssignmentException("Empty replica list specified in partition reassignment.")
    if len(set(target)) != len(target):
        return InvalidReplicaAssignmentException(
            f"Duplicate replica ids in partition reassignment replica list: {_seq(target)}"
        )
    if any(r < 0 for r in target):
        return InvalidReplicaAssignmentException(f"Invalid broker id in replica list: {_seq(target)}")
    # Only the replicas this reassignment adds must be alive: the others already hold the data.
    adding = reassign_to(current, target).adding_replicas
    if not set(adding) <= set(live_broker_ids):
        return InvalidReplicaAssignmentException(
            f"Replica assignment has brokers that are not alive. Replica list: {_seq(adding)}, "
            f"live broker list: {_scala_set(live_broker_ids)}"
        )
    return None


def _seq(replicas: Sequence[int]) -> str:
    # Kafka interpolates Scala collections: List(1, 2) / Set(1, 2).
    return f"List({', '.join(map(str, replicas))})"


def _scala_set(replicas: Collection[int]) -> str:
    return f"Set({', '.join(map(str, sorted(replicas)))})"
