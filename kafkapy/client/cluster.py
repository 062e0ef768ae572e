"""ClusterMetadata: an immutable snapshot of what a Metadata response said.

Each refresh builds a new snapshot and swaps the reference, so other threads (a producer's
`send`, which needs partition counts and leaders) read a consistent view without locks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkapy.protocol.errors import error_name


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader: int  # -1: no leader right now
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: Mapping[int, BrokerNode] = field(default_factory=dict)
    topics: Mapping[str, tuple[PartitionMetadata, ...]] = field(default_factory=dict)
    topic_errors: Mapping[str, int] = field(default_factory=dict)  # non-zero topic-level codes
    controller_id: int = -1
    cluster_id: str | None = None
    updated_at: float = 0.0  # time.monotonic() of the response; 0.0 for the bootstrap snapshot

    @classmethod
    def from_response(cls, resp: Any, previous: ClusterMetadata | None = None) -> ClusterMetadata:
        """Build from a Metadata response. Topics asked for but not answered keep no entry;
        topics the previous snapshot knew and this response did not mention are kept, because
        a producer asks only for the topics it lacks."""
        brokers = {b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}
        topics = dict(previous.topics) if previous else {}
        errors = dict(previous.topic_errors) if previous else {}
        for t in resp.topics:
            if t.error_code:
                errors[t.name] = t.error_code
                topics.pop(t.name, None)
                continue
            errors.pop(t.name, None)
            parts = sorted(
                (
                    PartitionMetadata(
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        p.error_code,
                    )
                    for p in t.partitions
                ),
                key=lambda p: p.partition,
            )
            topics[t.name] = tuple(parts)
        return cls(brokers, topics, errors, resp.controller_id, resp.cluster_id, time.monotonic())

    def partitions_for(self, topic: str) -> tuple[PartitionMetadata, ...] | None:
        return self.topics.get(topic)

    def partition_count(self, topic: str) -> int | None:
        parts = self.topics.get(topic)
        return None if parts is None else len(parts)

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions with a live leader: where the sticky partitioner sends null keys."""
        return [p.partition for p in self.topics.get(topic, ()) if p.leader >= 0 and p.leader in self.brokers]

    def leader_for(self, topic: str, partition: int) -> int | None:
        parts = self.topics.get(topic)
        if parts is None or partition >= len(parts):
            return None
        leader = parts[partition].leader
        return leader if leader >= 0 and leader in self.brokers else None

    def missing_leaders(self, topics: Iterable[str]) -> list[str]:
        """Topics among `topics` that are unknown or have a partition without a leader."""
        return [
            t
            for t in topics
            if t not in self.topics
            or any(p.leader < 0 or p.leader not in self.brokers for p in self.topics[t])
        ]

    def topic_error(self, topic: str) -> str | None:
        code = self.topic_errors.get(topic)
        return None if code is None else error_name(code)
