"""The leader's pure replication decisions: high watermark, ISR expansion and shrinking."""

from __future__ import annotations

import uuid

from replication_helpers import LAG, NOW, OffsetsLog, State, leader_partition

from kafkapy.server.partition import Partition, RemoteReplica


def test_high_watermark_is_the_smallest_log_end_offset_in_the_isr() -> None:
    p = leader_partition(leo=10)
    assert p.log.high_watermark == 0  # followers' positions are unknown after election
    p.update_follower_fetch_state(1, 7, NOW)
    assert p.log.high_watermark == 0
    moved, _ = p.update_follower_fetch_state(2, 4, NOW)
    assert moved and p.log.high_watermark == 4
    moved, _ = p.update_follower_fetch_state(2, 10, NOW)
    assert moved and p.log.high_watermark == 7


def test_high_watermark_never_moves_backwards() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.update_follower_fetch_state(2, 10, NOW)
    assert p.log.high_watermark == 10
    moved, _ = p.update_follower_fetch_state(2, 3, NOW)  # a follower that truncated
    assert not moved and p.log.high_watermark == 10


def test_leader_alone_in_isr_moves_high_watermark_on_append() -> None:
    p = leader_partition(leo=0, isr=(0,))
    p.log.log_end_offset = 5
    assert p.maybe_increment_high_watermark(NOW + LAG + 1)
    assert p.log.high_watermark == 5


def test_caught_up_follower_outside_isr_still_holds_back_the_high_watermark() -> None:
    p = leader_partition(leo=10, isr=(0, 1))
    p.update_follower_fetch_state(1, 10, NOW)
    p.update_follower_fetch_state(2, 10, NOW)  # caught up now, not yet in the ISR
    p.log.log_end_offset = 20
    p.update_follower_fetch_state(1, 20, NOW + 1)
    assert p.log.high_watermark == 10  # replica 2 was caught up within the lag time
    p.update_follower_fetch_state(1, 20, NOW + LAG + 1)
    assert p.log.high_watermark == 20  # no longer: only the ISR counts


def test_pending_shrink_still_counts_the_old_members() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.pending_isr = frozenset({0, 1})
    assert p.maximal_isr == {0, 1, 2}
    assert not p.maybe_increment_high_watermark(NOW + LAG + 1)
    p.isr, p.pending_isr = frozenset({0, 1}), None
    assert p.maybe_increment_high_watermark(NOW + LAG + 1) and p.log.high_watermark == 10


def test_follower_caught_up_to_high_watermark_and_epoch_start_may_join() -> None:
    p = leader_partition(leo=10, isr=(0, 1))
    p.update_follower_fetch_state(1, 10, NOW)
    assert p.log.high_watermark == 10
    _, expand = p.update_follower_fetch_state(2, 9, NOW)
    assert expand is None
    _, expand = p.update_follower_fetch_state(2, 10, NOW)
    assert expand == {0, 1, 2}


def test_follower_behind_this_leaders_epoch_start_may_not_join() -> None:
    p = leader_partition(leo=10, isr=(0,))
    p.log.high_watermark = 5
    _, expand = p.update_follower_fetch_state(1, 7, NOW)  # >= HW but before epoch start (10)
    assert expand is None
    assert p.isr_to_expand(1) is None


def test_no_expansion_while_an_isr_change_is_in_flight_or_for_unassigned_replicas() -> None:
    p = leader_partition(leo=0, isr=(0,))
    p.pending_isr = frozenset({0, 1})
    _, expand = p.update_follower_fetch_state(2, 0, NOW)
    assert expand is None
    p.pending_isr = None
    assert p.isr_to_expand(7) is None
    assert p.isr_to_expand(2) == {0, 2}


def test_lagging_follower_is_out_of_sync_after_lag_time() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.update_follower_fetch_state(2, 3, NOW)
    assert p.out_of_sync_replicas(NOW + LAG) == frozenset()
    assert p.out_of_sync_replicas(NOW + LAG + 1) == {2}


def test_follower_at_leader_end_offset_is_never_out_of_sync() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.update_follower_fetch_state(2, 10, NOW)
    assert p.out_of_sync_replicas(NOW + 10 * LAG) == frozenset()


