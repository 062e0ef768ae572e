"""PartitionStateMachine against an in-memory ZooKeeper: transitions, elections, requests."""

from controller_fakes import FakeZk, assign, make_batch, make_context

from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.errors import StateChangeFailedException
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from kafkapy.server.controller.partition_state_machine import PartitionStateMachine
from kafkapy.server.controller.request_batch import LEADER_AND_ISR, UPDATE_METADATA
from kafkapy.server.controller.states import PartitionState as P


def setup(live=(0, 1, 2)):
    ctx = make_context(live)
    zk = FakeZk()
    zk.controller_epoch_version = ctx.epoch_zk_version
    batch, recorder, _ = make_batch(ctx)
    return ctx, zk, PartitionStateMachine(0, ctx, zk, batch), recorder


def test_new_partition_goes_online_with_first_live_replica_as_leader_and_live_isr():
    ctx, zk, psm, rec = setup(live=(1, 2))
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    psm.handle_state_changes([tp], P.NEW)
    results = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)
    expected = LeaderAndIsr(1, 0, (1, 2), 0)
    assert results == {tp: expected}
    assert ctx.partition_states[tp] is P.ONLINE
    assert zk.states[tp] == LeaderIsrAndControllerEpoch(expected, 1)
    # LeaderAndIsr to the ISR members, flagged new; UpdateMetadata to every live broker.
    assert sorted(s.broker_id for s in rec.of(LEADER_AND_ISR)) == [1, 2]
    state = rec.of(LEADER_AND_ISR, 1)[0].body.topic_states[0].partition_states[0]
    assert state.is_new is True and state.leader == 1 and state.isr == [1, 2]
    assert sorted(s.broker_id for s in rec.of(UPDATE_METADATA)) == [1, 2]


def test_invalid_transitions_are_reported_per_partition_and_the_rest_proceed():
    ctx, zk, psm, rec = setup()
    good, bad = assign(ctx, "t", {0: [0], 1: [1]})
    psm.handle_state_changes([good], P.NEW)
    # `bad` is NonExistent: it cannot go Online directly.
    results = psm.handle_state_changes([good, bad], P.ONLINE, ElectionStrategy.OFFLINE)
    assert isinstance(results[bad], StateChangeFailedException)
    assert "NonExistentPartition" in str(results[bad])
    assert results[good] == LeaderAndIsr(0, 0, (0,), 0)
    assert ctx.partition_states == {good: P.ONLINE, bad: P.NON_EXISTENT}


def test_new_partition_without_live_replicas_stays_new():
    ctx, zk, psm, rec = setup(live=(0,))
    [tp] = assign(ctx, "t", {0: [5, 6]})
    psm.handle_state_changes([tp], P.NEW)
    results = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)
    assert isinstance(results[tp], StateChangeFailedException)
    assert ctx.partition_states[tp] is P.NEW
    assert tp not in zk.states


def _online(ctx, zk, tp, lai):
    state = LeaderIsrAndControllerEpoch(lai, 1)
    zk.states[tp] = state
    ctx.partition_leadership_info[tp] = state
    ctx.partition_states[tp] = P.ONLINE


def test_offline_partition_elects_a_live_isr_member_and_notifies_live_replicas():
    ctx, zk, psm, rec = setup(live=(1, 2))
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 3, (0, 2), 4))
    psm.handle_state_changes([tp], P.OFFLINE)
    assert ctx.partition_states[tp] is P.OFFLINE
    results = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)
    assert results[tp] == LeaderAndIsr(2, 4, (2,), 5)
    assert ctx.partition_leadership_info[tp].leader_and_isr == results[tp]
    assert sorted(s.broker_id for s in rec.of(LEADER_AND_ISR)) == [1, 2]


def test_election_retries_after_a_zk_version_conflict():
    ctx, zk, psm, rec = setup(live=(1, 2))
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0, 1, 2), 0))
    ctx.partition_states[tp] = P.OFFLINE
    zk.conflict_once.add(tp)
    results = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)
    # The second attempt re-read the state (now at version 1) and wrote version 2.
    assert results[tp] == LeaderAndIsr(1, 1, (1, 2), 2)


def test_offline_election_without_live_isr_respects_the_topic_unclean_config():
    ctx, zk, psm, rec = setup(live=(1,))
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0,), 0))
    ctx.partition_states[tp] = P.OFFLINE
    assert isinstance(psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)[tp], Exception)
    assert ctx.partition_states[tp] is P.OFFLINE
    zk.topic_configs["t"] = {"unclean.leader.election.enable": "true"}
    assert psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.OFFLINE)[tp] == LeaderAndIsr(
        1, 1, (1,), 1
    )


def test_election_aborts_when_another_controller_wrote_the_state():
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0, 1), 0))
    zk.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0, 1), 0), controller_epoch=7)
    result = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.PREFERRED)[tp]
    assert "another controller" in str(result)


