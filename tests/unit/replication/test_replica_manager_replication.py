"""ReplicaManager's replication wiring: fetchers follow LeaderAndIsr/StopReplica, and follower
fetches on the leader move the high watermark, complete acks=all produces and expand the ISR."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from replication_helpers import TP, batch
from test_isr_manager import FakeZk, zk_with

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.generated.leader_and_isr_request import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.purgatory import DelayedOperation
from kafkapy.server.replica_fetcher_thread import InitialFetchState
from kafkapy.server.replica_manager import ProduceResult, ReplicaManager


class FakeLogManager:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.logs: dict[TopicPartition, Log] = {}
        self.deleted: list[TopicPartition] = []

    def get_or_create_log(self, tp: TopicPartition, config: Any = None, *, is_new: bool = True) -> Log:
        if tp not in self.logs:
            self.logs[tp] = Log(str(self.base / str(tp)), config or LogConfig())
        return self.logs[tp]

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self.logs.get(tp)

    def take_future_log(self, tp: TopicPartition) -> Log | None:
        return None

    def delete_log(self, tp: TopicPartition) -> None:
        self.deleted.append(tp)
        self.logs.pop(tp).close()


class FakeFetcherManager:
    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.events = events
        self.fetching: dict[TopicPartition, InitialFetchState] = {}

    def add_fetcher_for_partitions(self, states: dict[TopicPartition, InitialFetchState]) -> None:
        self.events.append(("add", sorted(states)))
        self.fetching.update(states)

    def remove_fetcher_for_partitions(self, tps: Any) -> None:
        tps = list(tps)
        self.events.append(("remove", tps))
        for tp in tps:
            self.fetching.pop(tp, None)

    def shutdown_idle_fetcher_threads(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


def leader_and_isr(leader: int, epoch: int, isr: list[int], partition_epoch: int = 0) -> LeaderAndIsrRequest:
    ps = LeaderAndIsrPartitionState(
        partition_index=0, leader=leader, leader_epoch=epoch, isr=isr, replicas=[0, 1, 2],
        partition_epoch=partition_epoch,
    )  # fmt: skip
    return LeaderAndIsrRequest(
        controller_id=5, controller_epoch=1,
        topic_states=[LeaderAndIsrTopicState(topic_name=TP.topic, topic_id=uuid.UUID(int=7), partition_states=[ps])],
        live_leaders=[LeaderAndIsrLiveLeader(broker_id=b, host_name="127.0.0.1", port=9000 + b) for b in range(3)],
    )  # fmt: skip


def replica_manager(tmp_path: Path, zk: FakeZk | None = None) -> tuple[ReplicaManager, list[tuple[str, Any]]]:
    config = SimpleNamespace(
        replica_lag_time_max_ms=10_000, num_replica_fetchers=1, replica_fetch_wait_max_ms=500,
        replica_fetch_min_bytes=1, replica_fetch_response_max_bytes=1 << 20, replica_fetch_max_bytes=1 << 20,
        replica_fetch_backoff_ms=100, replica_socket_timeout_ms=30_000,
        replica_socket_receive_buffer_bytes=65536,
    )  # fmt: skip
    rm = ReplicaManager(0, FakeLogManager(tmp_path), lambda topic: LogConfig(), config, lambda: zk)
    events: list[tuple[str, Any]] = []
    rm.fetcher_manager = FakeFetcherManager(events)  # type: ignore[assignment]
    return rm, events


def test_becoming_follower_starts_a_fetcher_for_the_leader(tmp_path: Path) -> None:
    rm, events = replica_manager(tmp_path)
    out = rm.become_leader_or_follower(leader_and_isr(1, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    assert out.topics[0].partition_errors[0].error_code == 0
    state = rm.fetcher_manager.fetching[TP]
    assert (state.leader.id, state.leader.port, state.leader_epoch) == (1, 9001, 1)
    assert state.log is rm.partitions[TP].log
    events.clear()
    rm.become_leader_or_follower(leader_and_isr(1, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    assert events == []  # same leader and epoch: the fetcher keeps going
    rm.become_leader_or_follower(leader_and_isr(2, 2, [0, 2]), {TP.topic: LogConfig()})
    assert events == [("remove", [TP]), ("add", [TP])]
    assert rm.fetcher_manager.fetching[TP].leader.id == 2


def many(states: list[tuple[int, int, int]]) -> LeaderAndIsrRequest:
    """One LeaderAndIsr for partitions 0..n-1 of TP's topic: (partition, leader, leader epoch)."""
    ps = [
        LeaderAndIsrPartitionState(
            partition_index=p, leader=leader, leader_epoch=epoch, isr=[0, 1, 2], replicas=[0, 1, 2]
        )
        for p, leader, epoch in states
    ]
    return LeaderAndIsrRequest(
        controller_id=5, controller_epoch=1,
        topic_states=[LeaderAndIsrTopicState(topic_name=TP.topic, topic_id=uuid.UUID(int=7), partition_states=ps)],
        live_leaders=[LeaderAndIsrLiveLeader(broker_id=b, host_name="127.0.0.1", port=9000 + b) for b in range(3)],
    )  # fmt: skip


