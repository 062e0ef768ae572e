"""Leader election algorithms, pure functions, as Kafka's PartitionLeaderElectionAlgorithms."""

from kafkapy.server.controller import election as el
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition

TP = TopicPartition("t", 0)


def test_offline_election_picks_first_live_isr_replica_in_assignment_order():
    assert (
        el.offline_partition_leader_election(
            [1, 2, 3], isr=[3, 2], live_replicas={2, 3}, unclean_enabled=False
        )
        == 2
    )


def test_offline_election_without_live_isr_fails_unless_unclean_allowed():
    assert (
        el.offline_partition_leader_election([1, 2, 3], isr=[1], live_replicas={2, 3}, unclean_enabled=False)
        is None
    )
    assert (
        el.offline_partition_leader_election([1, 2, 3], isr=[1], live_replicas={3, 2}, unclean_enabled=True)
        == 2
    )


def test_offline_election_with_nothing_live_fails_even_when_unclean():
    assert (
        el.offline_partition_leader_election([1, 2], isr=[1], live_replicas=set(), unclean_enabled=True)
        is None
    )


def test_reassign_election_uses_target_replicas_order():
    assert el.reassign_partition_leader_election([3, 1], isr=[1, 3], live_replicas={1, 3}) == 3
    assert el.reassign_partition_leader_election([3, 1], isr=[2], live_replicas={1, 3}) is None


def test_preferred_election_only_accepts_the_first_assigned_replica():
    assert el.preferred_replica_partition_leader_election([2, 1], isr=[1, 2], live_replicas={1, 2}) == 2
    assert el.preferred_replica_partition_leader_election([2, 1], isr=[1], live_replicas={1, 2}) is None
    assert el.preferred_replica_partition_leader_election([2, 1], isr=[1, 2], live_replicas={1}) is None
    assert el.preferred_replica_partition_leader_election([], isr=[], live_replicas=set()) is None


def test_controlled_shutdown_election_skips_shutting_down_brokers():
    assert el.controlled_shutdown_partition_leader_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == 2
    assert el.controlled_shutdown_partition_leader_election([1, 2], [1], {1, 2}, {1}) is None


def test_leader_for_offline_keeps_live_isr_and_bumps_epoch():
    current = LeaderAndIsr(1, 4, (1, 2, 3), zk_version=7)
    result = el.leader_for_offline(TP, current, [1, 2, 3], lambda r: r in {2, 3}, unclean_enabled=False)
    assert result.leader_and_isr == LeaderAndIsr(2, 5, (2, 3), 7)
    assert result.recipients == (2, 3)


def test_leader_for_offline_unclean_leader_starts_a_new_isr_alone():
    current = LeaderAndIsr(1, 0, (1,), 3)
    result = el.leader_for_offline(TP, current, [1, 2, 3], lambda r: r == 3, unclean_enabled=True)
    assert result.leader_and_isr == LeaderAndIsr(3, 1, (3,), 3)


def test_leader_for_offline_without_candidate_has_no_state_but_lists_live_replicas():
    result = el.leader_for_offline(
        TP, LeaderAndIsr(1, 0, (1,)), [1, 2], lambda r: r == 2, unclean_enabled=False
    )
    assert result.leader_and_isr is None
    assert result.recipients == (2,)


def test_leader_for_preferred_keeps_isr_and_sends_to_all_assigned():
    current = LeaderAndIsr(2, 3, (1, 2), 5)
    result = el.leader_for_preferred_replica(TP, current, [1, 2], lambda r: True)
    assert result.leader_and_isr == LeaderAndIsr(1, 4, (1, 2), 5)
    assert result.recipients == (1, 2)


def test_leader_for_controlled_shutdown_removes_shutting_down_brokers_from_isr():
    current = LeaderAndIsr(1, 0, (1, 2, 3), 0)
    result = el.leader_for_controlled_shutdown(TP, current, [1, 2, 3], lambda r: True, {1})
    assert result.leader_and_isr == LeaderAndIsr(2, 1, (2, 3), 0)


def test_leader_for_reassign_elects_from_target_replicas():
    current = LeaderAndIsr(1, 2, (1, 2, 4), 1)
    result = el.leader_for_reassign(TP, current, [4, 2], lambda r: True)
    assert result.leader_and_isr == LeaderAndIsr(4, 3, (1, 2, 4), 1)
