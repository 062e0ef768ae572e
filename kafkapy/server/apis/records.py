"""DeleteRecords: move a partition's log start offset forward (never past the high watermark)."""

from __future__ import annotations

from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, OffsetOutOfRangeException
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.log.topic_partition import TopicPartition
from kafkapy.server.network.request_channel import Request

# DeleteRecords' "up to the high watermark" sentinel.
HIGH_WATERMARK = -1


@handles(ApiKey.DELETE_RECORDS)
def handle_delete_records(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            out = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
            try:
                partition = apis.replica_manager.leader_partition(TopicPartition(t.name, p.partition_index))
                log = partition.log
                offset = log.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if offset < 0 or offset > log.high_watermark:
                    raise OffsetOutOfRangeException(
                        f"Cannot increment the log start offset to {offset} of partition {t.name}-"
                        f"{p.partition_index} since it is larger than the high watermark {log.high_watermark}"
                    )
                log.maybe_increment_log_start_offset(offset)
                out["low_watermark"] = log.log_start_offset
            except KafkaError as e:
                out["error_code"] = e.code
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
