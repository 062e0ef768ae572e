"""AlterPartitionReassignments / ListPartitionReassignments (KIP-455) over the AdminClient:
what Kafka's Admin.alterPartitionReassignments and listPartitionReassignments give the
reassign-partitions tool. Both go to the controller (NOT_CONTROLLER: ask the new one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError
from kafkapy.protocol.generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kafkapy.protocol.generated.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions, key=lambda tp: (tp.topic, tp.partition)):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def alter_partition_reassignments(
    admin: AdminClient, reassignments: Mapping[TopicPartition, Sequence[int] | None]
) -> dict[TopicPartition, KafkaError | None]:
    """Start (a replica list) or cancel (None) reassignments; each partition's error or None."""
    topics = [
        ReassignableTopic(
            name=topic,
            partitions=[
                ReassignablePartition(
                    partition_index=p, replicas=_replicas(reassignments[TopicPartition(topic, p)])
                )
                for p in partitions
            ],
        )
        for topic, partitions in _by_topic(reassignments).items()
    ]
    body = AlterPartitionReassignmentsRequest(timeout_ms=admin.timeout_ms, topics=topics)
    answer = admin.controller_call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        "alterPartitionReassignments",
        lambda v: body,
        lambda a: [(a.error_code, a.error_message)],
    )
    raise_for_error(answer.error_code, answer.error_message)
    results: dict[TopicPartition, KafkaError | None] = {}
    for topic in answer.responses:
        for p in topic.partitions:
            results[TopicPartition(topic.name, p.partition_index)] = _error(p.error_code, p.error_message)
    return results


def list_partition_reassignments(
    admin: AdminClient, partitions: Iterable[TopicPartition] | None = None
) -> dict[TopicPartition, PartitionReassignment]:
    """The ongoing reassignments (of `partitions`, or all of them)."""
    topics = (
        None
        if partitions is None
        else [
            ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
            for t, ps in _by_topic(partitions).items()
        ]
    )
    body = ListPartitionReassignmentsRequest(timeout_ms=admin.timeout_ms, topics=topics)
    answer = admin.controller_call(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        "listPartitionReassignments",
        lambda v: body,
        lambda a: [(a.error_code, a.error_message)],
    )
    raise_for_error(answer.error_code, answer.error_message)
    return {
        TopicPartition(t.name, p.partition_index): PartitionReassignment(
            tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
        )
        for t in answer.topics
        for p in t.partitions
    }


def _replicas(replicas: Sequence[int] | None) -> list[int] | None:
    return None if replicas is None else list(replicas)


def _error(code: int, message: str | None) -> KafkaError | None:
    try:
        raise_for_error(code, message)
    except KafkaError as e:
        return e
    return None
