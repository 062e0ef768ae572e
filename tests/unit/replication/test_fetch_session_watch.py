"""A follower's fetch session reads only what may have news (server/fetch_session_watch.py).

Invariants: a partition found idle (follower at the leader's log end offset, in the settled
ISR, no error) is not read again until an event marks it: an append, a high watermark move, an
ISR update, a LeaderAndIsr or StopReplica changing its state, DeleteRecords, retention; named
or forgotten partitions and removed sessions are handled; a parked fetch waits on the session
and any mark wakes it; idle partitions still count as fetched for the ISR (their follower's
last caught-up time advances), so an idle spell longer than replica.lag.time.max.ms followed
by an append does not shrink the ISR.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from replication_helpers import TP, batch
from test_replica_manager_replication import leader_and_isr, replica_manager

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import InvalidFetchSessionEpochException
from kafkapy.protocol.generated.stop_replica_request import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from kafkapy.server.apis.fetch import _settle, _Wanted
from kafkapy.server.fetch_session import (
    FetchSessionCache,
    IncrementalContext,
    PartitionKey,
    PartitionRequest,
    new_context,
)
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log_tasks import LogTasks
from kafkapy.server.partition import now_ms
from kafkapy.server.purgatory import DelayedOperation
from kafkapy.server.replica_manager import ReplicaManager

KEY: PartitionKey = (TP.topic, TP.partition)
FOLLOWER = 1


def _leader(tmp_path: Path) -> ReplicaManager:
    """Broker 0 leads TP with ISR [0, 1, 2]; both followers are at its end offset (2)."""
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    rm.append_records(1, [(TP, batch(2))])
    for follower in (1, 2):
        rm.read_from_local_log(follower, 0, 1 << 20, [(TP, 2, 1 << 20, -1)])
    return rm


def _session(rm: ReplicaManager) -> tuple[FetchSessionCache, int]:
    cache = FetchSessionCache(10, watch=rm.fetch_session_watch)
    ctx = new_context(
        cache, 0, 0, {KEY: PartitionRequest(2, 1 << 20)}, [], privileged=True, uses_topic_ids=False
    )
    _, session_id, _ = ctx.respond({})
    assert session_id
    return cache, session_id


def _fetch(
    rm: ReplicaManager, cache: FetchSessionCache, session_id: int, offset: int | None = None
) -> list[Any]:
    """One incremental follower fetch as handle_fetch runs it: what it read (keys)."""
    session = cache.get(session_id)
    assert session is not None
    data = {} if offset is None else {KEY: PartitionRequest(offset, 1 << 20)}
    ctx = new_context(cache, session_id, session.epoch, data, [], privileged=True, uses_topic_ids=False)
    assert isinstance(ctx, IncrementalContext)
    session.refresh_idle(now_ms())
    for key in ctx.partitions:
        if key not in session.tps:
            rm.fetch_session_watch.watch(session, key, TopicPartition(str(key[0]), key[1]))
    session.marked.clear()
    ranges = [
        (TopicPartition(str(k[0]), k[1]), r.fetch_offset, r.max_bytes, -1) for k, r in ctx.partitions.items()
    ]
    results = rm.read_from_local_log(FOLLOWER, 0, 1 << 20, ranges)
    wanted = [
        _Wanted(k, str(k[0]), uuid.UUID(int=0), k[1], r.fetch_offset, r.max_bytes, -1)
        for k, r in ctx.partitions.items()
    ]
    _settle(SimpleNamespace(replica_manager=rm), session, wanted, results, FOLLOWER)  # type: ignore[arg-type]
    return list(ctx.partitions)


def _idle_session(rm: ReplicaManager) -> tuple[FetchSessionCache, int]:
    cache, sid = _session(rm)
    assert _fetch(rm, cache, sid) == [KEY]  # the first incremental fetch reads it and finds it idle
    assert _fetch(rm, cache, sid) == []
    return cache, sid


def test_an_idle_partition_is_not_read_until_an_append_marks_it(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    cache, sid = _idle_session(rm)
    rm.append_records(1, [(TP, batch(1))])
    assert _fetch(rm, cache, sid) == [KEY]  # behind now: read, not idle
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid, offset=3) == [KEY]  # named with its new offset: idle again
    assert _fetch(rm, cache, sid) == []


def test_another_followers_fetch_moving_the_high_watermark_marks_it(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    rm.append_records(1, [(TP, batch(1))])
    rm.read_from_local_log(FOLLOWER, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])
    cache, sid = _session(rm)
    assert _fetch(rm, cache, sid, offset=3) == [KEY]
    assert _fetch(rm, cache, sid) == []  # idle at 3 while the high watermark waits for follower 2
    rm.read_from_local_log(2, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])  # the high watermark moves to 3
    assert rm.partitions[TP].log.high_watermark == 3
    assert _fetch(rm, cache, sid) == [KEY]


def test_the_followers_own_fetch_moving_the_high_watermark_keeps_it_to_read(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    rm.append_records(1, [(TP, batch(1))])
    rm.read_from_local_log(2, 0, 1 << 20, [(TP, 3, 1 << 20, -1)])
    cache, sid = _session(rm)
    # This read moves the high watermark after reading it: the answer had the old one, so the
    # partition must be read again to tell the new one.
    assert _fetch(rm, cache, sid, offset=3) == [KEY]
    assert rm.partitions[TP].log.high_watermark == 3
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == []


def test_leader_and_isr_stop_replica_isr_update_delete_records_and_retention_mark_it(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    cache, sid = _idle_session(rm)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1, 2]), {TP.topic: LogConfig()})
    assert _fetch(rm, cache, sid) == []  # an unchanged state: nothing to tell
    rm.become_leader_or_follower(leader_and_isr(0, 2, [0, 1, 2]), {TP.topic: LogConfig()})
    assert _fetch(rm, cache, sid) == [KEY]  # a new leader epoch
    assert _fetch(rm, cache, sid) == []
    rm._on_isr_updated(rm.partitions[TP])  # an ISR write landed or failed
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == []
    rm.log_start_offset_moved(TP)  # DeleteRecords
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == []
    LogTasks(None, None, rm)._retention_done(0)  # nothing deleted: nothing to tell
    assert _fetch(rm, cache, sid) == []
    LogTasks(None, None, rm)._retention_done(3)
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == []
    stop = StopReplicaRequest(
        controller_id=5,
        controller_epoch=1,
        topic_states=[
            StopReplicaTopicState(
                topic_name=TP.topic,
                partition_states=[
                    StopReplicaPartitionState(partition_index=0, leader_epoch=3, delete_partition=False)
                ],
            )
        ],
    )
    rm.stop_replicas(stop)
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == [KEY]  # an error (not hosted) is read again each time


def test_a_follower_outside_the_isr_is_read_every_time(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 2, [0, 2]), {TP.topic: LogConfig()})
    cache, sid = _session(rm)
    rm.isr_manager.maybe_expand_isr = lambda p, isr: None  # type: ignore[method-assign]  # no ZooKeeper here
    assert _fetch(rm, cache, sid) == [KEY]
    assert _fetch(rm, cache, sid) == [KEY]  # Kafka retries its ISR expansion on each fetch


def test_forgetting_and_removing_a_session_stop_the_watch(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    watch = rm.fetch_session_watch
    cache, sid = _idle_session(rm)
    assert watch.watched() == 1
    session = cache.get(sid)
    assert session is not None
    ctx = new_context(cache, sid, session.epoch, {}, [KEY], privileged=True, uses_topic_ids=False)
    assert watch.watched() == 0 and cache.get(sid) is None  # nothing left: the session closed
    assert not isinstance(ctx, IncrementalContext)
    cache, sid = _idle_session(rm)
    assert watch.watched() == 1
    cache.remove(sid)
    assert watch.watched() == 0
    rm.append_records(1, [(TP, batch(1))])  # marks nothing, raises nothing


def test_eviction_stops_the_watch(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    watch = rm.fetch_session_watch
    clock = [0]
    cache = FetchSessionCache(1, eviction_ms=10, clock_ms=lambda: clock[0], watch=watch)
    ctx = new_context(
        cache, 0, 0, {KEY: PartitionRequest(2, 1 << 20)}, [], privileged=True, uses_topic_ids=False
    )
    sid = ctx.respond({})[1]
    session = cache.get(sid)
    assert session is not None
    watch.watch(session, KEY, TP)
    clock[0] = 100
    other = new_context(cache, 0, 0, {KEY: PartitionRequest(0, 1)}, [], privileged=True, uses_topic_ids=False)
    assert other.respond({})[1] not in (0, sid)
    assert cache.get(sid) is None and watch.watched() == 0


def test_a_stale_epoch_reads_nothing_and_the_session_goes_on(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    cache, sid = _idle_session(rm)
    session = cache.get(sid)
    assert session is not None
    ctx = new_context(cache, sid, session.epoch + 5, {}, [], privileged=True, uses_topic_ids=False)
    assert ctx.error_code == InvalidFetchSessionEpochException.code and not ctx.partitions
    rm.append_records(1, [(TP, batch(1))])
    assert _fetch(rm, cache, sid) == [KEY]


def test_a_parked_fetch_waits_on_its_session_and_any_mark_wakes_it(tmp_path: Path) -> None:
    async def run() -> None:
        rm = _leader(tmp_path)
        cache, sid = _idle_session(rm)
        session = cache.get(sid)
        assert session is not None
        checks: list[int] = []

        def can_complete() -> bool:
            checks.append(len(session.to_read))
            return bool(session.to_read)

        op = DelayedOperation(can_complete)
        waiting = rm.fetch_purgatory.try_complete_else_watch(op, [session], 30_000)
        assert rm.fetch_purgatory.watched() == 1  # one key, not one per partition
        rm.append_records(1, [(TP, batch(1))])
        assert await asyncio.wait_for(waiting, 5) is True
        assert op.rechecked and rm.fetch_purgatory.watched() == 0

    asyncio.run(run())


def test_an_idle_spell_longer_than_the_lag_time_keeps_the_follower_in_the_isr(tmp_path: Path) -> None:
    rm = _leader(tmp_path)
    cache, sid = _idle_session(rm)
    partition = rm.partitions[TP]
    remote = partition.remote_replicas[FOLLOWER]
    start = remote.last_caught_up_ms
    lag = partition.replica_lag_time_max_ms
    session = cache.get(sid)
    assert session is not None
    # Idle fetches every 500 ms for three lag periods: none reads the partition, each counts.
    for step in range(1, 3 * lag // 500 + 1):
        session.refresh_idle(start + 500 * step)
    now = start + 3 * lag
    assert remote.last_caught_up_ms == now and remote.last_fetch_ms == now
    assert remote.log_end_offset == partition.log.log_end_offset == remote.last_fetch_leader_log_end_offset
    rm.append_records(1, [(TP, batch(1))])  # the follower now trails by one append
    assert FOLLOWER not in partition.out_of_sync_replicas(now + 100)
    # Follower 2's session never fetched meanwhile: it is out of sync, as Kafka would say.
    assert 2 in partition.out_of_sync_replicas(now + 100)