def test_fetchers_of_every_partition_changing_leader_stop_in_one_call_before_any_state_applies(
    tmp_path: Path,
) -> None:
    rm, events = replica_manager(tmp_path)
    rm.become_leader_or_follower(
        many([(0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 1, 1), (4, 2, 1)]), {TP.topic: LogConfig()}
    )
    events.clear()
    epochs_when_stopped: list[list[int]] = []
    remove = rm.fetcher_manager.remove_fetcher_for_partitions

    def recording_remove(tps: Any) -> None:
        epochs_when_stopped.append([rm.partitions[tp].leader_epoch for tp in sorted(rm.partitions)])
        remove(tps)

    rm.fetcher_manager.remove_fetcher_for_partitions = recording_remove  # type: ignore[method-assign]
    # 0 becomes leader, 1 follows a new leader, 2 the next epoch of its leader (its fetch goes
    # on), 3 is unchanged, 4 skips an epoch of its leader.
    rm.become_leader_or_follower(
        many([(0, 0, 2), (1, 2, 2), (2, 2, 2), (3, 1, 1), (4, 2, 3)]), {TP.topic: LogConfig()}
    )
    parts = [TopicPartition(TP.topic, p) for p in range(5)]
    assert events == [("remove", [parts[0], parts[1], parts[4]]), ("add", [parts[1], parts[2], parts[4]])]
    assert epochs_when_stopped == [[1, 1, 1, 1, 1]]  # before any new state was applied
    assert [rm.partitions[tp].leader_epoch for tp in parts] == [2, 2, 2, 1, 3]
    fetching = rm.fetcher_manager.fetching
    assert [fetching[tp].resume for tp in (parts[1], parts[2], parts[4])] == [False, True, False]


def test_a_broker_shutting_down_starts_no_fetcher_for_the_partitions_it_now_follows(tmp_path: Path) -> None:
    rm, events = replica_manager(tmp_path)
    rm.become_leader_or_follower(many([(0, 0, 1), (1, 1, 1)]), {TP.topic: LogConfig()})
    assert events == [("add", [TopicPartition(TP.topic, 1)])]
    events.clear()
    rm.is_shutting_down = True  # KafkaServer.shutdown sets it before the controlled shutdown
    out = rm.become_leader_or_follower(many([(0, 1, 2), (1, 2, 2)]), {TP.topic: LogConfig()})
    assert [e.error_code for e in out.topics[0].partition_errors] == [0, 0]
    assert events == [("remove", [TopicPartition(TP.topic, 0), TopicPartition(TP.topic, 1)])]
    assert rm.fetcher_manager.fetching == {}
    assert not rm.partitions[TopicPartition(TP.topic, 0)].is_leader


