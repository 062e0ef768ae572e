"""DeleteRecords: move a partition's log start offset forward (never past the high watermark),
then wait, as Kafka's delete-records purgatory does, until every replica has followed.

The leader moves its own log start offset at once. Followers learn it from their fetch
responses and report theirs in their next fetch requests (ReplicaManager.
update_follower_log_start_offsets); the partition's low watermark is the smallest log start
offset among the leader and the followers on live brokers (Kafka's lowWatermarkIfLeader). The
answer waits until each partition's low watermark reaches the requested offset or timeout_ms
passes; a partition still short then answers REQUEST_TIMED_OUT with the low watermark it had.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    InvalidTopicException,
    KafkaError,
    NotLeaderOrFollowerException,
    OffsetOutOfRangeException,
    PolicyViolationException,
    TimeoutException,
    TopicAuthorizationException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.delete_records_request import DeleteRecordsRequest
from kafkapy.protocol.generated.delete_records_response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from kafkapy.server.apis.auth_helper import filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.purgatory import DelayedOperation
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.zk.topic_name import INTERNAL_TOPICS

# DeleteRecords' "up to the high watermark" sentinel.
HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


@dataclass(slots=True)
class _Status:
    low_watermark: int = INVALID_LOW_WATERMARK
    error_code: int = 0
    required_offset: int = -1  # the offset every replica must reach; -1 once decided


def _delete_on_leader(apis: KafkaApis, tp: TopicPartition, offset: int) -> _Status:
    """Kafka's deleteRecordsOnLocalLog for one partition: the leader's part, done at once."""
    if tp.topic in INTERNAL_TOPICS:
        raise InvalidTopicException(f"Cannot delete records of internal topic {tp.topic}")
    partition = apis.replica_manager.leader_partition(tp)
    log = partition.log
    if not log.config.delete:
        raise PolicyViolationException(
            f"Records of partition {tp} can not be deleted due to the configured policy"
        )
    converted = log.high_watermark if offset == HIGH_WATERMARK else offset
    if converted < 0:
        raise OffsetOutOfRangeException(f"The offset {converted} for partition {tp} is not valid")
    if log.maybe_increment_log_start_offset(converted):
        apis.replica_manager.log_start_offset_moved(tp)
    low = partition.low_watermark(apis.metadata_cache.alive_broker_ids())
    # Until every replica has caught up the answer would be a time-out (Kafka's initial status).
    if low >= converted:
        return _Status(low, 0)
    return _Status(low, TimeoutException.code, converted)


@handles(ApiKey.DELETE_RECORDS)
async def handle_delete_records(
    apis: KafkaApis, request: Request, body: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    statuses: dict[TopicPartition, _Status] = {}
    order: list[tuple[str, list[int]]] = []
    cache = apis.metadata_cache
    deletable = filter_authorized(
        apis, request, Operation.DELETE, ResourceType.TOPIC, (t.name for t in body.topics)
    )
    for t in body.topics:
        order.append((t.name, [p.partition_index for p in t.partitions]))
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if t.name not in deletable:
                statuses[tp] = _Status(error_code=TopicAuthorizationException.code)
                continue
            if not cache.contains_topic(t.name):
                statuses[tp] = _Status(error_code=UnknownTopicOrPartitionException.code)
                continue
            try:
                statuses[tp] = _delete_on_leader(apis, tp, p.offset)
            except KafkaError as e:
                statuses[tp] = _Status(error_code=e.code)
    pending = {tp: s for tp, s in statuses.items() if s.required_offset >= 0}
    if pending:
        await _await_replicas(apis, pending, body.timeout_ms)
    return DeleteRecordsResponse(
        throttle_time_ms=0,
        topics=[
            DeleteRecordsTopicResult(name=name, partitions=[
                DeleteRecordsPartitionResult(
                    partition_index=i,
                    low_watermark=statuses[TopicPartition(name, i)].low_watermark,
                    error_code=statuses[TopicPartition(name, i)].error_code,
                )
                for i in indexes
            ])
            for name, indexes in order
        ],
    )  # fmt: skip


async def _await_replicas(apis: KafkaApis, pending: dict[TopicPartition, _Status], timeout_ms: int) -> None:
    """Kafka's DelayedDeleteRecords: each partition's outcome is fixed when it is reached."""
    rm = apis.replica_manager

    def can_complete() -> bool:
        alive = apis.metadata_cache.alive_broker_ids()
        for tp, status in pending.items():
            if status.required_offset < 0:
                continue
            partition = rm.partitions.get(tp)
            if partition is None:
                status.low_watermark, status.error_code = (
                    INVALID_LOW_WATERMARK,
                    UnknownTopicOrPartitionException.code,
                )
            elif not partition.is_leader:
                status.low_watermark, status.error_code = (
                    INVALID_LOW_WATERMARK,
                    NotLeaderOrFollowerException.code,
                )
            else:
                low = partition.low_watermark(alive)
                if low < status.required_offset:
                    continue
                status.low_watermark, status.error_code = low, 0
            status.required_offset = -1
        return all(s.required_offset < 0 for s in pending.values())

    # On expiry the partitions still short keep REQUEST_TIMED_OUT and their first low watermark.
    await rm.delete_records_purgatory.try_complete_else_watch(
        DelayedOperation(can_complete), pending, timeout_ms
    )
