"""ListOffsets: earliest, latest (the high watermark for consumers), max timestamp, offsets by time.

Each answer carries the leader epoch of the offset it returns (KIP-320: a consumer that
starts from it can later ask OffsetForLeaderEpoch whether its position survived a leader
change), and a request naming a leader epoch (v4+) is fenced like a fetch.
"""

from __future__ import annotations

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_PARTITION_LEADER_EPOCH,
)
from kafkapy.protocol.errors import KafkaError, OffsetNotAvailableException, TopicAuthorizationException
from kafkapy.protocol.generated.list_offsets_request import ListOffsetsRequest
from kafkapy.protocol.generated.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kafkapy.server.apis.auth_helper import filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.replica_manager import READ_COMMITTED
from kafkapy.server.security.acl import Operation, ResourceType

MAX_TIMESTAMP = -3
NOT_FOUND = (-1, -1, -1)


def _epoch(epoch: int | None) -> int:
    return -1 if epoch is None else epoch


def offset_for(
    apis: KafkaApis,
    tp: TopicPartition,
    timestamp: int,
    current_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    from_consumer: bool = True,
    isolation_level: int = 0,
) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) for one partition; raises the partition's error.

    Consumers see up to the high watermark; a replica or the debugging id up to the log end
    offset (Kafka's lastFetchableOffset); read_committed consumers up to the last stable offset.
    """
    partition = apis.replica_manager.leader_partition(tp, current_leader_epoch)
    log = partition.log
    hw = log.high_watermark
    if not from_consumer:
        last_fetchable = log.log_end_offset
    else:
        last_fetchable = log.last_stable_offset if isolation_level == READ_COMMITTED else hw
    # A new leader's high watermark trails the offset its epoch began at until its followers
    # fetch again: an answer from below it could send a consumer backwards, so Kafka asks the
    # client to retry (Partition.fetchOffsetForTimestamp).
    lagging = from_consumer and partition.leader_epoch_start_offset > hw
    if timestamp == LATEST_TIMESTAMP:
        if lagging:
            raise OffsetNotAvailableException(
                f"Failed to fetch offsets for partition {tp} with leader epoch {partition.leader_epoch} as this "
                f"partition's high watermark ({hw}) is lagging behind the start offset from the beginning of this "
                f"epoch ({partition.leader_epoch_start_offset})."
            )
        return last_fetchable, -1, _epoch(log.latest_epoch)
    found = log.fetch_offset_by_timestamp(timestamp)  # earliest: the log start offset and its epoch
    if timestamp == EARLIEST_TIMESTAMP:
        return found.offset, -1, _epoch(found.leader_epoch)
    if found is None or found.offset < 0 or (timestamp != MAX_TIMESTAMP and found.offset >= last_fetchable):
        if lagging:
            raise OffsetNotAvailableException(
                f"Failed to fetch offsets for partition {tp}: its high watermark ({hw}) is lagging behind the "
                f"start offset from the beginning of this epoch ({partition.leader_epoch_start_offset})."
            )
        return NOT_FOUND
    return found.offset, found.timestamp, _epoch(found.leader_epoch)


@handles(ApiKey.LIST_OFFSETS)
def handle_list_offsets(apis: KafkaApis, request: Request, body: ListOffsetsRequest) -> ListOffsetsResponse:
    from_consumer = body.replica_id == CONSUMER_REPLICA_ID
    isolation = body.isolation_level if request.header.api_version >= 2 else 0
    topics = []
    # Describe on the topic, once per topic (Kafka's KafkaApis).
    described = filter_authorized(
        apis, request, Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in body.topics)
    )
    for t in body.topics:
        parts = []
        for p in t.partitions:
            out = ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1, leader_epoch=-1
            )
            if t.name not in described:
                out.error_code = TopicAuthorizationException.code
                parts.append(out)
                continue
            try:
                tp = TopicPartition(t.name, p.partition_index)
                # current_leader_epoch is -1 (the codec's default) before v4: never fenced.
                offset, ts, epoch = offset_for(
                    apis, tp, p.timestamp, p.current_leader_epoch, from_consumer, isolation
                )
                out.offset, out.timestamp, out.leader_epoch = offset, ts, epoch
                if request.header.api_version == 0:
                    out.old_style_offsets = [offset] if offset >= 0 else []
            except KafkaError as e:
                out.error_code = e.code
            parts.append(out)
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)
