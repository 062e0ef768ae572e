"""KafkaZkClient: Kafka's data in ZooKeeper, read and written through the znode classes.

Thin on purpose (like Kafka's KafkaZkClient): each method is the znode class's path + encode /
decode around one or a few ZooKeeper calls. Absent znodes read as None or empty collections.
Methods taking `expected_controller_epoch_zk_version` are the controller's writes: with a version
>= 0 they only apply while /controller_epoch still has it, else ControllerMovedException.

One class, as in Kafka, over the I/O of ZkIO, in sections by znode family: cluster and brokers,
the controller, config change and ISR change notifications, admin requests (reassignment,
preferred election), then topics, partition states, topic deletion and entity configs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkapy.protocol.constants import INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
from kafkapy.protocol.errors import (
    ControllerMovedException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from kafkapy.zk.admin_znodes import (
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationSequenceZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)
from kafkapy.zk.cluster_znodes import (
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ControllerEpochZNode,
    ControllerZNode,
    generate_cluster_id,
)
from kafkapy.zk.config_znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ConfigType,
)
from kafkapy.zk.errors import ZkDataError
from kafkapy.zk.topic_znodes import (
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
from kafkapy.zk.zk_data import PERSISTENT_ZK_PATHS
from kafkapy.zk.zk_io import MATCH_ANY_VERSION, TxnOp, ZkIO

log = logging.getLogger(__name__)

__all__ = ["Assignment", "KafkaZkClient", "UpdateLeaderAndIsrResult"]

Assignment = Mapping[int, ReplicaAssignment | Sequence[int]]

# Partitions per transaction in the controller's bulk writes of partition states: a request of
# ~20 KB (a state znode is ~100 bytes; ZooKeeper's jute.maxbuffer is 1 MB), and one request and
# one log entry in ZooKeeper instead of a hundred.
PARTITIONS_PER_TRANSACTION = 100


@dataclass(slots=True)
class UpdateLeaderAndIsrResult:
    """Per partition: the written LeaderAndIsr (with its new zk version) or the error; and the
    partitions whose state changed under us (bad version), to re-read and retry."""

    finished: dict[TopicPartition, LeaderAndIsr | Exception] = field(default_factory=dict)
    to_retry: list[TopicPartition] = field(default_factory=list)


class KafkaZkClient(ZkIO):
    # -- cluster ------------------------------------------------------------------------------

    def create_top_level_paths(self) -> None:
        for path in PERSISTENT_ZK_PATHS:
            self.make_sure_persistent_path_exists(path)

    def get_cluster_id(self) -> str | None:
        got = self.get_data(ClusterIdZNode.path())
        return None if got is None else ClusterIdZNode.decode(got[0])

    def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        existing = self.get_cluster_id()
        if existing is not None:
            return existing
        try:
            self.create_recursive(
                ClusterIdZNode.path(), ClusterIdZNode.encode(proposed or generate_cluster_id())
            )
        except NodeExistsError:
            pass  # another broker won the race: its id is the cluster's
        cluster_id = self.get_cluster_id()
        if cluster_id is None:
            raise ZkDataError(
                "Failed to get cluster id from Zookeeper. This can happen if "
                "/cluster/id is deleted from Zookeeper."
            )
        return cluster_id

    def generate_broker_sequence_id(self) -> int:
        """Bump /brokers/seqid and return its new data version (unique per call)."""
        path = BrokerSequenceIdZNode.path()
        while True:
            try:
                result: int = self.set_data(path, b"").version
                return result
            except NoNodeError:
                self.make_sure_persistent_path_exists(path)

    def generate_broker_id(self, reserved_broker_max_id: int = 1000) -> int:
        """broker.id.generation.enable: ids above reserved.broker.max.id, never reused."""
        return reserved_broker_max_id + self.generate_broker_sequence_id()

    # -- brokers ------------------------------------------------------------------------------

    def register_broker(self, broker: BrokerInfo) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns its czxid, the broker epoch."""
        path = BrokerIdZNode.path(broker.id)
        czxid = self._checked_ephemeral_create(path, BrokerIdZNode.encode(broker))
        log.info(
            "Registered broker %d at path %s with addresses: %s, czxid (broker epoch): %d",
            broker.id,
            path,
            [e.connection_string for e in broker.endpoints],
            czxid,
        )
        return czxid

    def update_broker_info(self, broker: BrokerInfo) -> None:
        self.set_data(BrokerIdZNode.path(broker.id), BrokerIdZNode.encode(broker))

    def _checked_ephemeral_create(self, path: str, data: bytes) -> int:
        """Kafka's CheckedEphemeral: an existing node is fine only if this session owns it (a
        create retried after a connection loss); another session's node is an error."""
        while True:
            try:
                _, stat = self._retry(
                    self._zk.create, path, data, ephemeral=True, makepath=True, include_data=True
                )
                created: int = stat.czxid
                return created
            except NodeExistsError:
                got = self.get_data(path)
                if got is None:
                    continue  # the old owner's session ended meanwhile: try again
                stat = got[1]
                if stat.ephemeralOwner == self.session_id:
                    result: int = stat.czxid
                    return result
                raise NodeExistsError(
                    f"Error while creating ephemeral at {path}, node already exists and owner "
                    f"'{stat.ephemeralOwner}' does not match current session '{self.session_id}'"
                ) from None

    def get_sorted_broker_list(self) -> list[int]:
        return sorted(int(c) for c in self.get_children(BrokerIdsZNode.path()))

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        got = self.get_data(BrokerIdZNode.path(broker_id))
        return None if got is None else BrokerIdZNode.decode(broker_id, got[0])

    def get_all_brokers_in_cluster(self) -> list[BrokerInfo]:
        return [b for b, _ in self.get_all_broker_and_epochs_in_cluster().values()]

    def get_all_broker_and_epochs_in_cluster(self) -> dict[int, tuple[BrokerInfo, int]]:
        """{broker id: (registration, broker epoch = czxid)}, in broker id order."""
        result: dict[int, tuple[BrokerInfo, int]] = {}
        ids = self.get_sorted_broker_list()
        for broker_id, got in zip(ids, self.get_data_many([BrokerIdZNode.path(b) for b in ids]), strict=True):
            if got is not None:  # gone between listing and reading
                result[broker_id] = (BrokerIdZNode.decode(broker_id, got[0]), got[1].czxid)
        return result

    # -- controller ---------------------------------------------------------------------------

    def get_controller_id(self) -> int | None:
        got = self.get_data(ControllerZNode.path())
        return None if got is None else ControllerZNode.decode(got[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zk version of /controller_epoch), or None before the first election."""
        got = self.get_data(ControllerEpochZNode.path())
        return None if got is None else (ControllerEpochZNode.decode(got[0]), got[1].version)

    def register_controller_and_increment_controller_epoch(self, broker_id: int) -> tuple[int, int]:
        """Try to become controller: in one transaction create the ephemeral /controller and bump
        /controller_epoch from the version read. Returns (new epoch, its zk version); raises
        ControllerMovedException if another broker got there first."""
        current = self.get_controller_epoch()
        if current is None:
            current = self._maybe_create_controller_epoch_znode()
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        data = ControllerZNode.encode(broker_id)
        try:
            results = self.multi_fenced(
                [
                    lambda t: t.create(
                        ControllerZNode.path(), data, acl=self.acls(ControllerZNode.path()), ephemeral=True
                    ),
                    lambda t: t.set_data(
                        ControllerEpochZNode.path(), ControllerEpochZNode.encode(new_epoch), epoch_zk_version
                    ),
                ],
                MATCH_ANY_VERSION,
            )
            return new_epoch, results[1].version
        except (NodeExistsError, BadVersionError):
            # Either someone else won, or our own earlier attempt did before a connection loss.
            if self.get_controller_id() == broker_id:
                now = self.get_controller_epoch()
                if now is not None and now[0] == new_epoch:
                    return now
            raise ControllerMovedException(
                "Controller moved to another broker. Aborting controller startup procedure"
            ) from None

    def _maybe_create_controller_epoch_znode(self) -> tuple[int, int]:
        try:
            self.create_recursive(
                ControllerEpochZNode.path(), ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH)
            )
            return INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        except NodeExistsError:
            current = self.get_controller_epoch()
            if current is None:
                raise ZkDataError("/controller_epoch vanished right after it existed") from None
            return current

    def delete_controller(self, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION) -> None:
        """Resign: delete /controller (fenced, so a stale controller cannot remove a new one)."""
        try:
            self.multi_fenced(
                [lambda t: t.delete(ControllerZNode.path())], expected_controller_epoch_zk_version
            )
        except NoNodeError:
            pass

    # -- config change notifications ----------------------------------------------------------

    def create_config_change_notification(self, sanitized_entity_path: str) -> str:
        """Tell every broker that "topics/t" (etc.) changed; returns the sequential znode's path."""
        self.make_sure_persistent_path_exists(ConfigEntityChangeNotificationZNode.path())
        return self.create_recursive(
            ConfigEntityChangeNotificationSequenceZNode.create_path(),
            ConfigEntityChangeNotificationSequenceZNode.encode(sanitized_entity_path),
            sequential=True,
        )

    def get_config_change_notifications(self) -> list[str]:
        """Names of the pending config_change_ znodes, oldest first."""
        return sorted(self.get_children(ConfigEntityChangeNotificationZNode.path()))

    # -- ISR change notifications -------------------------------------------------------------

    def propagate_isr_changes(self, partitions: Iterable[TopicPartition]) -> str:
        return self.create_recursive(
            IsrChangeNotificationSequenceZNode.path(),
            IsrChangeNotificationSequenceZNode.encode(partitions),
            sequential=True,
        )

    def get_all_isr_change_notifications(self) -> list[str]:
        """Sequence numbers of the pending notifications, oldest first."""
        return sorted(
            IsrChangeNotificationSequenceZNode.sequence_number(c)
            for c in self.get_children(IsrChangeNotificationZNode.path())
        )

    def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: Iterable[str]
    ) -> list[TopicPartition]:
        partitions: set[TopicPartition] = set()
        paths = [IsrChangeNotificationSequenceZNode.path(seq) for seq in sequence_numbers]
        for got in self.get_data_many(paths):
            if got is not None:
                partitions |= IsrChangeNotificationSequenceZNode.decode(got[0])
        return sorted(partitions)

    def delete_isr_change_notifications(
        self,
        sequence_numbers: Iterable[str] | None = None,
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None:
        """Delete the given notifications, or all of them."""
        seqs = self.get_all_isr_change_notifications() if sequence_numbers is None else sequence_numbers
        for seq in seqs:
            self.delete_recursive(
                IsrChangeNotificationSequenceZNode.path(seq), expected_controller_epoch_zk_version
            )

    # -- log dir event notifications ------------------------------------------------------------

    def propagate_log_dir_event(self, broker_id: int) -> str:
        """A log dir of `broker_id` failed: the controller sends it LeaderAndIsr to learn which."""
        return self.create_recursive(
            LogDirEventNotificationSequenceZNode.path(),
            LogDirEventNotificationSequenceZNode.encode(broker_id),
            sequential=True,
        )

    def get_all_log_dir_event_notifications(self) -> list[str]:
        """Sequence numbers of the pending notifications, oldest first."""
        return sorted(
            LogDirEventNotificationSequenceZNode.sequence_number(c)
            for c in self.get_children(LogDirEventNotificationZNode.path())
        )

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: Iterable[str]) -> list[int]:
        brokers: set[int] = set()
        for seq in sequence_numbers:
            got = self.get_data(LogDirEventNotificationSequenceZNode.path(seq))
            if (
                got is not None
                and (broker := LogDirEventNotificationSequenceZNode.decode(got[0])) is not None
            ):
                brokers.add(broker)
        return sorted(brokers)

    def delete_log_dir_event_notifications(
        self,
        sequence_numbers: Iterable[str] | None = None,
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None:
        """Delete the given notifications, or all of them."""
        seqs = self.get_all_log_dir_event_notifications() if sequence_numbers is None else sequence_numbers
        for seq in seqs:
            self.delete_recursive(
                LogDirEventNotificationSequenceZNode.path(seq), expected_controller_epoch_zk_version
            )

    # -- reassignment and preferred leader election -------------------------------------------

    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]]:
        got = self.get_data(ReassignPartitionsZNode.path())
        return {} if got is None else ReassignPartitionsZNode.decode(got[0])

    def reassign_partitions_in_progress(self) -> bool:
        return self.path_exists(ReassignPartitionsZNode.path())

    def create_partition_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """NodeExistsError while a reassignment is still running."""
        self.create_recursive(ReassignPartitionsZNode.path(), ReassignPartitionsZNode.encode(reassignment))

    def set_or_create_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None:
        data = ReassignPartitionsZNode.encode(reassignment)
        path = ReassignPartitionsZNode.path()
        try:
            self.multi_fenced([lambda t: t.set_data(path, data)], expected_controller_epoch_zk_version)
        except NoNodeError:
            self.multi_fenced(
                [lambda t: t.create(path, data, acl=self.acls(path))], expected_controller_epoch_zk_version
            )

    def delete_partition_reassignment(
        self, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        self.delete_recursive(ReassignPartitionsZNode.path(), expected_controller_epoch_zk_version)

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        got = self.get_data(PreferredReplicaElectionZNode.path())
        return set() if got is None else PreferredReplicaElectionZNode.decode(got[0])

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """NodeExistsError while an election is still in progress."""
        self.create_recursive(
            PreferredReplicaElectionZNode.path(), PreferredReplicaElectionZNode.encode(partitions)
        )

    def delete_preferred_replica_election(
        self, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        self.delete_recursive(PreferredReplicaElectionZNode.path(), expected_controller_epoch_zk_version)

    # -- topics, partition states, topic deletion, entity configs -------------------------------------------------------------------------------

    def get_all_topics_in_cluster(self) -> set[str]:
        return set(self.get_children(TopicsZNode.path()))

    def topic_exists(self, topic: str) -> bool:
        return self.path_exists(TopicZNode.path(topic))

    def create_topic_assignment(
        self,
        topic: str,
        topic_id: str | None,
        assignment: Assignment,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Configs first, then the assignment: the controller reacts to /brokers/topics/<t>, and
        must find the topic's configs in place when it does (Kafka's AdminZkClient order)."""
        if configs is not None:
            self.set_or_create_entity_configs(ConfigType.TOPIC, topic, configs)
        try:
            self.create_recursive(TopicZNode.path(topic), TopicZNode.encode(topic_id, assignment))
        except NodeExistsError:
            raise TopicExistsException(f"Topic '{topic}' already exists.") from None

    def set_topic_assignment(
        self,
        topic: str,
        assignment: Assignment,
        topic_id: str | None = None,
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None:
        """Replace a topic's assignment (add partitions, reassignment). topic_id None keeps the
        topic's current id: a topic id never changes."""
        if topic_id is None:
            current = self.get_topic_assignment(topic)
            topic_id = current.topic_id if current is not None else None
        data = TopicZNode.encode(topic_id, assignment)
        try:
            self.multi_fenced(
                [lambda t: t.set_data(TopicZNode.path(topic), data)], expected_controller_epoch_zk_version
            )
        except NoNodeError:
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.") from None

    def get_topic_assignment(self, topic: str) -> TopicIdReplicaAssignment | None:
        got = self.get_data(TopicZNode.path(topic))
        return None if got is None else TopicZNode.decode(topic, got[0])

    def get_full_replica_assignment_for_topics(
        self, topics: Iterable[str]
    ) -> dict[str, TopicIdReplicaAssignment]:
        """Topics that do not exist are left out."""
        names = list(topics)
        return {
            topic: TopicZNode.decode(topic, got[0])
            for topic, got in zip(names, self.get_data_many([TopicZNode.path(t) for t in names]), strict=True)
            if got is not None
        }

    def get_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[TopicPartition, list[int]]:
        return {
            TopicPartition(t, p): replicas
            for t, a in self.get_full_replica_assignment_for_topics(topics).items()
            for p, replicas in a.replicas().items()
        }

    def get_partitions_for_topics(self, topics: Iterable[str]) -> dict[str, list[int]]:
        return {
            t: sorted(a.assignment) for t, a in self.get_full_replica_assignment_for_topics(topics).items()
        }

    # -- partition states ---------------------------------------------------------------------

    def get_topic_partition_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        got = self.get_data(TopicPartitionStateZNode.path(tp))
        return None if got is None else TopicPartitionStateZNode.decode(got[0], got[1].version)

    def get_topic_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Partitions without a state znode are left out."""
        tps = list(partitions)
        result = {}
        for tp, got in zip(
            tps, self.get_data_many([TopicPartitionStateZNode.path(tp) for tp in tps]), strict=True
        ):
            state = None if got is None else TopicPartitionStateZNode.decode(got[0], got[1].version)
            if state is not None:
                result[tp] = state
        return result

    def create_topic_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> dict[TopicPartition, Exception | None]:
        """Create each partition's state znode (and its parents); per partition None on success
        or the error (NodeExistsError if it already has a state)."""
        tps = list(states)
        # The topics' /partitions first (pipelined), then each partition's znode and its state
        # together, many partitions to a transaction.
        self.make_sure_persistent_paths_exist(
            [TopicPartitionsZNode.path(t) for t in dict.fromkeys(tp.topic for tp in tps)]
        )
        data = {tp: TopicPartitionStateZNode.encode(states[tp]) for tp in tps}

        def create(path: str, value: bytes = b"") -> TxnOp:
            return lambda t: t.create(path, value, acl=self.acls(path))

        def with_parent(tp: TopicPartition) -> list[TxnOp]:
            return [create(TopicPartitionZNode.path(tp)), create(TopicPartitionStateZNode.path(tp), data[tp])]

        def alone(tp: TopicPartition) -> list[TxnOp]:
            return [create(TopicPartitionStateZNode.path(tp), data[tp])]

        def prepare_alone(partitions: list[TopicPartition]) -> None:
            self.make_sure_persistent_paths_exist([TopicPartitionZNode.path(tp) for tp in partitions])

        outcomes = self._grouped_multi(
            tps, with_parent, alone, prepare_alone, expected_controller_epoch_zk_version
        )
        # per-partition failures are values, not aborts
        return {tp: got if isinstance(got, Exception) else None for tp, got in outcomes.items()}

    def update_leader_and_isr(
        self,
        leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> UpdateLeaderAndIsrResult:
        """Write each new LeaderAndIsr if its state znode is still at the zk version it carries."""
        result = UpdateLeaderAndIsrResult()

        def write(tp: TopicPartition) -> list[TxnOp]:
            lai = leader_and_isrs[tp]
            path = TopicPartitionStateZNode.path(tp)
            data = TopicPartitionStateZNode.encode(LeaderIsrAndControllerEpoch(lai, controller_epoch))
            return [lambda t: t.set_data(path, data, lai.zk_version)]

        outcomes = self._grouped_multi(
            list(leader_and_isrs), write, write, lambda _: None, expected_controller_epoch_zk_version
        )
        for tp, got in outcomes.items():
            if isinstance(got, BadVersionError):
                result.to_retry.append(tp)
            elif isinstance(got, Exception):
                result.finished[tp] = got
            else:
                result.finished[tp] = leader_and_isrs[tp].with_zk_version(got[-1].version)
        return result

    def _grouped_multi(
        self,
        partitions: list[TopicPartition],
        grouped_ops: Callable[[TopicPartition], list[TxnOp]],
        single_ops: Callable[[TopicPartition], list[TxnOp]],
        before_singles: Callable[[list[TopicPartition]], None],
        expected_controller_epoch_zk_version: int,
    ) -> dict[TopicPartition, list[Any] | Exception]:
        """Per partition, its ops' results or its error. The ops of PARTITIONS_PER_TRANSACTION
        partitions go in one transaction, the transactions pipelined: one request, one log
        entry in ZooKeeper for many znodes. A transaction is all or nothing, so one that failed
        (a partition changed meanwhile, a znode already there) is redone partition by
        partition (`single_ops`, after `before_singles`), which gives each its own outcome."""
        groups = [
            partitions[i : i + PARTITIONS_PER_TRANSACTION]
            for i in range(0, len(partitions), PARTITIONS_PER_TRANSACTION)
        ]
        op_lists = [[grouped_ops(tp) for tp in group] for group in groups]
        transactions = [[op for ops in lists for op in ops] for lists in op_lists]
        out: dict[TopicPartition, list[Any] | Exception] = {}
        redo: list[TopicPartition] = []
        for group, lists, got in zip(
            groups,
            op_lists,
            self.multi_fenced_many(transactions, expected_controller_epoch_zk_version),
            strict=True,
        ):
            if isinstance(got, Exception):
                redo.extend(group)
                continue
            at = 0
            for tp, ops in zip(group, lists, strict=True):
                out[tp] = got[at : at + len(ops)]
                at += len(ops)
        if redo:
            before_singles(redo)
            singles = self.multi_fenced_many(
                [single_ops(tp) for tp in redo], expected_controller_epoch_zk_version
            )
            out.update(zip(redo, singles, strict=True))
        return out

    # -- topic deletion -----------------------------------------------------------------------

    def create_delete_topic_path(self, topic: str) -> None:
        """Ask the controller to delete `topic`; NodeExistsError if already asked."""
        self.create_recursive(DeleteTopicsTopicZNode.path(topic))

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.path_exists(DeleteTopicsTopicZNode.path(topic))

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.get_children(DeleteTopicsZNode.path()))

    def delete_topic_deletions(
        self, topics: Iterable[str], expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        for topic in topics:
            self.delete_recursive(DeleteTopicsTopicZNode.path(topic), expected_controller_epoch_zk_version)

    def delete_topic_znode(
        self, topic: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        self.delete_recursive(TopicZNode.path(topic), expected_controller_epoch_zk_version)

    def delete_topic_configs(
        self, topics: Iterable[str], expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        for topic in topics:
            self.delete_recursive(
                ConfigEntityZNode.path(ConfigType.TOPIC, topic), expected_controller_epoch_zk_version
            )

    def delete_topic_paths(
        self, topic: str, expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION
    ) -> None:
        """What the controller removes once a topic's replicas are gone, in Kafka's order."""
        self.delete_topic_znode(topic, expected_controller_epoch_zk_version)
        self.delete_topic_configs([topic], expected_controller_epoch_zk_version)
        self.delete_topic_deletions([topic], expected_controller_epoch_zk_version)

    # -- dynamic configs ----------------------------------------------------------------------

    def get_entity_configs(self, entity_type: str, sanitized_name: str) -> dict[str, str]:
        got = self.get_data(ConfigEntityZNode.path(entity_type, sanitized_name))
        return {} if got is None else ConfigEntityZNode.decode(got[0])

    def get_entity_configs_many(
        self, entity_type: str, sanitized_names: Iterable[str]
    ) -> dict[str, dict[str, str]]:
        """get_entity_configs for many entities at once."""
        names = list(sanitized_names)
        found = self.get_data_many([ConfigEntityZNode.path(entity_type, n) for n in names])
        return {
            n: {} if got is None else ConfigEntityZNode.decode(got[0])
            for n, got in zip(names, found, strict=True)
        }

    def set_or_create_entity_configs(
        self, entity_type: str, sanitized_name: str, config: Mapping[str, str]
    ) -> None:
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