def test_becoming_leader_stops_the_fetcher(tmp_path: Path) -> None:
    rm, events = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(1, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    rm.become_leader_or_follower(leader_and_isr(0, 2, [0, 2]), {TP.topic: LogConfig()})
    assert TP not in rm.fetcher_manager.fetching and rm.partitions[TP].is_leader


def test_stop_replica_removes_the_fetcher_before_deleting_the_log(tmp_path: Path) -> None:
    rm, events = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(1, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    events.clear()
    stop = SimpleNamespace(
        controller_epoch=1,
        topic_states=[SimpleNamespace(topic_name=TP.topic, partition_states=[
            SimpleNamespace(partition_index=0, delete_partition=True)])],
    )  # fmt: skip
    rm.stop_replicas(stop)
    assert events == [("remove", [TP])]
    assert rm.log_manager.deleted == [TP]


def test_follower_fetches_complete_an_acks_all_produce(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, _ = replica_manager(tmp_path)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        results = rm.append_records(-1, [(TP, batch(3))])
        assert results[TP].error_code == 0 and results[TP].last_offset == 2
        waiting = asyncio.ensure_future(rm.await_isr(results, 5000))
        await asyncio.sleep(0)
        rm.read_from_local_log(1, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])
        await asyncio.sleep(0)
        assert not waiting.done()  # replica 2 is in the ISR and has not fetched yet
        rm.read_from_local_log(2, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])
        await asyncio.wait_for(waiting, 1)
        assert results[TP] == ProduceResult(0, 0, -1, 0, None, 2)
        assert rm.partitions[TP].log.high_watermark == 3

    asyncio.run(scenario())


def test_leader_and_isr_shrinking_the_isr_answers_a_waiting_acks_all_produce_at_once(tmp_path: Path) -> None:
    """The issue-12 stall: the controller shrinks the ISR of a partition this broker already
    leads; the waiting produce must complete then, not at its 30 s timeout."""

    async def scenario() -> None:
        rm, _ = replica_manager(tmp_path)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        results = rm.append_records(-1, [(TP, batch(3))])
        waiting = asyncio.ensure_future(rm.await_isr(results, 30_000))
        rm.read_from_local_log(1, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])
        await asyncio.sleep(0)
        assert not waiting.done()  # broker 2 is dead but still in the ISR
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1], partition_epoch=1), {TP.topic: LogConfig()})
        await asyncio.wait_for(waiting, 1)
        assert results[TP].error_code == 0 and rm.partitions[TP].log.high_watermark == 3

    asyncio.run(scenario())


def test_a_produce_completed_by_losing_leadership_keeps_its_error_when_leadership_returns(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        rm, _ = replica_manager(tmp_path)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        results = rm.append_records(-1, [(TP, batch(3))])
        waiting = asyncio.ensure_future(rm.await_isr(results, 30_000))
        await asyncio.sleep(0)
        rm.become_leader_or_follower(leader_and_isr(1, 2, [0, 1, 2]), {TP.topic: LogConfig()})
        # Leadership comes back (with the records' fate unknown) before the handler resumes.
        rm.become_leader_or_follower(leader_and_isr(0, 3, [0]), {TP.topic: LogConfig()})
        await asyncio.wait_for(waiting, 1)
        assert results[TP].error_code == 6  # NOT_LEADER_OR_FOLLOWER, never a late success

    asyncio.run(scenario())


def test_follower_fetch_reads_past_the_high_watermark(tmp_path: Path) -> None:
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    rm.append_records(1, [(TP, batch(2))])
    follower = rm.read_from_local_log(1, 0, 1 << 20, [(TP, 0, 1 << 20, -1)])[TP]
    consumer = rm.read_from_local_log(-1, 0, 1 << 20, [(TP, 0, 1 << 20, -1)])[TP]
    assert follower.size > 0 and consumer.size == 0 and follower.high_watermark == 0


def test_caught_up_follower_is_added_to_the_isr_in_zookeeper(tmp_path: Path) -> None:
    async def scenario() -> None:
        zk = zk_with((0, 1), version=4)
        rm, _ = replica_manager(tmp_path, zk)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1], partition_epoch=4), {TP.topic: LogConfig()})
        rm.append_records(1, [(TP, batch(2))])
        rm.read_from_local_log(1, 0, 1 << 20, [(TP, 2, 1 << 20, -1)])
        rm.read_from_local_log(2, 0, 1 << 20, [(TP, 2, 1 << 20, -1)])
        p = rm.partitions[TP]
        assert p.pending_isr == {0, 1, 2}
        await rm.isr_manager.stop()
        await asyncio.sleep(0)
        assert p.isr == {0, 1, 2} and p.partition_epoch == 5
        assert zk.state.leader_and_isr.isr == (0, 1, 2)
        assert rm.isr_manager._isr_changes == {TP}

    asyncio.run(scenario())


