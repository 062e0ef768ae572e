"""DescribeLogDirs (35) and AlterReplicaLogDirs (34) over the AdminClient: Kafka's
Admin.describeLogDirs (one request per broker asking for every partition, topics null, as
Kafka's client does) and Admin.alterReplicaLogDirs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError
from kafkapy.protocol.generated.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from kafkapy.protocol.generated.describe_log_dirs_request import DescribeLogDirsRequest


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    size: int
    offset_lag: int
    is_future: bool


@dataclass(slots=True)
class LogDirDescription:
    error: KafkaError | None
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)


def _description(result: Any) -> LogDirDescription:
    error: KafkaError | None = None
    if result.error_code:
        try:
            raise_for_error(result.error_code)
        except KafkaError as e:
            error = e
    replicas = {
        TopicPartition(t.name, p.partition_index): ReplicaInfo(
            p.partition_size, p.offset_lag, p.is_future_key
        )
        for t in result.topics
        for p in t.partitions
    }
    return LogDirDescription(error, replicas)


def describe_log_dirs(
    admin: AdminClient, broker_ids: Iterable[int]
) -> dict[int, dict[str, LogDirDescription]]:
    """{broker: {log dir: description}}; a broker's failure raises (Kafka's allDescriptions)."""
    admin.metadata([], "describeLogDirs")
    result: dict[int, dict[str, LogDirDescription]] = {}
    for broker in broker_ids:
        _, answer = admin.send_to_broker(
            broker, ApiKey.DESCRIBE_LOG_DIRS, lambda v: DescribeLogDirsRequest(topics=None)
        )
        raise_for_error(getattr(answer, "error_code", 0) or 0)
        result[broker] = {r.log_dir: _description(r) for r in answer.results}
    return result


def alter_replica_log_dirs(
    admin: AdminClient, moves: Mapping[tuple[TopicPartition, int], str]
) -> dict[tuple[TopicPartition, int], int]:
    """Kafka's Admin.alterReplicaLogDirs: {(partition, broker): dir} -> error code per replica,
    one AlterReplicaLogDirs request per broker."""
    admin.metadata([], "alterReplicaLogDirs")
    by_broker: dict[int, dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for (tp, broker), path in moves.items():
        by_broker[broker][path][tp.topic].append(tp.partition)
    codes: dict[tuple[TopicPartition, int], int] = {}
    for broker, dirs in sorted(by_broker.items()):
        body = AlterReplicaLogDirsRequest(
            dirs=[
                AlterReplicaLogDir(
                    path=path,
                    topics=[AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()],
                )
                for path, topics in dirs.items()
            ]
        )
        _, answer = admin.send_to_broker(broker, ApiKey.ALTER_REPLICA_LOG_DIRS, lambda v, b=body: b)  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
        for r in answer.results:
            for p in r.partitions:
                codes[(TopicPartition(r.topic_name, p.partition_index), broker)] = p.error_code
    return codes
