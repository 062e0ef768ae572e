"""ISR changes written to ZooKeeper (conditional update, conflict handling) and their propagation."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from replication_helpers import LAG, NOW, TP, leader_partition

from kafkapy.server.isr_manager import (
    ISR_CHANGE_PROPAGATION_BLACKOUT_MS,
    ISR_CHANGE_PROPAGATION_INTERVAL_MS,
    IsrManager,
    write_isr,
)
from kafkapy.server.partition import Partition
from kafkapy.zk.topic_znodes import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartitionStateZNode


@dataclass
class FakeZk:
    """One partition state znode with a version, and the ISR change notifications written."""

    state: LeaderIsrAndControllerEpoch
    version: int = 0
    notifications: list[list[Any]] = field(default_factory=list)
    writes: int = 0

    def conditional_update_path(self, path: str, data: bytes, expected_version: int) -> tuple[bool, int]:
        assert path == "/brokers/topics/t/partitions/0/state"
        self.writes += 1
        if expected_version != self.version:
            return False, -1
        self.version += 1
        decoded = TopicPartitionStateZNode.decode(data, self.version)
        assert decoded is not None
        self.state = decoded
        return True, self.version

    def get_topic_partition_state(self, tp: Any) -> LeaderIsrAndControllerEpoch:
        lai = self.state.leader_and_isr
        return LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, lai.isr, self.version), self.state.controller_epoch
        )

    def propagate_isr_changes(self, partitions: list[Any]) -> str:
        self.notifications.append(list(partitions))
        return "/isr_change_notification/isr_change_0000000000"


def zk_with(isr: tuple[int, ...], version: int = 0, leader_epoch: int = 1) -> FakeZk:
    return FakeZk(LeaderIsrAndControllerEpoch(LeaderAndIsr(0, leader_epoch, isr, version), 1), version)


def manager(zk: FakeZk, partitions: list[Partition], updated: list[Partition]) -> IsrManager:
    return IsrManager(0, lambda: zk, lambda: partitions, updated.append, LAG)


def test_write_isr_is_a_conditional_update_keeping_leader_and_epochs() -> None:
    zk = zk_with((0, 1, 2))
    assert write_isr(zk, TP, LeaderAndIsr(0, 1, (0, 1), 0), 1) == 1
    assert zk.state.leader_and_isr.isr == (0, 1)
    assert zk.state.leader_and_isr.leader_epoch == 1 and zk.state.controller_epoch == 1


def test_write_isr_conflict_with_our_own_earlier_write_succeeds() -> None:
    zk = zk_with((0, 1), version=4)
    assert write_isr(zk, TP, LeaderAndIsr(0, 1, (1, 0), 3), 1) == 4


def test_write_isr_conflict_with_the_controller_is_dropped() -> None:
    zk = zk_with((0,), version=4, leader_epoch=2)
    assert write_isr(zk, TP, LeaderAndIsr(0, 1, (0, 1), 3), 1) is None


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_shrink_lands_in_zookeeper_then_in_the_partition() -> None:
    async def scenario() -> None:
        p = leader_partition(leo=10)
        p.update_follower_fetch_state(1, 10, NOW)
        zk, updated = zk_with((0, 1, 2)), []
        m = manager(zk, [p], updated)
        assert m.maybe_shrink_isr(NOW + LAG + 1) == 1
        assert p.pending_isr == {0, 1} and p.isr == {0, 1, 2}
        assert m.maybe_shrink_isr(NOW + LAG + 1) == 0  # one change in flight at a time
        await m.stop()
        await asyncio.sleep(0)
        assert p.isr == {0, 1} and p.pending_isr is None and p.partition_epoch == 1
        assert zk.state.leader_and_isr.isr == (0, 1)
        assert updated == [p]
        assert m.changes_to_propagate(NOW + 1) == []  # inside the blackout

    run(scenario())


def test_version_conflict_drops_the_change() -> None:
    async def scenario() -> None:
        p = leader_partition(leo=10, isr=(0, 1))
        zk, updated = zk_with((0, 1), version=7), []  # the controller moved on meanwhile
        m = manager(zk, [p], updated)
        p.update_follower_fetch_state(2, 10, NOW)
        m.maybe_expand_isr(p, frozenset({0, 1, 2}))
        await m.stop()
        await asyncio.sleep(0)
        assert p.isr == {0, 1} and p.pending_isr is None and p.partition_epoch == 0
        assert zk.state.leader_and_isr.isr == (0, 1)

    run(scenario())


def test_leader_and_isr_arriving_during_the_write_wins() -> None:
    async def scenario() -> None:
        import uuid

        from replication_helpers import State

        p = leader_partition(leo=10)
        zk, updated = zk_with((0, 1, 2)), []
        m = manager(zk, [p], updated)
        m.submit(p, frozenset({0, 1}))
        p.make_leader(State(0, 2, [0, 2], partition_epoch=5), 2, uuid.UUID(int=0), NOW)
        await m.stop()
        await asyncio.sleep(0)
        assert p.isr == {0, 2} and p.partition_epoch == 5 and updated == []

    run(scenario())


def test_isr_changes_are_propagated_after_a_quiet_period() -> None:
    zk = zk_with((0, 1, 2))
    m = manager(zk, [], [])
    m.record_isr_change(TP, at_ms=NOW)
    assert m.changes_to_propagate(NOW + ISR_CHANGE_PROPAGATION_BLACKOUT_MS) == []
    assert m.changes_to_propagate(NOW + ISR_CHANGE_PROPAGATION_BLACKOUT_MS + 1) == [TP]
    assert m.changes_to_propagate(NOW + 2 * ISR_CHANGE_PROPAGATION_BLACKOUT_MS) == []


def test_a_steady_stream_of_changes_is_still_propagated_every_minute() -> None:
    zk = zk_with((0, 1, 2))
    m = manager(zk, [], [])
    start = m._last_propagation_ms
    t = start
    while t <= start + ISR_CHANGE_PROPAGATION_INTERVAL_MS:
        m.record_isr_change(TP, at_ms=t)
        assert m.changes_to_propagate(t) == []
        t += 1000
    assert m.changes_to_propagate(t) == [TP]


def test_propagation_writes_one_notification_for_the_batch() -> None:
    async def scenario() -> None:
        zk = zk_with((0, 1, 2))
        m = manager(zk, [], [])
        m.record_isr_change(TP, at_ms=0)
        m.record_isr_change(TP.__class__("t", 1), at_ms=0)
        await m.maybe_propagate_isr_changes()
        assert zk.notifications == [[("t", 0), ("t", 1)]]

    run(scenario())


def test_leader_and_isr_resent_with_the_same_epochs_keeps_a_landed_write() -> None:
    async def scenario() -> None:
        import uuid

        from replication_helpers import State

        p = leader_partition(leo=10)
        zk, updated = zk_with((0, 1, 2)), []
        m = manager(zk, [p], updated)
        m.submit(p, frozenset({0, 1}))
        p.make_leader(State(0, 1, [0, 1, 2], partition_epoch=0), 1, uuid.UUID(int=0), NOW)
        await m.stop()
        await asyncio.sleep(0)
        assert p.isr == {0, 1} and p.partition_epoch == 1 and p.pending_isr is None

    run(scenario())
