"""ControllerContext: the active controller's picture of the cluster.

Only the controller's event thread reads or writes it (see event_manager.py), so it has no locks.
It is rebuilt from ZooKeeper on every failover and cleared on resignation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kafkapy.protocol.constants import INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
from kafkapy.server.controller.leader_and_isr import (
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from kafkapy.server.controller.states import PartitionState, ReplicaState

_NO_REPLICAS = ReplicaAssignment(())
_NO_PARTITIONS: dict[int, ReplicaAssignment] = {}  # never written to


class ControllerContext:
    def __init__(self) -> None:
        self.epoch = INITIAL_CONTROLLER_EPOCH
        self.epoch_zk_version = INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        # broker id -> the BrokerInfo read from /brokers/ids/<id> (endpoints, rack)
        self.live_brokers: dict[int, Any] = {}
        # broker id -> broker epoch (czxid of its registration znode; -1 when unknown)
        self.live_broker_epochs: dict[int, int] = {}
        self.shutting_down_broker_ids: set[int] = set()
        self.all_topics: set[str] = set()
        self.topic_ids: dict[str, str] = {}
        # topic -> partition -> assignment; nested so per-topic lookups do not scan every partition
        self._assignments: dict[str, dict[int, ReplicaAssignment]] = {}
        self.partition_leadership_info: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.partition_states: dict[TopicPartition, PartitionState] = {}
        self.replica_states: dict[PartitionAndReplica, ReplicaState] = {}
        self.partitions_being_reassigned: set[TopicPartition] = set()
        self.replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}
        self.topics_to_be_deleted: set[str] = set()
        # Topics whose partitions already went Offline -> NonExistent (done once per deletion).
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()

    # --- brokers ---------------------------------------------------------------------------------

    def add_live_brokers(self, brokers_and_epochs: dict[Any, int] | Iterable[tuple[Any, int]]) -> None:
        items = brokers_and_epochs.items() if isinstance(brokers_and_epochs, dict) else brokers_and_epochs
        for broker, epoch in items:
            self.live_brokers[broker.id] = broker
            self.live_broker_epochs[broker.id] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.live_brokers.pop(broker_id, None)
            self.live_broker_epochs.pop(broker_id, None)

    def set_live_brokers(self, brokers_and_epochs: dict[Any, int] | Iterable[tuple[Any, int]]) -> None:
        self.live_brokers.clear()
        self.live_broker_epochs.clear()
        self.add_live_brokers(brokers_and_epochs)

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down_broker_ids

    def is_replica_online(
        self, broker_id: int, partition: TopicPartition, include_shutting_down: bool = False
    ) -> bool:
        # Asked per replica (hundreds of thousands of times on a failover): no sets built here.
        if broker_id not in self.live_brokers:
            return False
        if not include_shutting_down and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self.replicas_on_offline_dirs.get(broker_id)
        return offline is None or partition not in offline

    # --- topics and assignments ------------------------------------------------------------------

    def set_all_topics(self, topics: Iterable[str]) -> None:
        self.all_topics = set(topics)

    def update_partition_full_replica_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        self._assignments.setdefault(tp.topic, {})[tp.partition] = assignment

    def partition_full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        # Asked several times per partition in every state change: the misses share one
        # immutable empty answer rather than building a dict and an assignment per call.
        return self._assignments.get(tp.topic, _NO_PARTITIONS).get(tp.partition, _NO_REPLICAS)

    def partition_replica_assignment(self, tp: TopicPartition) -> tuple[int, ...]:
        return self.partition_full_replica_assignment(tp).replicas

    def partition_assignments_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        return dict(self._assignments.get(topic, {}))

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self._assignments.get(topic, {}))]

    @property
    def all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, parts in self._assignments.items() for p in parts]

    @property
    def partitions_with_leaders(self) -> list[TopicPartition]:
        return [tp for tp in self.partition_leadership_info if tp.topic in self.all_topics]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [
            TopicPartition(t, p)
            for t, parts in self._assignments.items()
            for p, a in parts.items()
            if broker_id in a.replicas
        ]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        wanted = set(broker_ids)
        return [
            PartitionAndReplica(TopicPartition(t, p), r)
            for t, parts in self._assignments.items()
            for p, a in parts.items()
            for r in a.replicas
            if r in wanted
        ]

    def replicas_for_partitions(self, partitions: Iterable[TopicPartition]) -> list[PartitionAndReplica]:
        return [
            PartitionAndReplica(tp, r) for tp in partitions for r in self.partition_replica_assignment(tp)
        ]

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def remove_topic(self, topic: str) -> None:
        """Forget a topic entirely (after deletion, or when its znode vanished)."""
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        partitions = self._assignments.pop(topic, {})
        for p in partitions:
            tp = TopicPartition(topic, p)
            self.partition_leadership_info.pop(tp, None)
            self.partition_states.pop(tp, None)
        for key in [k for k in self.replica_states if k.topic == topic]:
            del self.replica_states[key]
        self.partitions_being_reassigned -= {
            tp for tp in self.partitions_being_reassigned if tp.topic == topic
        }
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    # --- states ----------------------------------------------------------------------------------

    def partitions_in_state(self, state: PartitionState) -> list[TopicPartition]:
        return [tp for tp, s in self.partition_states.items() if s is state]

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionAndReplica]:
        return [r for r, s in self.replica_states.items() if r.topic == topic and s is state]

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(r.topic == topic and s is state for r, s in self.replica_states.items())

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        replicas = self.replicas_for_topic(topic)
        return all(self.replica_states.get(r) is state for r in replicas)

    def replica_state_counts(self) -> dict[ReplicaState, int]:
        counts: dict[ReplicaState, int] = defaultdict(int)
        for state in self.replica_states.values():
            counts[state] += 1
        return counts

    # --- deletion --------------------------------------------------------------------------------

    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(topics)

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self.is_any_replica_in_state(topic, ReplicaState.REPLICA_DELETION_STARTED)

    def reset(self) -> None:
        """Drop everything on resignation; the next failover re-reads ZooKeeper."""
        fresh = ControllerContext()
        self.__dict__.update(fresh.__dict__)
