"""kafkapy-consumer-groups --zookeeper: list, describe and delete legacy (ZooKeeper) consumer groups.

What Kafka's ZkConsumerGroupService did: groups are the children of /consumers; a group's topics
are the children of /consumers/<group>/owners; describe shows, per partition, the committed
offset from /consumers/<group>/offsets/<t>/<p>, the log end offset asked of the partition's
leader (ListOffsets latest), the lag, and the owning consumer thread from
/consumers/<group>/owners/<t>/<p>; delete removes /consumers/<group> unless consumers are still
registered under its ids.

    for line in format_describe(describe_group(zk, "g")):
        print(line)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkapy.consumer_legacy.wire import list_offsets, open_connection
from kafkapy.protocol.constants import LATEST_TIMESTAMP
from kafkapy.zk.consumer_znodes import (
    ConsumerGroupZNode,
    ConsumerIdsZNode,
    ConsumerOffsetZNode,
    ConsumerOwnerZNode,
    ConsumerPathZNode,
)
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.topic_znodes import TopicPartition

DESCRIBE_FORMAT = "%-30s %-30s %-10s %-15s %-15s %-15s %s"
DESCRIBE_HEADER = DESCRIBE_FORMAT % (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "OWNER",
)
NO_TOPICS_MESSAGE = "No topic available for consumer group provided"
ZK_NOTE = "Note: This will only show information about consumers that use ZooKeeper (not those using the Java consumer API)."


@dataclass(frozen=True, slots=True)
class PartitionRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    owner: str | None

    @property
    def lag(self) -> int | None:
        if self.current_offset is None or self.current_offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.current_offset

    def format(self) -> str:
        def show(v: int | None) -> str:
            return "unknown" if v is None else str(v)

        return DESCRIBE_FORMAT % (
            self.group,
            self.topic,
            self.partition,
            show(self.current_offset),
            show(self.log_end_offset),
            show(self.lag),
            self.owner or "none",
        )


class LogEndOffsets(Protocol):
    def log_end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]: ...


class LeaderLogEndOffsets:
    """Log end offsets asked of each partition's leader (found in its ZooKeeper state), as
    Kafka's ZK mode did with a SimpleConsumer per leader."""

    def __init__(
        self, zk: KafkaZkClient, client_id: str = "ConsumerGroupCommand", timeout_s: float = 10.0
    ) -> None:
        self.zk = zk
        self.client_id = client_id
        self.timeout_s = timeout_s

    def log_end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        result: dict[TopicPartition, int | None] = dict.fromkeys(partitions)
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp, state in self.zk.get_topic_partition_states(partitions).items():
            if state.leader_and_isr.leader >= 0:
                by_leader.setdefault(state.leader_and_isr.leader, []).append(tp)
        for leader, tps in by_leader.items():
            broker = self.zk.get_broker(leader)
            if broker is None or not broker.endpoints:
                continue
            endpoint = broker.endpoint("PLAINTEXT") or broker.endpoints[0]
            try:
                with open_connection(
                    endpoint.host or "localhost", endpoint.port, self.client_id, self.timeout_s
                ) as conn:
                    answers = list_offsets(conn, tps, LATEST_TIMESTAMP)
            except Exception:
                continue  # that leader is unreachable: its partitions show "unknown"
            for tp in tps:
                error, offset = answers.get((tp.topic, tp.partition), (-1, -1))
                result[tp] = offset if error == 0 and offset >= 0 else None
        return result


def list_groups(zk: KafkaZkClient) -> list[str]:
    return sorted(zk.get_children(ConsumerPathZNode.path()))


def group_exists(zk: KafkaZkClient, group: str) -> bool:
    return zk.path_exists(ConsumerGroupZNode.path(group))


def active_members(zk: KafkaZkClient, group: str) -> list[str]:
    return sorted(zk.get_children(ConsumerIdsZNode.path(group)))


def topics_of_group(zk: KafkaZkClient, group: str) -> list[str]:
    return sorted(zk.get_children(f"{ConsumerGroupZNode.path(group)}/owners"))


def describe_group(zk: KafkaZkClient, group: str, client: LogEndOffsets | None = None) -> list[PartitionRow]:
    """One row per partition of each topic the group has owned, topic by topic, partitions in order.
    An empty list means "No topic available for consumer group provided"."""
    client = client if client is not None else LeaderLogEndOffsets(zk)
    partitions_by_topic = zk.get_partitions_for_topics(topics_of_group(zk, group))
    tps = [TopicPartition(t, p) for t in sorted(partitions_by_topic) for p in sorted(partitions_by_topic[t])]
    ends = client.log_end_offsets(tps) if tps else {}
    rows = []
    for tp in tps:
        got = zk.get_data(ConsumerOffsetZNode.path(group, tp.topic, tp.partition))
        offset = ConsumerOffsetZNode.decode(got[0]) if got is not None else None
        owner = zk.get_data(ConsumerOwnerZNode.path(group, tp.topic, tp.partition))
        rows.append(
            PartitionRow(
                group,
                tp.topic,
                tp.partition,
                offset,
                ends.get(tp),
                ConsumerOwnerZNode.decode(owner[0]) if owner is not None else None,
            )
        )
    return rows


def format_describe(rows: Iterable[PartitionRow]) -> list[str]:
    """The lines Kafka printed for --describe (without the stderr note)."""
    rows = list(rows)
    lines = [] if rows else [NO_TOPICS_MESSAGE]
    return [*lines, DESCRIBE_HEADER, *(r.format() for r in rows)]


@dataclass(frozen=True, slots=True)
class DeleteResult:
    group: str
    deleted: bool
    message: str


def delete_group(zk: KafkaZkClient, group: str) -> DeleteResult:
    """Remove everything under /consumers/<group>, refused while consumers are registered."""
    if not zk.path_exists(ConsumerIdsZNode.path(group)) and not group_exists(zk, group):
        return DeleteResult(group, False, f"Delete for group {group} failed because group does not exist.")
    if active_members(zk, group):
        return DeleteResult(
            group, False, f"Delete for group {group} failed because its consumers are still active."
        )
    zk.delete_recursive(ConsumerGroupZNode.path(group))
    return DeleteResult(
        group, True, f"Deleted all consumer group information for group {group} in zookeeper."
    )
