"""What the controller needs from ZooKeeper, in the controller's own vocabulary.

The state machines and the controller talk to this narrow Protocol only. `ZkControllerStore`
(zk_store.py) implements it over kafkapy.zk.KafkaZkClient; unit tests implement it in
memory (a fake, not a mock), which keeps the state machines testable without a ZooKeeper.
Every write takes the controller epoch's zk version: ZooKeeper rejects the write if another
controller has bumped /controller_epoch since (Kafka's "zombie controller" fencing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)


@dataclass(frozen=True, slots=True)
class UpdateLeaderAndIsrResult:
    # partition -> the state as written, carrying the new zk version
    successful: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    # zk version conflicts: someone (the partition leader) changed /state since we read it
    to_retry: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, Exception] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    topic_id: str | None
    partitions: dict[int, ReplicaAssignment]


class ControllerZk(Protocol):
    # --- controller election ---
    def get_controller_id(self) -> int | None: ...

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Returns (epoch, epoch zk version); raises ControllerMovedException if another won."""
        ...

    # --- brokers ---
    def get_all_brokers_and_epochs(self) -> dict[int, tuple[Any, int]]:
        """broker id -> (BrokerInfo, broker epoch = czxid of /brokers/ids/<id>, -1 if unknown)."""
        ...

    # --- topics ---
    def get_all_topics(self) -> set[str]: ...

    def get_replica_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]: ...

    def set_topic_id(
        self, topic: str, topic_id: str, assignment: TopicAssignment, epoch_zk_version: int
    ) -> None: ...

    def get_unclean_leader_election_enabled(
        self, topics: Iterable[str], default: bool
    ) -> dict[str, bool]: ...

    # --- partition state ---
    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]: ...

    def create_partition_states(
        self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, Exception | None]: ...

    def update_leader_and_isr(
        self, states: dict[TopicPartition, LeaderAndIsr], controller_epoch: int, epoch_zk_version: int
    ) -> UpdateLeaderAndIsrResult: ...

    # --- admin requests and notifications ---
    def get_topic_deletions(self) -> set[str]: ...

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None: ...

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Remove /brokers/topics/<t> (recursively), /config/topics/<t>, /admin/delete_topics/<t>."""
        ...

    def get_isr_change_notifications(self) -> list[str]: ...

    def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: list[str]
    ) -> set[TopicPartition]: ...

    def delete_isr_change_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        """None deletes them all (on failover)."""
        ...

    def get_log_dir_event_notifications(self) -> list[str]: ...

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: list[str]) -> list[int]: ...

    def delete_log_dir_event_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        """None deletes them all (on failover)."""
        ...

    def get_preferred_replica_election(self) -> set[TopicPartition]: ...

    def delete_preferred_replica_election(self, epoch_zk_version: int) -> None: ...

    # --- partition reassignment ---
    def update_topic_assignment(self, topic: str, assignment: TopicAssignment, epoch_zk_version: int) -> None:
        """Rewrite /brokers/topics/<t> with the full assignment (adding/removing replicas included)."""
        ...

    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]] | None:
        """/admin/reassign_partitions as partition -> target replicas; None if it does not exist."""
        ...

    def set_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None: ...

    def delete_partition_reassignment(self, epoch_zk_version: int) -> None: ...

    # --- watches: the callbacks run on ZooKeeper's thread and must only enqueue events ---
    def watch_children(self, path: str, callback: Callable[[], None]) -> None: ...

    def watch_node(
        self, path: str, callback: Callable[[], None], on_delete: Callable[[], None] | None = None
    ) -> bool:
        """Calls back on creation and data change, and on deletion (`on_delete` if given);
        returns whether the node exists now."""
        ...

    def unwatch(self, path: str) -> None: ...


def cached_or_read_states(
    zk: ControllerZk,
    cache: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
    partitions: Iterable[TopicPartition],
    usable: Callable[[LeaderIsrAndControllerEpoch], bool],
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    """Each partition's cached state where `usable` accepts it, the others read from ZooKeeper.

    Only for a first attempt whose writes are conditional on each state's zk version: a state
    changed since it was cached then fails with BADVERSION, and the retry reads it."""
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    to_read: list[TopicPartition] = []
    for tp in partitions:
        cached = cache.get(tp)
        if cached is not None and usable(cached):
            states[tp] = cached
        else:
            to_read.append(tp)
    if to_read:
        states.update(zk.get_partition_states(to_read))
    return states
