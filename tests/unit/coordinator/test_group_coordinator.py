"""The GroupCoordinator on an event loop, over a fake ReplicaManager that appends to real Logs.

Each test runs one coroutine with asyncio.run; session timeouts are tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.codec import gzip_encode

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.consumer_protocol import encode_assignment, encode_subscription
from kafkapy.protocol.errors import (
    GroupNotEmptyException,
    GroupSubscribedToTopicException,
    IllegalGenerationException,
    MemberIdRequiredException,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.protocol.record_batch import CRC_OFFSET, HEADER_SIZE, compute_crc
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.coordinator.group_coordinator import GroupCoordinator
from kafkapy.server.coordinator.group_metadata import GroupState
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.replica_manager import ProduceResult

TOPIC = "__consumer_offsets"
PROTOCOLS = [("range", encode_subscription(["t"]))]


class FakeReplicaManager:
    """Leader of every __consumer_offsets partition, appending straight to a Log per partition."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.logs: dict[TopicPartition, Log] = {}
        self.log_manager = SimpleNamespace(get_log=self.logs.get)
        self.fail_with = 0

    def log(self, partition: int) -> Log:
        tp = TopicPartition(TOPIC, partition)
        if tp not in self.logs:
            self.logs[tp] = Log(str(self.base / f"{TOPIC}-{partition}"), LogConfig())
        return self.logs[tp]

    def append_records(
        self, acks: int, entries: list[tuple[TopicPartition, Any]]
    ) -> dict[TopicPartition, Any]:
        out = {}
        for tp, batch in entries:
            if self.fail_with:
                out[tp] = ProduceResult(self.fail_with)
                continue
            info = self.log(tp.partition).append_as_leader(batch)
            self.log(tp.partition).high_watermark = info.last_offset + 1
            out[tp] = ProduceResult(0, info.first_offset, -1, 0, None, info.last_offset)
        return out

    async def await_isr(self, results: Any, timeout_ms: int) -> None:
        return None


