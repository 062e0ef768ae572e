"""What the console's pages show, gathered from the cluster over the Kafka protocol.

Plain frozen dataclasses built by blocking calls of kafkapy's admin clients (Metadata,
DescribeConfigs, DescribeLogDirs, ListOffsets, the group APIs): the page handlers run these on a
worker thread and hand the result to a template. Nothing here formats HTML.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from kafkapy.client.admin import AdminClient, raise_for_error, uuid_to_kafka_string
from kafkapy.client.configs import TOPIC, describe_configs
from kafkapy.client.log_dirs import describe_log_dirs
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaError
from kafkapy.tools.consumer_groups_cmd.describe import MISSING, offset_rows
from kafkapy.tools.consumer_groups_cmd.group_admin import EARLIEST, LATEST, GroupAdmin, MemberDescription


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None
    is_controller: bool
    partitions_led: int
    replicas: int
    # Every listener of the broker, from its ZooKeeper registration (empty without --zookeeper).
    endpoints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicSummary:
    name: str
    internal: bool
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    size_bytes: int | None  # sum of the leaders' log sizes; None when log dirs could not be read
    overrides: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    # broker id -> bytes of that replica's log
    sizes: tuple[tuple[int, int], ...]
    start_offset: int | None
    end_offset: int | None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader is None


@dataclass(frozen=True, slots=True)
class ConfigRow:
    name: str
    value: str | None
    source: str
    sensitive: bool


@dataclass(frozen=True, slots=True)
class TopicDetail:
    name: str
    topic_id: str | None
    internal: bool
    partitions: tuple[PartitionRow, ...]
    configs: tuple[ConfigRow, ...]


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    state: str


@dataclass(frozen=True, slots=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    member_id: str | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)


@dataclass(frozen=True, slots=True)
class GroupDetail:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: int
    members: tuple[MemberDescription, ...]
    lag: tuple[LagRow, ...]

    @property
    def total_lag(self) -> int:
        return sum(r.lag or 0 for r in self.lag)


def brokers(admin: AdminClient, endpoints: dict[int, tuple[str, ...]] | None = None) -> list[Broker]:
    md = admin.metadata(None, "describeCluster")
    led: Counter[int] = Counter()
    hosted: Counter[int] = Counter()
    for t in md.topics:
        for p in t.partitions if t.error_code == 0 else ():
            if p.leader_id >= 0:
                led[p.leader_id] += 1
            hosted.update(p.replica_nodes)
    return sorted(
        (
            Broker(
                b.node_id,
                b.host,
                b.port,
                b.rack,
                b.node_id == md.controller_id,
                led[b.node_id],
                hosted[b.node_id],
                (endpoints or {}).get(b.node_id, ()),
            )
            for b in md.brokers
        ),
        key=lambda b: b.id,
    )


def replica_sizes(admin: AdminClient, broker_ids: list[int]) -> dict[tuple[TopicPartition, int], int] | None:
    """(partition, broker) -> size of that replica's log; None if some broker would not say
    (DescribeLogDirs needs CLUSTER Describe: a user without it still sees the rest)."""
    try:
        described = describe_log_dirs(admin, broker_ids)
    except KafkaError:
        return None
    sizes: dict[tuple[TopicPartition, int], int] = {}
    for broker, dirs in described.items():
        for d in dirs.values():
            for tp, info in d.replicas.items():
                if not info.is_future:
                    sizes[(tp, broker)] = info.size
    return sizes


def topics(admin: AdminClient) -> list[TopicSummary]:
    md = admin.metadata(None, "listTopics")
    names = sorted(t.name for t in md.topics if t.error_code == 0)
    sizes = replica_sizes(admin, [b.node_id for b in md.brokers])
    overrides: dict[str, tuple[tuple[str, str], ...]] = {}
    if names:
        described = admin.describe_configs(names)
        overrides = {
            name: tuple((c.name, c.value or "") for c in entries if not c.is_default)
            for name, entries in described.items()
        }
    out = []
    for t in sorted(md.topics, key=lambda t: t.name):
        if t.error_code != 0:
            continue
        parts = t.partitions
        size = None
        if sizes is not None:
            size = sum(sizes.get((TopicPartition(t.name, p.partition_index), p.leader_id), 0) for p in parts)
        out.append(
            TopicSummary(
                t.name,
                bool(t.is_internal),
                len(parts),
                max((len(p.replica_nodes) for p in parts), default=0),
                sum(1 for p in parts if len(p.isr_nodes) < len(p.replica_nodes)),
                sum(1 for p in parts if p.leader_id < 0),
                size,
                overrides.get(t.name, ()),
            )
        )
    return out


def topic(admin: AdminClient, groups: GroupAdmin, name: str) -> TopicDetail:
    md = admin.metadata([name], "describeTopics")
    t = next(t for t in md.topics if t.name == name)
    raise_for_error(t.error_code, None)
    tps = [(name, p.partition_index) for p in t.partitions]
    sizes = replica_sizes(admin, [b.node_id for b in md.brokers]) or {}
    start = groups.list_offsets(tps, EARLIEST)
    end = groups.list_offsets(tps, LATEST)
    rows = tuple(
        PartitionRow(
            p.partition_index,
            p.leader_id if p.leader_id >= 0 else None,
            tuple(p.replica_nodes),
            tuple(p.isr_nodes),
            tuple(getattr(p, "offline_replicas", None) or ()),
            tuple(
                (r, sizes[(TopicPartition(name, p.partition_index), r)])
                for r in p.replica_nodes
                if (TopicPartition(name, p.partition_index), r) in sizes
            ),
            start.get((name, p.partition_index)),
            end.get((name, p.partition_index)),
        )
        for p in sorted(t.partitions, key=lambda p: p.partition_index)
    )
    configs = tuple(
        ConfigRow(c.name, c.value, c.source, c.is_sensitive)
        for c in sorted(describe_configs(admin, TOPIC, name), key=lambda c: c.name)
    )
    return TopicDetail(name, uuid_to_kafka_string(t.topic_id), bool(t.is_internal), rows, configs)


def group_list(groups: GroupAdmin) -> list[GroupSummary]:
    return [GroupSummary(g, state) for g, state in groups.list_groups()]


def group(groups: GroupAdmin, group_id: str) -> GroupDetail:
    desc = groups.describe_group(group_id)
    rows = offset_rows(groups, desc)
    members = tuple(replace(m, assignment=tuple(sorted(m.assignment))) for m in desc.members)
    lag = tuple(
        LagRow(
            r.topic,
            r.partition,
            r.offset if r.offset is not None and r.offset >= 0 else None,
            r.log_end,
            r.consumer_id if r.consumer_id not in ("", MISSING) else None,
        )
        for r in sorted(rows, key=lambda r: (r.topic, r.partition))
    )
    return GroupDetail(
        desc.group_id,
        desc.state,
        desc.protocol_type,
        desc.assignor,
        desc.coordinator.id,
        members,
        lag,
    )
