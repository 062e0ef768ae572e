"""ElectLeaders and DeleteRecords handlers: requests decoded from the wire, answers encoded with
Kafka's schemas; the DeleteRecords answer waits for the followers' log start offsets."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ElectionNotNeededException,
    NotControllerException,
    OffsetOutOfRangeException,
    TimeoutException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.apis.elect_leaders import handle_elect_leaders
from kafkapy.server.apis.records import handle_delete_records
from kafkapy.server.controller.events import ElectionType
from kafkapy.server.fetch_session_watch import FetchSessionWatch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.metadata_cache import PartitionMetadata
from kafkapy.server.partition import Partition
from kafkapy.server.purgatory import DelayedOperationPurgatory
from kafkapy.server.replica_manager import ReplicaManager

TP = TopicPartition("t", 0)


class FakeController:
    def __init__(self, outcome: Any = None, error: Exception | None = None) -> None:
        self.asked: Any = None
        self.outcome, self.error = outcome, error

    def elect_leaders(self, election_type: ElectionType, partitions: Any) -> Future[Any]:
        self.asked = (election_type, partitions)
        f: Future[Any] = Future()
        if self.error is not None:
            f.set_exception(self.error)
        else:
            f.set_result(self.outcome)
        return f


class Cache:
    def __init__(
        self, leaders: dict[TopicPartition, int] | None = None, alive: tuple[int, ...] = (0, 1, 2)
    ) -> None:
        self.leaders = leaders or {}
        self.alive = list(alive)

    def partition_info(self, topic: str, partition: int) -> PartitionMetadata | None:
        leader = self.leaders.get(TopicPartition(topic, partition))
        return None if leader is None else PartitionMetadata(leader, 1, (leader,), (leader,), (), 0)

    def contains_topic(self, topic: str) -> bool:
        return topic == "t"

    def alive_broker_ids(self) -> list[int]:
        return self.alive


def elect(controller: Any, version: int, request: dict[str, Any], cache: Cache) -> Any:
    body = messages.decode_request(
        ApiKey.ELECT_LEADERS, version, messages.encode_request(ApiKey.ELECT_LEADERS, version, request)
    )
    apis = SimpleNamespace(controller=controller, metadata_cache=cache, authorizer=None)
    request_ns = SimpleNamespace(header=SimpleNamespace(api_version=version))
    answer = asyncio.run(handle_elect_leaders(apis, request_ns, body))  # type: ignore[arg-type]
    return messages.decode_response(
        ApiKey.ELECT_LEADERS, version, messages.encode_response(ApiKey.ELECT_LEADERS, version, answer)
    )


@pytest.mark.timeout(10)
@pytest.mark.parametrize("version", [1, 2])
def test_elect_leaders_answers_each_partition(version: int) -> None:
    other = TopicPartition("t", 1)
    controller = FakeController({TP: 2, other: ElectionNotNeededException("Leader election not needed.")})
    answer = elect(
        controller,
        version,
        {"election_type": 1, "timeout_ms": 1000, "topic_partitions": [{"topic": "t", "partitions": [0, 1]}]},
        Cache({TP: 2}),
    )
    assert controller.asked == (ElectionType.UNCLEAN, frozenset({TP, other}))
    (topic,) = answer.replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [
        (0, 0),
        (1, ElectionNotNeededException.code),
    ]


@pytest.mark.timeout(10)
def test_elect_leaders_v0_is_preferred_and_waits_for_the_metadata_until_the_timeout() -> None:
    controller = FakeController({TP: 2})
    # The metadata cache never shows broker 2 leading: the partition times out.
    answer = elect(controller, 0, {"timeout_ms": 200, "topic_partitions": None}, Cache({TP: 1}))
    assert controller.asked == (ElectionType.PREFERRED, None)
    (topic,) = answer.replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [(0, TimeoutException.code)]


@pytest.mark.timeout(10)
def test_elect_leaders_on_a_broker_that_is_not_the_controller() -> None:
    answer = elect(
        FakeController(error=NotControllerException("no")),
        1,
        {"election_type": 0, "timeout_ms": 1000, "topic_partitions": [{"topic": "t", "partitions": [0]}]},
        Cache(),
    )
    assert answer.error_code == NotControllerException.code
    assert answer.replica_election_results[0].partition_result[0].error_code == NotControllerException.code


class Log:
    def __init__(self, end: int) -> None:
        self.log_start_offset = 0
        self.log_end_offset = end
        self.high_watermark = end
        self.config = LogConfig()

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        if offset > self.high_watermark:
            raise OffsetOutOfRangeException("past the high watermark")
        self.log_start_offset = max(self.log_start_offset, offset)
        return True

    def maybe_assign_epoch_start_offset(self, epoch: int, offset: int) -> None:
        pass


def replica_manager() -> ReplicaManager:
    rm = ReplicaManager.__new__(ReplicaManager)
    partition = Partition(TP, 0, Log(100))
    partition.make_leader(
        SimpleNamespace(leader=0, leader_epoch=1, partition_epoch=0, replicas=[0, 1], isr=[0, 1]),
        1,
        uuid.UUID(int=0),
        0,
    )
    rm.partitions = {TP: partition}
    rm.broker_id = 0
    rm.delete_records_purgatory = DelayedOperationPurgatory("DeleteRecords")
    rm.fetch_session_watch = FetchSessionWatch(DelayedOperationPurgatory("Fetch"))
    return rm


async def delete(
    rm: ReplicaManager, offset: int, timeout_ms: int, cache: Cache, follower_reports: int | None = None
) -> Any:
    request = {
        "timeout_ms": timeout_ms,
        "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]},
            {"name": "gone", "partitions": [{"partition_index": 0, "offset": 1}]},
        ],
    }
    body = messages.decode_request(
        ApiKey.DELETE_RECORDS, 2, messages.encode_request(ApiKey.DELETE_RECORDS, 2, request)
    )
    apis = SimpleNamespace(replica_manager=rm, metadata_cache=cache, authorizer=None)
    pending = asyncio.ensure_future(handle_delete_records(apis, None, body))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    if follower_reports is not None:
        assert not pending.done()  # still waiting for broker 1's log start offset
        rm.update_follower_log_start_offsets(1, {TP: follower_reports})
    answer = await pending
    decoded = messages.decode_response(
        ApiKey.DELETE_RECORDS, 2, messages.encode_response(ApiKey.DELETE_RECORDS, 2, answer)
    )
    return {
        (t.name, p.partition_index): (p.error_code, p.low_watermark)
        for t in decoded.topics
        for p in t.partitions
    }


@pytest.mark.timeout(10)
def test_delete_records_waits_for_the_follower_log_start_offset() -> None:
    rm = replica_manager()
    answer = asyncio.run(delete(rm, 40, 5000, Cache(), follower_reports=40))
    assert answer == {("t", 0): (0, 40), ("gone", 0): (UnknownTopicOrPartitionException.code, -1)}
    assert rm.partitions[TP].log.log_start_offset == 40


@pytest.mark.timeout(10)
def test_delete_records_times_out_while_a_live_follower_lags_but_not_for_a_dead_one() -> None:
    answer = asyncio.run(delete(replica_manager(), 40, 200, Cache()))
    assert answer[("t", 0)] == (TimeoutException.code, -1)
    answer = asyncio.run(delete(replica_manager(), 40, 200, Cache(alive=(0,))))
    assert answer[("t", 0)] == (0, 40)


@pytest.mark.timeout(10)
def test_delete_records_refuses_offsets_past_the_high_watermark_at_once() -> None:
    answer = asyncio.run(delete(replica_manager(), 101, 5000, Cache()))
    assert answer[("t", 0)] == (OffsetOutOfRangeException.code, -1)
