"""Topics, partition states, topic deletion and entity configs: the half of KafkaZkClient the
controller and the admin paths share. See kafka_zk_client.py for the conventions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkapy.protocol.errors import (
    ControllerMovedException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.zk.admin_znodes import DeleteTopicsTopicZNode, DeleteTopicsZNode
from kafkapy.server.zk.config_znodes import ConfigEntityTypeZNode, ConfigEntityZNode, ConfigType
from kafkapy.server.zk.topic_znodes import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicIdReplicaAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
)
from kafkapy.server.zk.zk_io import MATCH_ANY_VERSION, ZkIO

Assignment = Mapping[int, ReplicaAssignment | Sequence[int]]


@dataclass(slots=True)
class UpdateLeaderAndIsrResult:
    """Per partition: the written LeaderAndIsr (with its new zk version) or the error; and the
    partitions whose state changed under us (bad version), to re-read and retry."""

    finished: dict[TopicPartition, LeaderAndIsr | Exception] = field(default_factory=dict)
    to_retry: list[TopicPartition] = field(default_factory=list)


class TopicZkOps(ZkIO):
    # -- topics -------------------------------------------------------------------------------

    def get_all_topics_in_cluster(self) -> set[str]:
        return set(self.get_children(TopicsZNode.path()))

    def topic_exists(self, topic: str) -> bool:
        return self.path_exists(TopicZNode.path(topic))

    def create_topic_assignment(self, topic: str, topic_id: str | None, assignment: Assignment,
                                configs: Mapping[str, str] | None = None) -> None:
        """Configs first, then the assignment: the controller reacts to /brokers/topics/<t>, and
        must find the topic's configs in place when it does (Kafka's AdminZkClient order)."""
        if configs is not None:
            self.set_or_create_entity_configs(ConfigType.TOPIC, topic, configs)
        try:
            self.create_recursive(TopicZNode.path(topic), TopicZNode.encode(topic_id, assignment))
        except NodeExistsError:
            raise TopicExistsException(f"Topic '{topic}' already exists.") from None

    def set_topic_assignment(self, topic: str, assignment: Assignment, topic_id: str | None = None,
                             expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        """Replace a topic's assignment (add partitions, reassignment). topic_id None keeps the
        topic's current id: a topic id never changes."""
        if topic_id is None:
            current = self.get_topic_assignment(topic)
            topic_id = current.topic_id if current is not None else None
        data = TopicZNode.encode(topic_id, assignment)
        try:
            self.multi_fenced([lambda t: t.set_data(TopicZNode.path(topic), data)],
                              expected_controller_epoch_zk_version)
        except NoNodeError:
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.") from None

    def get_topic_assignment(self, topic: str) -> TopicIdReplicaAssignment | None:
        got = self.get_data(TopicZNode.path(topic))
        return None if got is None else TopicZNode.decode(topic, got[0])

    def get_full_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[str, TopicIdReplicaAssignment]:
        """Topics that do not exist are left out."""
        result = {}
        for topic in topics:
            assignment = self.get_topic_assignment(topic)
            if assignment is not None:
                result[topic] = assignment
        return result

    def get_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[TopicPartition, list[int]]:
        return {TopicPartition(t, p): replicas
                for t, a in self.get_full_replica_assignment_for_topics(topics).items()
                for p, replicas in a.replicas().items()}

    def get_partitions_for_topics(self, topics: Iterable[str]) -> dict[str, list[int]]:
        return {t: sorted(a.assignment) for t, a in self.get_full_replica_assignment_for_topics(topics).items()}

    # -- partition states ---------------------------------------------------------------------

    def get_topic_partition_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        got = self.get_data(TopicPartitionStateZNode.path(tp))
        return None if got is None else TopicPartitionStateZNode.decode(got[0], got[1].version)

    def get_topic_partition_states(self, partitions: Iterable[TopicPartition]
                                   ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Partitions without a state znode are left out."""
        result = {}
        for tp in partitions:
            state = self.get_topic_partition_state(tp)
            if state is not None:
                result[tp] = state
        return result

    def create_topic_partition_states(self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
                                      expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
                                      ) -> dict[TopicPartition, Exception | None]:
        """Create each partition's state znode (and its parents); per partition None on success
        or the error (NodeExistsError if it already has a state)."""
        result: dict[TopicPartition, Exception | None] = {}
        for tp, state in states.items():
            self.make_sure_persistent_path_exists(TopicPartitionsZNode.path(tp.topic))
            self.make_sure_persistent_path_exists(TopicPartitionZNode.path(tp))
            data = TopicPartitionStateZNode.encode(state)
            try:
                self.multi_fenced([lambda t, p=tp, d=data: t.create(TopicPartitionStateZNode.path(p), d)],  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                                  expected_controller_epoch_zk_version)
                result[tp] = None
            except ControllerMovedException:
                raise
            except Exception as e:  # per-partition failures are values, not aborts
                result[tp] = e
        return result

    def update_leader_and_isr(self, leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr], controller_epoch: int,
                              expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
                              ) -> UpdateLeaderAndIsrResult:
        """Write each new LeaderAndIsr if its state znode is still at the zk version it carries."""
        result = UpdateLeaderAndIsrResult()
        for tp, lai in leader_and_isrs.items():
            data = TopicPartitionStateZNode.encode(LeaderIsrAndControllerEpoch(lai, controller_epoch))
            try:
                res = self.multi_fenced(
                    [lambda t, p=tp, d=data, v=lai.zk_version: t.set_data(TopicPartitionStateZNode.path(p), d, v)],  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                    expected_controller_epoch_zk_version)
                result.finished[tp] = lai.with_zk_version(res[-1].version)
            except BadVersionError:
                result.to_retry.append(tp)
            except ControllerMovedException:
                raise
            except Exception as e:
                result.finished[tp] = e
        return result

    # -- topic deletion -----------------------------------------------------------------------

    def create_delete_topic_path(self, topic: str) -> None:
        """Ask the controller to delete `topic`; NodeExistsError if already asked."""
        self.create_recursive(DeleteTopicsTopicZNode.path(topic))

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.path_exists(DeleteTopicsTopicZNode.path(topic))

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.get_children(DeleteTopicsZNode.path()))

    def delete_topic_deletions(self, topics: Iterable[str],
                               expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        for topic in topics:
            self.delete_recursive(DeleteTopicsTopicZNode.path(topic), expected_controller_epoch_zk_version)

    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        self.delete_recursive(TopicZNode.path(topic), expected_controller_epoch_zk_version)

    def delete_topic_configs(self, topics: Iterable[str],
                             expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        for topic in topics:
            self.delete_recursive(ConfigEntityZNode.path(ConfigType.TOPIC, topic), expected_controller_epoch_zk_version)

    def delete_topic_paths(self, topic: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        """What the controller removes once a topic's replicas are gone, in Kafka's order."""
        self.delete_topic_znode(topic, expected_controller_epoch_zk_version)
        self.delete_topic_configs([topic], expected_controller_epoch_zk_version)
        self.delete_topic_deletions([topic], expected_controller_epoch_zk_version)

    # -- dynamic configs ----------------------------------------------------------------------

    def get_entity_configs(self, entity_type: str, sanitized_name: str) -> dict[str, str]:
        got = self.get_data(ConfigEntityZNode.path(entity_type, sanitized_name))
        return {} if got is None else ConfigEntityZNode.decode(got[0])

    def set_or_create_entity_configs(self, entity_type: str, sanitized_name: str, config: Mapping[str, str]) -> None:
        path = ConfigEntityZNode.path(entity_type, sanitized_name)
        data = ConfigEntityZNode.encode(config)
        while True:
            try:
                self.set_data(path, data)
                return
            except NoNodeError:
                try:
                    self.create_recursive(path, data)
                    return
                except NodeExistsError:
                    continue  # created concurrently: overwrite it

    def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        return sorted(self.get_children(ConfigEntityTypeZNode.path(entity_type)))
