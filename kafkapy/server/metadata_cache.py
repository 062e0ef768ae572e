"""MetadataCache: what the controller's UpdateMetadata requests told this broker.

Metadata, FindCoordinator and DescribeCluster answer from here, never from ZooKeeper, exactly
as Kafka brokers do: the controller is the single writer of cluster metadata.

UpdateMetadata is applied incrementally (only the partitions it names change), and the Metadata
answer of each topic, once built for a listener, is kept until an UpdateMetadata names the topic
or changes the live brokers: an all-topics request on a broker with 10k partitions then copies
cached parts instead of building 10k partition entries per request.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kafkapy.protocol.constants import LEADER_DURING_DELETE, ZERO_UUID
from kafkapy.protocol.generated.metadata_response import MetadataResponseTopic
from kafkapy.protocol.generated.update_metadata_request import UpdateMetadataRequest

log = logging.getLogger("kafkapy.server.MetadataCache")

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    id: int
    rack: str | None
    endpoints: dict[str, tuple[str, int, str]]  # listener -> (host, port, security protocol)


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    zk_version: int


class MetadataCache:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self.brokers: dict[int, BrokerMetadata] = {}
        self.partitions: dict[str, dict[int, PartitionMetadata]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.topic_names: dict[uuid.UUID, str] = {}
        # Set by the first UpdateMetadata (on the loop): the broker serves clients after it.
        self.initialized = asyncio.Event()
        # Set by the first UpdateMetadata that carries partition states. A new controller's first
        # one names the live brokers only (its partitions follow in the next batch), so a broker
        # starting then would otherwise answer its first clients from a cache without partitions.
        self.partition_states_arrived = asyncio.Event()
        # The Metadata handler's built topic entries: {listener: {topic: entry}}.
        self.topic_entries: TopicEntryCache[MetadataResponseTopic] = TopicEntryCache()

    # -- updates ------------------------------------------------------------------------------

    def update_metadata(self, request: UpdateMetadataRequest) -> list[tuple[str, int]]:
        """Apply an UpdateMetadata request; returns the partitions it deleted."""
        self.controller_id = request.controller_id if request.controller_id >= 0 else None
        brokers: dict[int, BrokerMetadata] = {}
        for b in request.live_brokers:
            endpoints = {
                e.listener: (e.host, e.port, _security_protocol_name(e.security_protocol))
                for e in b.endpoints
            }
            brokers[b.id] = BrokerMetadata(b.id, b.rack, endpoints)
        if brokers != self.brokers:
            # Leaders' endpoints and offline replicas are read from the live brokers.
            self.topic_entries.clear()
        self.brokers = brokers
        deleted: list[tuple[str, int]] = []
        for topic_state in request.topic_states:
            topic = topic_state.topic_name
            self.topic_entries.invalidate(topic)
            topic_id = topic_state.topic_id  # uuid.UUID from the codec; zero when absent
            if topic_id.int != 0:
                self.topic_ids[topic] = topic_id
                self.topic_names[topic_id] = topic
            parts = self.partitions.setdefault(topic, {})
            for ps in topic_state.partition_states:
                if ps.leader == LEADER_DURING_DELETE:
                    parts.pop(ps.partition_index, None)
                    deleted.append((topic, ps.partition_index))
                    continue
                parts[ps.partition_index] = PartitionMetadata(
                    ps.leader,
                    ps.leader_epoch,
                    tuple(ps.isr),
                    tuple(ps.replicas),
                    tuple(ps.offline_replicas or ()),
                    ps.zk_version,
                )
            if not parts:
                self.partitions.pop(topic, None)
                tid = self.topic_ids.pop(topic, None)
                if tid is not None:
                    self.topic_names.pop(tid, None)
        if request.topic_states:
            self.partition_states_arrived.set()
        self.initialized.set()
        return deleted

    # -- queries ------------------------------------------------------------------------------

    def contains_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def all_topics(self) -> list[str]:
        return sorted(self.partitions)

    def partition_info(self, topic: str, partition: int) -> PartitionMetadata | None:
        return self.partitions.get(topic, {}).get(partition)

    def alive_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def alive_endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        b = self.brokers.get(broker_id)
        if b is None or listener not in b.endpoints:
            return None
        host, port, _ = b.endpoints[listener]
        return host, port

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.topic_ids.get(topic, ZERO_UUID)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topic_names.get(topic_id)


class TopicEntryCache(Generic[_T]):
    """Per-listener entries derived from one topic's metadata, dropped when the topic changes."""

    def __init__(self) -> None:
        self._by_listener: dict[str, dict[str, _T]] = {}

    def get(self, listener: str, topic: str, build: Callable[[], _T]) -> _T:
        entries = self._by_listener.get(listener)
        if entries is None:
            entries = self._by_listener[listener] = {}
        entry = entries.get(topic)
        if entry is None:
            entry = entries[topic] = build()
        return entry

    def invalidate(self, topic: str) -> None:
        for entries in self._by_listener.values():
            entries.pop(topic, None)

    def clear(self) -> None:
        self._by_listener.clear()


_SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _security_protocol_name(value: Any) -> str:
    if isinstance(value, int):
        return _SECURITY_PROTOCOLS.get(value, "PLAINTEXT")
    return str(value)
