"""The pure parts of partition reassignment: RS/AR/RR arithmetic, cancellation, validation, and
the leader election from the target replicas."""

from kafkapy.protocol.errors import InvalidReplicaAssignmentException
from kafkapy.server.controller.election import leader_for_reassign, reassign_partition_leader_election
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, ReplicaAssignment, TopicPartition
from kafkapy.server.controller.reassignment_rules import (
    build_reassignment,
    is_being_reassigned,
    origin_replicas,
    reassign_to,
    target_replicas,
    validate_replicas,
)


def test_full_replica_set_is_target_then_the_original_replicas_left():
    moving = reassign_to(ReplicaAssignment((0, 1)), [1, 2])
    assert moving == ReplicaAssignment((1, 2, 0), adding_replicas=(2,), removing_replicas=(0,))
    assert origin_replicas(moving) == (1, 0) and target_replicas(moving) == (1, 2)
    assert is_being_reassigned(moving)


def test_disjoint_move_adds_and_removes_everything():
    moving = reassign_to(ReplicaAssignment((0, 1)), [2, 3])
    assert moving == ReplicaAssignment((2, 3, 0, 1), (2, 3), (0, 1))


def test_raising_the_replication_factor_only_adds():
    moving = reassign_to(ReplicaAssignment((0,)), [0, 1, 2])
    assert moving == ReplicaAssignment((0, 1, 2), (1, 2), ())


def test_same_target_is_no_reassignment():
    assert not is_being_reassigned(reassign_to(ReplicaAssignment((0, 1)), [0, 1]))


def test_reassigning_a_moving_partition_starts_from_its_original_replicas():
    moving = reassign_to(ReplicaAssignment((0, 1)), [1, 2])
    again = reassign_to(moving, [3, 4])
    assert again == ReplicaAssignment((3, 4, 1, 0), (3, 4), (1, 0))


def test_cancel_goes_back_to_the_original_replicas_and_needs_a_reassignment():
    moving = reassign_to(ReplicaAssignment((0, 1)), [1, 2])
    cancelled = build_reassignment(moving, None)
    assert cancelled is not None and not is_being_reassigned(cancelled)
    assert set(cancelled.replicas) == {0, 1}
    assert build_reassignment(ReplicaAssignment((0, 1)), None) is None


def test_validation_refuses_as_kafka_does():
    current = ReplicaAssignment((0, 1))
    live = {0, 1, 2}
    empty = validate_replicas(current, [], live)
    assert isinstance(empty, InvalidReplicaAssignmentException)
    assert empty.message == "Empty replica list specified in partition reassignment."
    assert validate_replicas(current, [1, 1], live).message == (
        "Duplicate replica ids in partition reassignment replica list: List(1, 1)"
    )
    assert (
        validate_replicas(current, [1, -1], live).message == "Invalid broker id in replica list: List(1, -1)"
    )
    dead = validate_replicas(current, [1, 5], live)
    assert dead.message == (
        "Replica assignment has brokers that are not alive. Replica list: List(5), "
        "live broker list: Set(0, 1, 2)"
    )
    assert validate_replicas(current, [2, 1], live) is None


def test_an_original_replica_may_be_dead():
    assert validate_replicas(ReplicaAssignment((0, 1)), [1, 2], {1, 2}) is None


def test_reassign_election_picks_the_first_live_in_sync_target_replica():
    assert reassign_partition_leader_election([1, 2], isr=[0, 2, 1], live_replicas=[1, 2]) == 1
    assert reassign_partition_leader_election([1, 2], isr=[0, 2], live_replicas=[1, 2]) == 2
    assert reassign_partition_leader_election([1, 2], isr=[0, 1, 2], live_replicas=[2]) == 2
    assert reassign_partition_leader_election([1, 2], isr=[0], live_replicas=[1, 2]) is None


def test_reassign_election_bumps_the_epoch_and_tells_the_target():
    tp = TopicPartition("t", 0)
    result = leader_for_reassign(tp, LeaderAndIsr(0, 4, (0, 1, 2), 7), [1, 2], lambda r: True)
    assert result.leader_and_isr == LeaderAndIsr(1, 5, (0, 1, 2), 7)
    assert result.recipients == (1, 2)
