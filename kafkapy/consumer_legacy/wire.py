"""The legacy consumer's requests to brokers: Metadata (leaders), ListOffsets (auto.offset.reset)
and Fetch, over one blocking BrokerConnection each.

Kept in one small module so that a shared client fetcher can replace it later. Versions are the
highest both sides speak within the ranges below: Fetch v4+ (record batches, isolation level) up
to v11 (the last before topic ids and flexible encodings matter to us), Metadata v1-v8,
ListOffsets v1-v5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import CONSUMER_REPLICA_ID

FETCH_VERSIONS = (4, 11)
METADATA_VERSIONS = (1, 8)
LIST_OFFSETS_VERSIONS = (1, 5)

READ_UNCOMMITTED = 0

TopicAndPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionData:
    error_code: int
    high_watermark: int
    records: memoryview | None


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: dict[int, tuple[str, int]]
    # leader broker id per partition (-1 when leaderless); partitions with errors are absent
    leaders: dict[TopicAndPartition, int]


def open_connection(host: str, port: int, client_id: str, timeout_s: float) -> BrokerConnection:
    conn = BrokerConnection(host, port, client_id=client_id, timeout=timeout_s)
    conn.api_versions()
    return conn


def fetch_metadata(conn: BrokerConnection, topics: Iterable[str]) -> ClusterMetadata:
    version = conn.pick_version(ApiKey.METADATA, METADATA_VERSIONS)
    body = {"topics": [{"name": t} for t in sorted(set(topics))], "allow_auto_topic_creation": False}
    resp = conn.send(ApiKey.METADATA, version, body)
    assert resp is not None
    brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    leaders: dict[TopicAndPartition, int] = {}
    for topic in resp.topics:
        if topic.error_code:
            continue
        for p in topic.partitions:
            # LEADER_NOT_AVAILABLE (5) and friends: no leader yet, keep looking.
            leaders[(topic.name, p.partition_index)] = p.leader_id if p.error_code == 0 else -1
    return ClusterMetadata(brokers, leaders)


def list_offsets(
    conn: BrokerConnection, partitions: Iterable[TopicAndPartition], timestamp: int
) -> dict[TopicAndPartition, tuple[int, int]]:
    """{(topic, partition): (error code, offset)} for the earliest (-2) or latest (-1) offset."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    version = conn.pick_version(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSIONS)
    body = {
        "replica_id": CONSUMER_REPLICA_ID,
        "isolation_level": READ_UNCOMMITTED,
        "topics": [
            {"name": t, "partitions": [{"partition_index": p, "timestamp": timestamp} for p in ps]}
            for t, ps in by_topic.items()
        ],
    }
    resp = conn.send(ApiKey.LIST_OFFSETS, version, body)
    assert resp is not None
    return {(t.name, p.partition_index): (p.error_code, p.offset) for t in resp.topics for p in t.partitions}


def fetch(
    conn: BrokerConnection,
    offsets: Mapping[TopicAndPartition, tuple[int, int]],
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int = 50 * 1024 * 1024,
) -> dict[TopicAndPartition, PartitionData]:
    """One Fetch for {(topic, partition): (fetch offset, partition max bytes)}."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), (offset, size) in offsets.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition": partition,
                "fetch_offset": offset,
                "partition_max_bytes": size,
                "log_start_offset": -1,
            }
        )
    version = conn.pick_version(ApiKey.FETCH, FETCH_VERSIONS)
    body = {
        "replica_id": CONSUMER_REPLICA_ID,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": READ_UNCOMMITTED,
        "session_id": 0,
        "session_epoch": -1,  # no fetch session: a full request every time, as 0.8 consumers did
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    resp = conn.send(ApiKey.FETCH, version, body)
    assert resp is not None
    return {
        (t.topic, p.partition_index): PartitionData(p.error_code, p.high_watermark, p.records)
        for t in resp.responses
        for p in t.partitions
    }