def test_follower_that_never_fetched_from_new_leader_drops_out_after_lag() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    assert p.out_of_sync_replicas(NOW + LAG + 1) == {2}


def test_no_shrink_while_an_isr_change_is_in_flight() -> None:
    p = leader_partition(leo=10)
    p.pending_isr = frozenset({0, 1})
    assert p.out_of_sync_replicas(NOW + 10 * LAG) == frozenset()


def test_follower_trailing_by_one_request_counts_as_caught_up() -> None:
    # Kafka's rule: reaching the leader end offset of the previous fetch counts as caught up
    # at the time of that previous fetch.
    r = RemoteReplica(1)
    r.update_fetch_state(0, NOW, 10)
    assert r.last_caught_up_ms == 0
    r.update_fetch_state(10, NOW + 500, 20)
    assert r.last_caught_up_ms == NOW
    r.update_fetch_state(20, NOW + 900, 20)
    assert r.last_caught_up_ms == NOW + 900


def test_new_leader_epoch_resets_follower_positions() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.make_leader(State(0, 2, [0, 1]), 1, uuid.UUID(int=0), NOW + 5)
    assert p.remote_replicas[1].log_end_offset == -1
    assert p.remote_replicas[1].last_caught_up_ms == NOW + 5
    assert p.remote_replicas[2].last_caught_up_ms == 0  # outside the ISR
    assert p.leader_epoch_start_offset == 10


def test_same_leader_epoch_keeps_follower_positions() -> None:
    p = leader_partition(leo=10)
    p.update_follower_fetch_state(1, 10, NOW)
    p.make_leader(State(0, 1, [0, 1, 2]), 1, uuid.UUID(int=0), NOW + 5)
    assert p.remote_replicas[1].log_end_offset == 10


def test_leader_and_isr_clears_a_pending_isr_change() -> None:
    p = leader_partition(leo=10)
    p.pending_isr = frozenset({0})
    p.make_leader(State(0, 1, [0, 1], partition_epoch=3), 1, uuid.UUID(int=0), NOW)
    assert p.pending_isr is None and p.isr == {0, 1} and p.partition_epoch == 3


def test_becoming_follower_reports_leader_or_epoch_change() -> None:
    p = Partition(leader_partition().tp, 1, OffsetsLog(5))
    assert p.make_follower(State(0, 1, [0, 1, 2]), 1, uuid.UUID(int=0))
    assert not p.make_follower(State(0, 1, [0, 1, 2]), 1, uuid.UUID(int=0))
    assert p.make_follower(State(0, 2, [0, 1, 2]), 1, uuid.UUID(int=0))
    assert not p.update_follower_fetch_state(2, 5, NOW)[0]  # followers track no replicas


def test_acks_all_completes_once_high_watermark_passes_and_checks_min_isr() -> None:
    p = leader_partition(leo=10, isr=(0, 1))
    p.log.config = p.log.config.__class__(min_insync_replicas=2)
    assert p.check_enough_replicas_reached(10) == (False, 0)
    p.update_follower_fetch_state(1, 10, NOW)
    assert p.check_enough_replicas_reached(10) == (True, 0)
    p.isr = frozenset({0})
    assert p.check_enough_replicas_reached(10) == (True, 20)  # NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_low_watermark_waits_for_every_live_follower_log_start_offset() -> None:
    p = leader_partition(leo=100)
    p.log.log_start_offset = 40
    # Followers that have not fetched since the election hold it at "unknown".
    assert p.low_watermark({0, 1, 2}) == -1
    p.remote_replicas[1].log_start_offset = 40
    p.remote_replicas[2].log_start_offset = 10
    assert p.low_watermark({0, 1, 2}) == 10
    # A follower on a dead broker cannot hold a DeleteRecords back.
    assert p.low_watermark({0, 1}) == 40
    p.remote_replicas[2].log_start_offset = 40
    assert p.low_watermark({0, 1, 2}) == 40


def test_a_new_leader_epoch_forgets_follower_log_start_offsets() -> None:
    p = leader_partition(leo=100)
    p.remote_replicas[1].log_start_offset = 40
    p.make_leader(State(0, 2, [0, 1, 2]), 1, uuid.UUID(int=0), NOW)
    assert p.remote_replicas[1].log_start_offset == -1