def test_preferred_election_moves_leadership_back_to_the_first_replica():
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1]})
    _online(ctx, zk, tp, LeaderAndIsr(1, 2, (1, 0), 3))
    assert psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.PREFERRED)[tp] == LeaderAndIsr(
        0, 3, (1, 0), 4
    )


def test_controlled_shutdown_election_avoids_and_drops_the_shutting_down_broker():
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0, 1, 2), 0))
    ctx.shutting_down_broker_ids.add(0)
    result = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN)[tp]
    assert result == LeaderAndIsr(1, 1, (1, 2), 1)


def test_offline_to_non_existent_forgets_the_partition_state():
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0,), 0))
    psm.handle_state_changes([tp], P.OFFLINE)
    psm.handle_state_changes([tp], P.NON_EXISTENT)
    assert tp not in ctx.partition_states


def test_startup_initializes_states_from_leadership_and_brings_partitions_online():
    ctx, zk, psm, rec = setup(live=(0, 1))
    new, online, offline = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    assign(ctx, "t", {0: [0, 1], 1: [1, 0], 2: [2, 1]})
    _online(ctx, zk, online, LeaderAndIsr(1, 0, (1, 0), 0))
    _online(ctx, zk, offline, LeaderAndIsr(2, 0, (2, 1), 0))
    ctx.partition_states.clear()
    psm.startup()
    assert ctx.partition_states == {new: P.ONLINE, online: P.ONLINE, offline: P.ONLINE}
    assert zk.states[new].leader_and_isr.leader == 0
    assert zk.states[offline].leader_and_isr == LeaderAndIsr(1, 1, (1,), 1)


def _count_reads(zk):
    reads = []
    real = zk.get_partition_states

    def get_partition_states(partitions):
        partitions = list(partitions)
        reads.append(partitions)
        return real(partitions)

    zk.get_partition_states = get_partition_states
    return reads


def test_controlled_shutdown_election_starts_from_the_cached_state():
    ctx, zk, psm, rec = setup()
    tps = assign(ctx, "t", {0: [0, 1, 2], 1: [0, 2, 1]})
    for tp in tps:
        _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0, 1, 2), 0))
    reads = _count_reads(zk)
    ctx.shutting_down_broker_ids.add(0)
    results = psm.handle_state_changes(tps, P.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN)
    assert results == {tps[0]: LeaderAndIsr(1, 1, (1, 2), 1), tps[1]: LeaderAndIsr(2, 1, (1, 2), 1)}
    assert reads == []  # no ZooKeeper read: each write was conditional on the cached version
    assert zk.states[tps[1]].leader_and_isr == LeaderAndIsr(2, 1, (1, 2), 1)


def _shutdown_election_with_zk_ahead_of_the_cache(cached: LeaderAndIsr, in_zk: LeaderAndIsr):
    """Broker 0 shuts down; the controller cached `cached`, ZooKeeper holds `in_zk` (a leader's
    ISR change the controller has not heard of yet)."""
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _online(ctx, zk, tp, cached)
    zk.states[tp] = LeaderIsrAndControllerEpoch(in_zk, 1)
    reads = _count_reads(zk)
    ctx.shutting_down_broker_ids.add(0)
    result = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN)[tp]
    return ctx, tp, result, reads


def test_controlled_shutdown_election_from_a_stale_cached_state_rereads_zk():
    # The leader shrank the ISR: the write conditional on the cached version fails and the
    # retry elects from what ZooKeeper holds.
    ctx, tp, result, reads = _shutdown_election_with_zk_ahead_of_the_cache(
        LeaderAndIsr(0, 0, (0, 1, 2), 0), LeaderAndIsr(0, 0, (0, 2), 1)
    )
    assert result == LeaderAndIsr(2, 1, (2,), 2)
    assert reads == [[tp]]
    assert ctx.partition_leadership_info[tp].leader_and_isr == result


def test_controlled_shutdown_election_finding_no_leader_in_a_cached_state_asks_zk():
    # The leader added 1 back. Nothing would be written from the cached ISR, so no zk version
    # could expose it as stale: ZooKeeper decides.
    ctx, tp, result, reads = _shutdown_election_with_zk_ahead_of_the_cache(
        LeaderAndIsr(0, 0, (0,), 0), LeaderAndIsr(0, 0, (0, 1), 1)
    )
    assert result == LeaderAndIsr(1, 1, (1,), 2)
    assert reads == [[tp]]


def test_controlled_shutdown_election_without_a_leader_in_zk_either_fails():
    ctx, zk, psm, rec = setup()
    [tp] = assign(ctx, "t", {0: [0, 1, 2]})
    _online(ctx, zk, tp, LeaderAndIsr(0, 0, (0,), 0))
    ctx.shutting_down_broker_ids.add(0)
    result = psm.handle_state_changes([tp], P.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN)[tp]
    assert isinstance(result, StateChangeFailedException)
    assert zk.states[tp].leader_and_isr == LeaderAndIsr(0, 0, (0,), 0)
