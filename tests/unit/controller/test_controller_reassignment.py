"""Partition reassignment in KafkaController over the in-memory ZooKeeper and fake brokers:
the znode request, catch-up through ISR changes, leader move, removal of the old replicas,
KIP-455 requests with cancellation, refusals, and a new controller resuming the work."""

import pytest
from controller_fakes import FakeZk  # noqa: F401 - the fixture's ZooKeeper
from test_controller_flows import cluster, settle, wait_until  # noqa: F401 - the shared fixture

from kafkapy.protocol.errors import (
    InvalidReplicaAssignmentException,
    NoReassignmentInProgressException,
    NotControllerException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.controller.leader_and_isr import ReplicaAssignment, TopicPartition
from kafkapy.server.controller.request_batch import LEADER_AND_ISR, STOP_REPLICA

T0 = TopicPartition("t", 0)
REASSIGN = "/admin/reassign_partitions"


def stops(net, broker_id, delete):
    return [
        p
        for body in net.of(STOP_REPLICA, broker_id)
        for t in body.topic_states
        for p in t.partition_states
        if p.delete_partition == delete
    ]


@pytest.mark.timeout(30)
def test_zk_reassignment_moves_replicas_once_the_target_is_in_sync(cluster):  # noqa: F811
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [0, 1]})
    settle(c)
    epoch_before = zk.states[T0].leader_and_isr.leader_epoch
    zk.reassignment = {T0: [1, 2]}
    zk.fire(REASSIGN)
    settle(c)
    # In flight: RS = TRS + ORS in the topic znode, a new leader epoch, replica 2 started.
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 2, 0), (2,), (0,))
    assert zk.states[T0].leader_and_isr.leader_epoch == epoch_before + 1
    assert T0 in c.context.partitions_being_reassigned
    wait_until(
        lambda: any(
            p.is_new and p.replicas == [1, 2, 0]
            for body in net.of(LEADER_AND_ISR, 2)
            for t in body.topic_states
            for p in t.partition_states
        )
    )
    assert zk.reassignment == {T0: [1, 2]}
    # Replica 2 catches up: the leader (0) adds it to the ISR.
    zk.set_isr(T0, (0, 1, 2))
    settle(c)
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 2))
    lai = zk.states[T0].leader_and_isr
    assert lai.leader == 1 and 0 not in lai.isr
    assert zk.reassignment is None
    assert T0 not in c.context.partitions_being_reassigned
    wait_until(lambda: stops(net, 0, delete=True))
    assert c.context.partition_replica_assignment(T0) == (1, 2)


@pytest.mark.timeout(30)
def test_raising_the_replication_factor_keeps_the_leader(cluster):  # noqa: F811
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1]})
    settle(c)
    assert c.alter_partition_reassignments({T0: (1, 0, 2)}).result(5) == {T0: None}
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 0, 2), (0, 2), ())
    assert c.list_partition_reassignments(None).result(5) == {T0: ReplicaAssignment((1, 0, 2), (0, 2), ())}
    zk.set_isr(T0, (1, 0, 2))
    settle(c)
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 0, 2))
    assert zk.states[T0].leader_and_isr.leader == 1
    assert c.list_partition_reassignments(None).result(5) == {}


@pytest.mark.timeout(30)
def test_api_refusals_and_cancellation(cluster):  # noqa: F811
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [0, 1], 1: [0, 1]})
    settle(c)
    missing = TopicPartition("t", 9)
    results = c.alter_partition_reassignments(
        {
            T0: (1, 7),
            TopicPartition("t", 1): None,
            missing: (0, 1),
        }
    ).result(5)
    assert isinstance(results[T0], InvalidReplicaAssignmentException)
    assert isinstance(results[TopicPartition("t", 1)], NoReassignmentInProgressException)
    assert isinstance(results[missing], UnknownTopicOrPartitionException)
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((0, 1))
    # Start one and cancel it: the original replicas stay, the added one is stopped and deleted.
    assert c.alter_partition_reassignments({T0: (2, 1)}).result(5) == {T0: None}
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((2, 1, 0), (2,), (0,))
    assert c.alter_partition_reassignments({T0: None}).result(5) == {T0: None}
    assert set(zk.topics["t"].partitions[0].replicas) == {0, 1}
    assert not zk.topics["t"].partitions[0].adding_replicas
    wait_until(lambda: stops(net, 2, delete=True))
    assert T0 not in c.context.partitions_being_reassigned


@pytest.mark.timeout(30)
def test_zk_request_to_a_dead_broker_is_refused_and_removed(cluster):  # noqa: F811
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [0, 1]})
    settle(c)
    zk.reassignment = {T0: [1, 5]}
    zk.fire(REASSIGN)
    settle(c)
    assert zk.reassignment is None
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((0, 1))


@pytest.mark.timeout(30)
def test_a_passive_controller_answers_not_controller(cluster):  # noqa: F811
    zk, net, start = cluster
    start(0)
    passive = start(1)
    with pytest.raises(NotControllerException):
        passive.alter_partition_reassignments({T0: (1, 2)}).result(5)
    with pytest.raises(NotControllerException):
        passive.list_partition_reassignments(None).result(5)


@pytest.mark.timeout(30)
def test_a_new_controller_resumes_and_completes_a_reassignment(cluster):  # noqa: F811
    zk, net, start = cluster
    first = start(0)
    zk.add_topic("t", {0: [0, 1]})
    settle(first)
    zk.reassignment = {T0: [1, 2]}
    zk.fire(REASSIGN)
    settle(first)
    first.shutdown()
    zk.controller = None
    zk.states[T0] = type(zk.states[T0])(zk.states[T0].leader_and_isr, zk.states[T0].controller_epoch)
    second = start(1)
    assert second.is_active()
    assert T0 in second.context.partitions_being_reassigned
    zk.set_isr(T0, (0, 1, 2))
    settle(second)
    wait_until(lambda: zk.reassignment is None)
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 2))


@pytest.mark.timeout(30)
def test_a_new_controller_resumes_an_api_reassignment_from_the_topic_znode(cluster):  # noqa: F811
    zk, net, start = cluster
    first = start(0)
    zk.add_topic("t", {0: [1]})
    settle(first)
    assert first.alter_partition_reassignments({T0: (1, 2)}).result(5) == {T0: None}
    first.shutdown()
    zk.controller = None
    assert zk.reassignment is None  # nothing in /admin: only the topic znode knows
    second = start(1)
    assert second.list_partition_reassignments(None).result(5) == {T0: ReplicaAssignment((1, 2), (2,), ())}
    zk.set_isr(T0, (1, 2))
    settle(second)
    assert zk.topics["t"].partitions[0] == ReplicaAssignment((1, 2))
    assert second.list_partition_reassignments(frozenset({T0})).result(5) == {}
