"""ZkControllerStore: the controller's ZooKeeper needs (zk_interface.ControllerZk) over
kafkapy.zk.KafkaZkClient. Pure delegation plus shape conversion; no decisions here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from kafkapy.server.controller.zk_interface import TopicAssignment, UpdateLeaderAndIsrResult
from kafkapy.zk.config_znodes import ConfigType
from kafkapy.zk.watchers import ZNodeChangeHandler, ZNodeChildChangeHandler

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


class _NodeHandler(ZNodeChangeHandler):
    def __init__(self, path: str, callback: Callable[[], None], on_delete: Callable[[], None] | None) -> None:
        super().__init__(path)
        self._callback = callback
        self._on_delete = on_delete or callback

    def handle_creation(self) -> None:
        self._callback()

    def handle_deletion(self) -> None:
        self._on_delete()

    def handle_data_change(self) -> None:
        self._callback()


class _ChildHandler(ZNodeChildChangeHandler):
    def __init__(self, path: str, callback: Callable[[], None]) -> None:
        super().__init__(path)
        self._callback = callback

    def handle_child_change(self) -> None:
        self._callback()


class ZkControllerStore:
    def __init__(self, zk_client: Any) -> None:
        self.client = zk_client
        # path -> "node" | "child", so unwatch knows which registry to use.
        self._watched: dict[str, str] = {}

    # --- controller election ---

    def get_controller_id(self) -> int | None:
        result: int | None = self.client.get_controller_id()
        return result

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        return tuple(self.client.register_controller_and_increment_controller_epoch(broker_id))

    def delete_controller(self, epoch_zk_version: int) -> None:
        self.client.delete_controller(epoch_zk_version)

    # --- brokers ---

    def get_all_brokers_and_epochs(self) -> dict[int, tuple[Any, int]]:
        return dict(self.client.get_all_broker_and_epochs_in_cluster())

    # --- topics ---

    def get_all_topics(self) -> set[str]:
        return set(self.client.get_all_topics_in_cluster())

    def get_replica_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        found = self.client.get_full_replica_assignment_for_topics(list(topics))
        return {t: TopicAssignment(a.topic_id, dict(a.assignment)) for t, a in found.items()}

    def set_topic_id(
        self, topic: str, topic_id: str, assignment: TopicAssignment, epoch_zk_version: int
    ) -> None:
        self.client.set_topic_assignment(topic, assignment.partitions, topic_id, epoch_zk_version)

    def get_unclean_leader_election_enabled(self, topics: Iterable[str], default: bool) -> dict[str, bool]:
        result = {}
        for topic, configs in self.client.get_entity_configs_many(ConfigType.TOPIC, topics).items():
            value = configs.get(UNCLEAN_LEADER_ELECTION_ENABLE)
            result[topic] = default if value is None else str(value).strip().lower() == "true"
        return result

    # --- partition state ---

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return dict(self.client.get_topic_partition_states(list(partitions)))

    def create_partition_states(
        self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, Exception | None]:
        return dict(self.client.create_topic_partition_states(states, epoch_zk_version))

    def update_leader_and_isr(
        self, states: dict[TopicPartition, LeaderAndIsr], controller_epoch: int, epoch_zk_version: int
    ) -> UpdateLeaderAndIsrResult:
        raw = self.client.update_leader_and_isr(states, controller_epoch, epoch_zk_version)
        ok = {tp: v for tp, v in raw.finished.items() if not isinstance(v, Exception)}
        failed = {tp: v for tp, v in raw.finished.items() if isinstance(v, Exception)}
        return UpdateLeaderAndIsrResult(ok, list(raw.to_retry), failed)

    # --- admin requests and notifications ---

    def get_topic_deletions(self) -> set[str]:
        return set(self.client.get_topic_deletions())

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        self.client.delete_topic_deletions(list(topics), epoch_zk_version)

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self.client.delete_topic_paths(topic, epoch_zk_version)

    def get_isr_change_notifications(self) -> list[str]:
        return list(self.client.get_all_isr_change_notifications())

    def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: list[str]
    ) -> set[TopicPartition]:
        return set(self.client.get_partitions_from_isr_change_notifications(sequence_numbers))

    def delete_isr_change_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        self.client.delete_isr_change_notifications(sequence_numbers, epoch_zk_version)

    def get_log_dir_event_notifications(self) -> list[str]:
        return list(self.client.get_all_log_dir_event_notifications())

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: list[str]) -> list[int]:
        return list(self.client.get_broker_ids_from_log_dir_events(sequence_numbers))

    def delete_log_dir_event_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        self.client.delete_log_dir_event_notifications(sequence_numbers, epoch_zk_version)

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        return set(self.client.get_preferred_replica_election())

    def delete_preferred_replica_election(self, epoch_zk_version: int) -> None:
        self.client.delete_preferred_replica_election(epoch_zk_version)

    # --- partition reassignment ---

    def update_topic_assignment(self, topic: str, assignment: TopicAssignment, epoch_zk_version: int) -> None:
        self.client.set_topic_assignment(topic, assignment.partitions, assignment.topic_id, epoch_zk_version)

    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]] | None:
        if not self.client.reassign_partitions_in_progress():
            return None
        return dict(self.client.get_partition_reassignment())

    def set_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None:
        self.client.set_or_create_partition_reassignment(reassignment, epoch_zk_version)

    def delete_partition_reassignment(self, epoch_zk_version: int) -> None:
        self.client.delete_partition_reassignment(epoch_zk_version)

    # --- watches ---

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        self._watched[path] = "child"
        self.client.register_znode_child_change_handler(_ChildHandler(path, callback))

    def watch_node(
        self, path: str, callback: Callable[[], None], on_delete: Callable[[], None] | None = None
    ) -> bool:
        self._watched[path] = "node"
        handler = _NodeHandler(path, callback, on_delete)
        return bool(self.client.register_znode_change_handler_and_check_existence(handler))

    def unwatch(self, path: str) -> None:
        kind = self._watched.pop(path, None)
        if kind == "child":
            self.client.unregister_znode_child_change_handler(path)
        elif kind == "node":
            self.client.unregister_znode_change_handler(path)