def test_lagging_follower_is_removed_from_the_isr_and_the_high_watermark_moves(tmp_path: Path) -> None:
    async def scenario() -> None:
        zk = zk_with((0, 1, 2))
        rm, _ = replica_manager(tmp_path, zk)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        results = rm.append_records(-1, [(TP, batch(1))])
        waiting = asyncio.ensure_future(rm.await_isr(results, 5000))
        rm.read_from_local_log(1, 0, 1 << 20, [(TP, 1, 1 << 20, -1)])
        p = rm.partitions[TP]
        p.remote_replicas[2].last_caught_up_ms -= 10_001  # silent for longer than the lag time
        assert rm.isr_manager.maybe_shrink_isr() == 1
        await asyncio.wait_for(waiting, 1)
        assert p.isr == {0, 1} and zk.state.leader_and_isr.isr == (0, 1)
        assert results[TP].error_code == 0 and p.log.high_watermark == 1

    asyncio.run(scenario())


def test_completing_a_delayed_follower_fetch_does_not_count_as_a_new_fetch(tmp_path: Path) -> None:
    # The controller removed replica 2 (controlled shutdown) while its long poll waited here:
    # answering that poll must not put replica 2 straight back into the ISR.
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1]), {TP.topic: LogConfig()})
    rm.read_from_local_log(2, 0, 1 << 20, [(TP, 0, 1 << 20, -1)], update_follower_state=False)
    p = rm.partitions[TP]
    assert p.pending_isr is None and p.remote_replicas[2].log_end_offset == -1


def test_out_of_range_follower_fetch_does_not_move_the_follower(tmp_path: Path) -> None:
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1]), {TP.topic: LogConfig()})
    rm.append_records(1, [(TP, batch(2))])
    result = rm.read_from_local_log(2, 0, 1 << 20, [(TP, 9, 1 << 20, -1)])[TP]
    assert result.error_code == 1  # OFFSET_OUT_OF_RANGE
    p = rm.partitions[TP]
    assert p.remote_replicas[2].log_end_offset == -1 and p.pending_isr is None


def test_an_unchanged_leader_and_isr_leaves_the_waiting_operations_unchecked(tmp_path: Path) -> None:
    """A new controller resends every partition's state unchanged; checking the watchers of
    each (a follower's parked fetch covers thousands of partitions) was quadratic."""

    async def scenario() -> None:
        rm, _ = replica_manager(tmp_path)
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        checks: list[int] = []

        def can_complete() -> bool:
            checks.append(1)
            return False

        op = DelayedOperation(can_complete)
        rm.fetch_purgatory.try_complete_else_watch(op, [TP], 30_000)
        assert len(checks) == 1
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
        assert len(checks) == 1 and not op.rechecked
        rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1], partition_epoch=1), {TP.topic: LogConfig()})
        assert len(checks) == 2 and op.rechecked
        rm.become_leader_or_follower(leader_and_isr(1, 2, [0, 1]), {TP.topic: LogConfig()})
        assert len(checks) == 3
        op.force_complete(False)

    asyncio.run(scenario())
