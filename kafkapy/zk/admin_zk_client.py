"""AdminZkClient: what tools and the CreateTopics/CreatePartitions/AlterConfigs/DeleteTopics APIs
write into ZooKeeper. It only records requests; the controller acts on them.

Errors are kafkapy.protocol.errors exceptions (TopicExistsException, InvalidTopicException,
InvalidReplicationFactorException, ...) so the API layer maps them to codes in one place.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from kazoo.exceptions import NodeExistsError

from kafkapy.protocol.errors import (
    BrokerNotAvailableException,
    InvalidConfigurationException,
    InvalidPartitionsException,
    InvalidReplicaAssignmentException,
    InvalidTopicException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from kafkapy.zk.cluster_znodes import generate_topic_id
from kafkapy.zk.config_znodes import ConfigType, sanitize
from kafkapy.zk.errors import AdminOperationError, TopicAlreadyMarkedForDeletionError
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.rack_aware_assignment import assign_replicas
from kafkapy.zk.topic_name import colliding_topics, has_collision_chars, validate_topic_name
from kafkapy.zk.topic_znodes import ReplicaAssignment

log = logging.getLogger(__name__)

# Kafka 2.8's topic-level config names (org.apache.kafka.common.config.TopicConfig).
TOPIC_CONFIG_NAMES = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)

ConfigValidator = Callable[[Mapping[str, str]], None]

# kafkapy.topic.max.partitions' default, for callers without a broker config (the tools).
DEFAULT_MAX_PARTITIONS = 100000


def check_partition_count(topic: str, partitions: int, max_partitions: int) -> None:
    """Refuse a partition count above the bound before any assignment is computed: building
    the replica assignment of a hostile count (10^9) is what took a broker past 4 GB."""
    if partitions > max_partitions:
        raise InvalidPartitionsException(
            f"Number of partitions {partitions} for topic {topic} is larger than the maximum "
            f"{max_partitions} allowed (kafkapy.topic.max.partitions)."
        )


def validate_topic_config_names(configs: Mapping[str, str]) -> None:
    """The default check: names only. Whoever owns LogConfig can pass a full validator
    (values, ranges) to AdminZkClient instead."""
    for name in configs:
        if name not in TOPIC_CONFIG_NAMES:
            raise InvalidConfigurationException(f"Unknown topic config name: {name}")


def _sanitized(entity_type: str, entity_name: str) -> str:
    """Kafka sanitizes user and client names only, and never the "<default>" entity."""
    if entity_type in (ConfigType.USER, ConfigType.CLIENT) and entity_name != "<default>":
        return sanitize(entity_name)
    return entity_name


class RackAwareMode(Enum):
    """Kafka's RackAwareMode: ENFORCED refuses brokers of which only some have a rack (tools,
    CreatePartitions), SAFE then falls back to rack-unaware placement (auto-created topics),
    DISABLED ignores racks (--disable-rack-aware)."""

    ENFORCED = "enforced"
    SAFE = "safe"
    DISABLED = "disabled"


NOT_ALL_RACKS_MESSAGE = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line"
    " to make replica assignment without rack information."
)


def broker_racks_for_mode(racks: Mapping[int, str | None], mode: RackAwareMode) -> dict[int, str | None]:
    """Kafka's AdminZkClient.getBrokerMetadatas over {broker id: rack}: what placement may use."""
    with_rack = sum(1 for r in racks.values() if r is not None)
    partial = 0 < with_rack < len(racks)
    if mode is RackAwareMode.ENFORCED and partial:
        raise AdminOperationError(NOT_ALL_RACKS_MESSAGE)
    if mode is RackAwareMode.DISABLED or (mode is RackAwareMode.SAFE and partial):
        return {b: None for b in sorted(racks)}
    return dict(sorted(racks.items()))


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    topic: str
    topic_id: str | None
    assignment: dict[int, list[int]]


