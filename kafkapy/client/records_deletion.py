"""DeleteRecords (21) over the AdminClient: what Kafka's Admin.deleteRecords gives the
delete-records tool. Each partition's request goes to its leader, as the metadata names it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, LeaderNotAvailableException, UnknownTopicOrPartitionException
from kafkapy.protocol.generated.delete_records_request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)

# Kafka's Errors messages for the codes a DeleteRecords answer carries without a message.
MESSAGES = {
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "LEADER_NOT_AVAILABLE": "There is no leader for this topic-partition as we are in the middle of a leadership "
    "election.",
    "OFFSET_OUT_OF_RANGE": "The requested offset is not within the range of offsets maintained by the server.",
    "NOT_LEADER_OR_FOLLOWER": "For requests intended only for the leader, this error indicates that the broker is "
    "not the current leader. For requests intended for any replica, this error indicates that the broker is not a "
    "replica of the topic partition.",
    "REQUEST_TIMED_OUT": "The request timed out.",
    "POLICY_VIOLATION": "Request parameters do not satisfy the configured policy.",
    "INVALID_TOPIC_EXCEPTION": "The request attempted to perform an operation on an invalid topic.",
}
Result = int | KafkaError  # the partition's new low watermark, or why not


def _error(code: int) -> KafkaError:
    try:
        raise_for_error(code)
    except KafkaError as e:
        name = type(e).name
        return type(e)(MESSAGES.get(name, e.message))
    raise AssertionError("error code 0 is not an error")


def delete_records(admin: AdminClient, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, Result]:
    """Delete every partition's records before its offset (-1: the high watermark)."""
    results: dict[TopicPartition, Result] = {}
    md = admin.metadata(sorted({tp.topic for tp in offsets}), "deleteRecords")
    topics = {t.name: t for t in md.topics}
    by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
    for tp, offset in offsets.items():
        topic = topics.get(tp.topic)
        if topic is None or topic.error_code:
            results[tp] = _error(
                topic.error_code if topic is not None else UnknownTopicOrPartitionException.code
            )
            continue
        leader = next((p.leader_id for p in topic.partitions if p.partition_index == tp.partition), -1)
        if leader < 0:
            results[tp] = _error(LeaderNotAvailableException.code)
            continue
        by_leader[leader][tp] = offset
    for leader, wanted in by_leader.items():
        try:
            _, answer = admin.send_to_broker(
                leader,
                ApiKey.DELETE_RECORDS,
                lambda v, w=wanted: _body(w, admin),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
            )
        except KafkaError as e:
            results.update(dict.fromkeys(wanted, e))
            continue
        for t in answer.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                results[tp] = p.low_watermark if p.error_code == 0 else _error(p.error_code)
    return results


def _body(wanted: Mapping[TopicPartition, int], admin: AdminClient) -> DeleteRecordsRequest:
    grouped: dict[str, list[DeleteRecordsPartition]] = defaultdict(list)
    for tp, offset in sorted(wanted.items()):
        grouped[tp.topic].append(DeleteRecordsPartition(partition_index=tp.partition, offset=offset))
    return DeleteRecordsRequest(
        topics=[DeleteRecordsTopic(name=t, partitions=ps) for t, ps in grouped.items()],
        timeout_ms=admin.timeout_ms,
    )