def config(**overrides: Any) -> SimpleNamespace:
    values = {
        "group_min_session_timeout_ms": 10,
        "group_max_session_timeout_ms": 60000,
        "group_max_size": 100,
        "group_initial_rebalance_delay_ms": 0,
        "offsets_topic_num_partitions": 1,
        "offsets_load_buffer_size": 1 << 20,
        "offsets_commit_required_acks": -1,
        "offsets_commit_timeout_ms": 5000,
        "offset_metadata_max_bytes": 4096,
        "offsets_retention_minutes": 10080,
        "offsets_retention_check_interval_ms": 600000,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


async def started(rm: FakeReplicaManager, **overrides: Any) -> GroupCoordinator:
    gc = GroupCoordinator(0, config(**overrides), rm)
    gc.startup()
    gc.on_elected(0)
    while gc.manager.loading_partitions:
        await asyncio.sleep(0.001)
    return gc


async def join(
    gc: GroupCoordinator, member_id: str = "", session_ms: int = 5000, **kw: Any
) -> dict[str, Any]:
    args = {
        "group_id": "g", "member_id": member_id, "instance_id": None, "require_known_member_id": False,
        "client_id": "client", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 5000,
        "session_timeout_ms": session_ms, "protocol_type": "consumer", "protocols": PROTOCOLS,
    }  # fmt: skip
    args.update(kw)
    return await gc.join_group(**args)


async def sync(
    gc: GroupCoordinator, member_id: str, generation: int, assignment: dict[str, bytes] | None = None
) -> Any:
    return await gc.sync_group("g", generation, member_id, None, None, None, assignment or {})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_new_member_gets_an_id_first_then_leads_a_one_member_group(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        first = await join(gc, require_known_member_id=True)
        assert first.error_code == MemberIdRequiredException.code
        member_id = first.member_id
        assert member_id.startswith("client-")
        joined = await join(gc, member_id, require_known_member_id=True)
        assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, member_id)
        assert [m.member_id for m in joined.members] == [member_id]
        assignment = encode_assignment([("t", 0), ("t", 1)])
        synced = await sync(gc, member_id, 1, {member_id: assignment})
        assert (synced.error_code, synced.assignment) == (0, assignment)
        assert gc.manager.get_group("g").state == GroupState.STABLE
        assert gc.heartbeat("g", member_id, None, 1) == 0
        assert gc.heartbeat("g", member_id, None, 0) == IllegalGenerationException.code
        assert gc.heartbeat("g", "nobody", None, 1) == UnknownMemberIdException.code
        gc.shutdown()

    run(scenario())


def test_second_member_triggers_a_rebalance_and_each_member_gets_its_assignment(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        a = (await join(gc)).member_id
        await sync(gc, a, 1, {a: b"A"})
        b_join = asyncio.ensure_future(join(gc))
        await asyncio.sleep(0.01)
        assert gc.heartbeat("g", a, None, 1) == RebalanceInProgressException.code
        a_join = await join(gc, a)
        b = (await b_join).member_id
        assert a_join.generation_id == 2 and a_join.leader == a and len(a_join.members) == 2
        b_sync = asyncio.ensure_future(sync(gc, b, 2))
        await asyncio.sleep(0.01)
        assert not b_sync.done()  # parked until the leader's assignment is written
        a_sync = await sync(gc, a, 2, {a: b"A2", b: b"B2"})
        assert a_sync.assignment == b"A2" and (await b_sync).assignment == b"B2"
        gc.shutdown()

    run(scenario())


def test_a_member_whose_session_expires_is_removed_and_the_group_rebalances(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        a = (await join(gc, session_ms=5000)).member_id
        b_future = asyncio.ensure_future(join(gc, session_ms=50))
        await asyncio.sleep(0.01)
        await join(gc, a, session_ms=5000)
        b = (await b_future).member_id
        await sync(gc, a, 2, {a: b"A", b: b"B"})
        await sync(gc, b, 2)
        for _ in range(20):  # a heartbeats, b has died
            assert gc.heartbeat("g", a, None, gc.manager.get_group("g").generation_id) in (0, 27)
            await asyncio.sleep(0.01)
        group = gc.manager.get_group("g")
        assert not group.has(b)
        assert group.state == GroupState.PREPARING_REBALANCE
        rejoined = await join(gc, a)
        assert rejoined.generation_id == 3 and [m.member_id for m in rejoined.members] == [a]
        gc.shutdown()

    run(scenario())


def test_leaving_members_empty_the_group(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        a = (await join(gc)).member_id
        await sync(gc, a, 1, {a: b"A"})
        assert gc.leave_group("g", [(a, None), ("ghost", None)]) == (
            0,
            [(a, None, 0), ("ghost", None, UnknownMemberIdException.code)],
        )
        await asyncio.sleep(0.01)
        group = gc.manager.get_group("g")
        assert (group.state, group.generation_id) == (GroupState.EMPTY, 2)
        gc.shutdown()

    run(scenario())


def test_commit_rules_and_fetch(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        om = codec.OffsetAndMetadata(5, -1, "", 1)
        # assign()-style commits: generation -1 on an unknown group creates an empty group.
        assert await gc.commit_offsets("simple", "", None, -1, {("t", 0): om}) == {("t", 0): 0}
        assert gc.fetch_offsets("simple", None) == (0, {("t", 0): om})
        assert gc.fetch_offsets("simple", [("t", 1)]) == (0, {("t", 1): None})
        assert await gc.commit_offsets("nogroup", "m", None, 3, {("t", 0): om}) == {
            ("t", 0): IllegalGenerationException.code
        }
        a = (await join(gc)).member_id
        assert await gc.commit_offsets("g", a, None, 1, {("t", 0): om}) == {
            ("t", 0): RebalanceInProgressException.code
        }
        await sync(gc, a, 1, {a: b"A"})
        assert await gc.commit_offsets("g", a, None, 1, {("t", 0): om}) == {("t", 0): 0}
        assert await gc.commit_offsets("g", a, None, 0, {("t", 0): om}) == {
            ("t", 0): IllegalGenerationException.code
        }
        assert await gc.commit_offsets("g", "x", None, 1, {("t", 0): om}) == {
            ("t", 0): UnknownMemberIdException.code
        }
        gc.shutdown()

    run(scenario())


def test_delete_groups_and_offsets(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        a = (await join(gc)).member_id
        await sync(gc, a, 1, {a: b"A"})
        om = codec.OffsetAndMetadata(1, -1, "", 1)
        await gc.commit_offsets("g", a, None, 1, {("t", 0): om, ("u", 0): om})
        assert await gc.delete_offsets("g", [("t", 0), ("u", 0)]) == (
            0,
            {("t", 0): GroupSubscribedToTopicException.code, ("u", 0): 0},
        )
        assert await gc.delete_groups(["g", "missing"]) == {"g": GroupNotEmptyException.code, "missing": 69}
        gc.leave_group("g", [(a, None)])
        await asyncio.sleep(0.01)
        assert await gc.delete_groups(["g"]) == {"g": 0}
        described = gc.describe_group("g")
        assert (described.error_code, described.group_state, described.members) == (0, "Dead", [])
        gc.shutdown()

    run(scenario())


def test_static_member_restart_takes_its_place_without_a_rebalance(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path))
        old = (await join(gc, instance_id="i-1")).member_id
        assert old.startswith("i-1-")
        await sync(gc, old, 1, {old: b"A"})
        again = await join(gc, instance_id="i-1")
        new = again.member_id
        assert new != old and again.generation_id == 1 and again.members == []
        assert gc.manager.get_group("g").state == GroupState.STABLE
        assert (await sync(gc, new, 1)).assignment == b"A"
        assert gc.heartbeat("g", old, "i-1", 1) == 82  # FENCED_INSTANCE_ID
        gc.shutdown()

    run(scenario())


def test_a_new_leader_loads_groups_and_offsets_from_the_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = FakeReplicaManager(tmp_path)
        gc = await started(rm)
        a = (await join(gc)).member_id
        await sync(gc, a, 1, {a: b"A"})
        om = codec.OffsetAndMetadata(7, 3, "meta", 11)
        await gc.commit_offsets("g", a, None, 1, {("t", 0): om})
        await gc.commit_offsets("gone", "", None, -1, {("t", 0): om})
        await gc.delete_groups(["gone"])
        gc.shutdown()

        reloaded = await started(rm)
        group = reloaded.manager.get_group("g")
        assert (group.state, group.generation_id, group.leader_id) == (GroupState.STABLE, 1, a)
        assert group.get(a).assignment == b"A" and group.offsets == {("t", 0): om}
        assert reloaded.manager.get_group("gone") is None
        assert reloaded.heartbeat("g", a, None, 1) == 0
        reloaded.shutdown()

    run(scenario())


def gzip_batch(records: list[tuple[bytes, bytes | None]]) -> bytearray:
    plain = build_batch((k, v, (), 1) for k, v in records)
    body = gzip_encode(bytes(plain[HEADER_SIZE:]))
    out = plain[:HEADER_SIZE] + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, 1)  # gzip
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


def test_loading_reads_compressed_batches(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = FakeReplicaManager(tmp_path)
        om = codec.OffsetAndMetadata(9, -1, "", 5)
        rm.log(0).append_as_leader(gzip_batch([(codec.offset_key("z", "t", 2), codec.offset_value(om))]))
        gc = await started(rm)
        assert gc.fetch_offsets("z", None) == (0, {("t", 2): om})
        gc.shutdown()

    run(scenario())


@pytest.mark.parametrize(("append_error", "expected"), [(6, 16), (7, 15), (10, 28)])
def test_append_errors_reach_committers_as_coordinator_errors(
    tmp_path: Path, append_error: int, expected: int
) -> None:
    async def scenario() -> None:
        rm = FakeReplicaManager(tmp_path)
        gc = await started(rm)
        rm.fail_with = append_error
        om = codec.OffsetAndMetadata(1, -1, "", 1)
        assert await gc.commit_offsets("s", "", None, -1, {("t", 0): om}) == {("t", 0): expected}
        gc.shutdown()

    run(scenario())


def test_empty_groups_lose_expired_offsets_and_die(tmp_path: Path) -> None:
    async def scenario() -> None:
        gc = await started(FakeReplicaManager(tmp_path), offsets_retention_minutes=1)
        await gc.commit_offsets("old", "", None, -1, {("t", 0): codec.OffsetAndMetadata(1, -1, "", 1)})
        gc.manager.get_group("old").state_timestamp = 0  # empty since the epoch
        assert await gc.manager.cleanup_expired_offsets() == 1
        assert gc.manager.get_group("old") is None
        gc.shutdown()

    run(scenario())