class AdminZkClient:
    def __init__(
        self,
        zk: KafkaZkClient,
        config_validator: ConfigValidator = validate_topic_config_names,
        rng: random.Random | None = None,
        max_partitions: int = DEFAULT_MAX_PARTITIONS,
    ) -> None:
        self.zk = zk
        self._validate_configs = config_validator
        self._rng = rng
        self.max_partitions = max_partitions

    # -- topics -------------------------------------------------------------------------------

    def create_topic(
        self,
        topic: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        replica_assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
        use_topic_id: bool = True,
        rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
    ) -> CreatedTopic:
        """Create from a partition count and replication factor (placed by Kafka's algorithm over
        the live brokers, rack-aware when they register racks), or from an explicit
        {partition: replicas}."""
        configs = dict(configs or {})
        if replica_assignment is None:
            check_partition_count(topic, partitions, self.max_partitions)
            assignment = assign_replicas(
                self.broker_racks(rack_aware_mode), partitions, replication_factor, rng=self._rng
            )
        else:
            check_partition_count(topic, len(replica_assignment), self.max_partitions)
            assignment = {int(p): list(r) for p, r in replica_assignment.items()}
        self.validate_topic_create(topic, assignment, configs)
        topic_id = generate_topic_id() if use_topic_id else None
        if not validate_only:
            self.zk.create_topic_assignment(topic, topic_id, assignment, configs)
            log.info("Topic creation %s", {"topic": topic, "assignment": assignment})
        return CreatedTopic(topic, topic_id, dict(sorted(assignment.items())))

    def validate_topic_create(
        self, topic: str, assignment: Mapping[int, Sequence[int]], configs: Mapping[str, str]
    ) -> None:
        validate_topic_name(topic)
        if self.zk.is_topic_marked_for_deletion(topic):
            raise TopicExistsException(f"Topic '{topic}' is marked for deletion.")
        if has_collision_chars(topic):
            existing = self.zk.get_all_topics_in_cluster()
            if topic in existing:
                raise TopicExistsException(f"Topic '{topic}' already exists.")
            colliding = colliding_topics(topic, existing)
            if colliding:
                raise InvalidTopicException(
                    f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}"
                )
        if self.zk.topic_exists(topic):
            raise TopicExistsException(f"Topic '{topic}' already exists.")
        if len({len(r) for r in assignment.values()}) != 1:
            raise InvalidReplicaAssignmentException("All partitions should have the same number of replicas")
        for replicas in assignment.values():
            if len(replicas) != len(set(replicas)):
                raise InvalidReplicaAssignmentException(
                    f"Duplicate replica assignment found: {dict(assignment)}"
                )
        if sorted(assignment) != list(range(len(assignment))):
            raise InvalidReplicaAssignmentException(
                "partitions should be a consecutive 0-based integer sequence"
            )
        self._validate_configs(configs)

    def add_partitions(
        self,
        topic: str,
        num_partitions: int,
        replica_assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
        rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
    ) -> dict[int, list[int]]:
        """Grow `topic` to `num_partitions`; returns the new partitions' assignment. An explicit
        assignment covers the new partitions only, keyed by their partition ids."""
        current = self.zk.get_topic_assignment(topic)
        if current is None:
            raise UnknownTopicOrPartitionException(f"The topic '{topic}' does not exist.")
        if self.zk.is_topic_marked_for_deletion(topic):
            raise InvalidTopicException(f"The topic '{topic}' is queued for deletion.")
        existing = current.assignment
        if 0 not in existing:
            raise AdminOperationError(
                f"Unexpected existing replica assignment for topic '{topic}', "
                f"partition id 0 is missing. Assignment: {current.replicas()}"
            )
        partition0 = existing[0].replicas
        if num_partitions - len(existing) <= 0:
            raise InvalidPartitionsException(
                f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
                f"{len(existing)} partitions, {num_partitions} would not be an increase."
            )
        check_partition_count(topic, num_partitions, self.max_partitions)
        brokers = self.zk.get_sorted_broker_list()
        if replica_assignment is not None:
            new = {int(p): list(r) for p, r in replica_assignment.items()}
            added = num_partitions - len(existing)
            if len(new) != added:
                # Kafka's AdminZkClient.createNewPartitionsAssignment words it so.
                raise InvalidReplicaAssignmentException(
                    f"Increasing the number of partitions by {added} but {len(new)} assignments provided."
                )
            self._validate_new_replica_assignment(new, len(partition0), set(brokers))
        else:
            # Continue the placement where the existing partitions left off.
            # (Kafka's createNewPartitionsAssignment, rack-aware like the topic's creation).
            start = next((i for i, b in enumerate(brokers) if b >= partition0[0]), 0)
            new = assign_replicas(
                self.broker_racks(rack_aware_mode),
                num_partitions - len(existing),
                len(partition0),
                fixed_start_index=start,
                start_partition_id=len(existing),
            )
        if not validate_only:
            combined: dict[int, ReplicaAssignment | Sequence[int]] = dict(existing)
            combined.update(new)
            self.zk.set_topic_assignment(topic, combined)
        return new

    def broker_racks(self, mode: RackAwareMode) -> dict[int, str | None]:
        """The registered brokers' racks (from /brokers/ids/<id>) as `mode` lets placement use them."""
        return broker_racks_for_mode({b.id: b.rack for b in self.zk.get_all_brokers_in_cluster()}, mode)

    @staticmethod
    def _validate_new_replica_assignment(
        assignment: Mapping[int, list[int]], expected_rf: int, broker_ids: set[int]
    ) -> None:
        for p, replicas in sorted(assignment.items()):
            if not replicas:
                raise InvalidReplicaAssignmentException(
                    f"Cannot have replication factor of 0 for partition id {p}."
                )
            if len(replicas) != len(set(replicas)):
                raise InvalidReplicaAssignmentException(
                    "Duplicate brokers not allowed in replica assignment: "
                    f"{', '.join(map(str, replicas))} for partition id {p}."
                )
            if not set(replicas) <= broker_ids:
                raise BrokerNotAvailableException(
                    f"Some brokers specified for partition id {p} are not available. Specified brokers: "
                    f"{', '.join(map(str, replicas))}, available brokers: {', '.join(map(str, sorted(broker_ids)))}."
                )
        bad = sorted((p, len(r)) for p, r in assignment.items() if len(r) != expected_rf)
        if bad:
            raise InvalidReplicaAssignmentException(
                f"Inconsistent replication factor between partitions, partition 0 has {expected_rf} while "
                f"partitions [{', '.join(str(p) for p, _ in bad)}] have replication factors "
                f"[{', '.join(str(rf) for _, rf in bad)}], respectively."
            )

    def delete_topic(self, topic: str) -> None:
        """Record the deletion request; the controller does the deleting."""
        if not self.zk.topic_exists(topic):
            raise UnknownTopicOrPartitionException(f"Topic `{topic}` to delete does not exist")
        try:
            self.zk.create_delete_topic_path(topic)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(
                f"Topic {topic} is already marked for deletion"
            ) from None

    # -- configs ------------------------------------------------------------------------------

    def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's dynamic configs and notify every broker."""
        if not self.zk.topic_exists(topic):
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
        self._validate_configs(configs)
        self.change_entity_config(ConfigType.TOPIC, topic, configs)

    def change_entity_config(self, entity_type: str, entity_name: str, configs: Mapping[str, str]) -> None:
        """Write /config/<type>/<name>, then /config/changes/config_change_N naming it: brokers
        watch the changes, never the configs themselves."""
        name = _sanitized(entity_type, entity_name)
        self.zk.set_or_create_entity_configs(entity_type, name, configs)
        self.zk.create_config_change_notification(f"{entity_type}/{name}")

    def fetch_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        return self.zk.get_entity_configs(entity_type, _sanitized(entity_type, entity_name))

    def fetch_all_topic_configs(self) -> dict[str, dict[str, str]]:
        return {
            t: self.zk.get_entity_configs(ConfigType.TOPIC, t)
            for t in sorted(self.zk.get_all_topics_in_cluster())
        }
