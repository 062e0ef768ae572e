"""ReplicaStateMachine against an in-memory ZooKeeper."""

import logging

from controller_fakes import FakeZk, assign, make_batch, make_context

from kafkapy.protocol.constants import NO_LEADER
from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
)
from kafkapy.server.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.server.controller.request_batch import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA
from kafkapy.server.controller.states import ReplicaState as R


def setup(live=(0, 1, 2)):
    ctx = make_context(live)
    zk = FakeZk()
    zk.controller_epoch_version = ctx.epoch_zk_version
    batch, recorder, _ = make_batch(ctx)
    return ctx, zk, ReplicaStateMachine(0, ctx, zk, batch), recorder


def _lead(ctx, zk, tp, lai):
    zk.states[tp] = ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(lai, 1)


def test_new_then_online_without_leader_sends_nothing():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    replicas = [PartitionAndReplica(tp, 0), PartitionAndReplica(tp, 1)]
    rsm.handle_state_changes(replicas, R.NEW)
    rsm.handle_state_changes(replicas, R.ONLINE)
    assert all(ctx.replica_states[r] is R.ONLINE for r in replicas)
    assert rec.sent == []


def test_invalid_replica_transitions_are_skipped_and_valid_ones_proceed():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    a, b = PartitionAndReplica(tp, 0), PartitionAndReplica(tp, 1)
    rsm.handle_state_changes([a], R.NEW)
    # b is NonExistent and cannot start deletion; a cannot either (it is New).
    rsm.handle_state_changes([a, b], R.REPLICA_DELETION_STARTED)
    assert ctx.replica_states == {a: R.NEW, b: R.NON_EXISTENT}
    rsm.handle_state_changes([a], R.OFFLINE)
    assert ctx.replica_states[a] is R.OFFLINE


def test_online_replica_of_led_partition_gets_leader_and_isr():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 2, (0, 1), 3))
    r = PartitionAndReplica(tp, 1)
    ctx.replica_states[r] = R.OFFLINE
    rsm.handle_state_changes([r], R.ONLINE)
    [sent] = rec.of(LEADER_AND_ISR)
    assert sent.broker_id == 1
    assert sent.body.topic_states[0].partition_states[0].is_new is False


def test_offline_follower_is_removed_from_isr_in_zk_and_remaining_replicas_are_told():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 5, (0, 1, 2), 7))
    r = PartitionAndReplica(tp, 2)
    ctx.replica_states[r] = R.ONLINE
    rsm.handle_state_changes([r], R.OFFLINE)
    assert ctx.replica_states[r] is R.OFFLINE
    assert zk.states[tp].leader_and_isr == LeaderAndIsr(0, 6, (0, 1), 8)
    [stop] = rec.of(STOP_REPLICA)
    assert stop.broker_id == 2
    assert stop.body.topic_states[0].partition_states[0].delete_partition is False
    assert sorted(s.broker_id for s in rec.of(LEADER_AND_ISR)) == [0, 1]
    assert rec.of(UPDATE_METADATA)


def test_offline_leader_leaves_no_leader_and_the_last_isr_member_stays():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 0, (0,), 0))
    r = PartitionAndReplica(tp, 0)
    ctx.replica_states[r] = R.ONLINE
    rsm.handle_state_changes([r], R.OFFLINE)
    assert zk.states[tp].leader_and_isr == LeaderAndIsr(NO_LEADER, 1, (0,), 1)


def test_deletion_states_send_stop_replica_with_delete_and_end_non_existent():
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    r = PartitionAndReplica(tp, 1)
    ctx.replica_states[r] = R.OFFLINE
    rsm.handle_state_changes([r], R.REPLICA_DELETION_STARTED)
    [stop] = rec.of(STOP_REPLICA)
    assert stop.body.topic_states[0].partition_states[0].delete_partition is True
    rsm.handle_state_changes([r], R.REPLICA_DELETION_SUCCESSFUL)
    rsm.handle_state_changes([r], R.NON_EXISTENT)
    assert r not in ctx.replica_states
    assert ctx.partition_replica_assignment(tp) == (0,)


def test_startup_marks_replicas_on_dead_brokers_offline():
    ctx, zk, rsm, rec = setup(live=(0,))
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 0, (0, 1), 0))
    rsm.startup()
    assert ctx.replica_states == {PartitionAndReplica(tp, 0): R.ONLINE, PartitionAndReplica(tp, 1): R.OFFLINE}
    assert zk.states[tp].leader_and_isr.isr == (0,)


def test_replica_transitions_are_logged_at_trace_only(caplog):
    """Kafka logs each replica's transition at TRACE: an INFO state-change.log stays one line per
    request, not one per replica (10k partitions make 30k of them per election)."""
    ctx, zk, rsm, _ = setup()
    [tp] = assign(ctx, "t", {0: [1, 2]})
    replicas = [PartitionAndReplica(tp, 1), PartitionAndReplica(tp, 2)]
    with caplog.at_level(logging.INFO, logger="state.change.logger"):
        rsm.handle_state_changes(replicas, R.NEW)
    assert not [r for r in caplog.records if "Changed state of replica" in r.getMessage()]
    with caplog.at_level(logging.DEBUG, logger="state.change.logger"):
        rsm.handle_state_changes(replicas, R.ONLINE)
    lines = [r for r in caplog.records if "Changed state of replica" in r.getMessage()]
    assert len(lines) == 2 and all(r.levelno == logging.DEBUG for r in lines)


def test_offline_follower_shrink_from_a_stale_cached_state_rereads_zk():
    # The first attempt uses the controller's cached state; the leader changed the ISR in ZooKeeper
    # since, so the conditional write fails and the retry works from what ZooKeeper holds.
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 5, (0, 1, 2), 7))
    zk.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 5, (0, 2), 8), 1)  # leader dropped 1
    r = PartitionAndReplica(tp, 2)
    ctx.replica_states[r] = R.ONLINE
    rsm.handle_state_changes([r], R.OFFLINE)
    assert zk.states[tp].leader_and_isr == LeaderAndIsr(0, 6, (0,), 9)
    assert ctx.partition_leadership_info[tp].leader_and_isr == LeaderAndIsr(0, 6, (0,), 9)


def test_offline_follower_missing_from_the_cached_isr_is_checked_in_zk():
    # A cached ISR without the replica may predate the leader adding it back: ZooKeeper decides.
    ctx, zk, rsm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _lead(ctx, zk, tp, LeaderAndIsr(0, 5, (0, 1), 7))
    zk.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 5, (0, 1, 2), 8), 1)
    r = PartitionAndReplica(tp, 2)
    ctx.replica_states[r] = R.ONLINE
    rsm.handle_state_changes([r], R.OFFLINE)
    assert zk.states[tp].leader_and_isr == LeaderAndIsr(0, 6, (0, 1), 9)
