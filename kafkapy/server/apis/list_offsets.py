"""ListOffsets: earliest, latest (the high watermark), max timestamp, and offsets by time."""

from __future__ import annotations

from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.log.topic_partition import TopicPartition
from kafkapy.server.network.request_channel import Request

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


def offset_for(apis: KafkaApis, tp: TopicPartition, timestamp: int) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) for one partition; raises the partition's error."""
    partition = apis.replica_manager.leader_partition(tp)
    log = partition.log
    if timestamp == LATEST_TIMESTAMP:
        return log.high_watermark, -1, partition.leader_epoch
    if timestamp == EARLIEST_TIMESTAMP:
        return log.log_start_offset, -1, partition.leader_epoch
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found.offset < 0:
        return -1, -1, -1
    offset, ts = found.offset, found.timestamp
    if timestamp != MAX_TIMESTAMP and offset >= log.high_watermark:
        return -1, -1, -1
    return offset, ts, partition.leader_epoch


@handles(ApiKey.LIST_OFFSETS)
def handle_list_offsets(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            out = {
                "partition_index": p.partition_index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                offset, ts, epoch = offset_for(apis, TopicPartition(t.name, p.partition_index), p.timestamp)
                out.update(offset=offset, timestamp=ts, leader_epoch=epoch)
                if request.header.api_version == 0:
                    out["old_style_offsets"] = [offset] if offset >= 0 else []
            except KafkaError as e:
                out["error_code"] = e.code
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
