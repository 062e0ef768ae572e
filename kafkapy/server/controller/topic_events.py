"""What the active controller does when topics appear, grow, are deleted, or their ISRs change
(Kafka's TopicChange / PartitionModifications / TopicDeletion / IsrChangeNotification handling).
Called on the event thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import PartitionAndReplica, ReplicaAssignment, TopicPartition
from kafkapy.server.controller.states import PartitionState, ReplicaState
from kafkapy.zk.cluster_znodes import generate_topic_id

if TYPE_CHECKING:
    from kafkapy.server.controller.services import ControllerServices, EventRoutes


class TopicEvents:
    """Topic creation, partition addition, deletion requests and ISR change notifications; also
    the topic watches and assignment loading that failover (BrokerEvents) shares."""

    def __init__(self, services: ControllerServices) -> None:
        self._put = services.put
        self._config = services.config
        self._context = services.context
        self._is_active = services.is_active
        self._log = services.log
        self._partition_state_machine = services.partition_state_machine
        self._replica_state_machine = services.replica_state_machine
        self._send_update_metadata_request = services.send_update_metadata_request
        self._topic_deletion_manager = services.topic_deletion_manager
        self._zk = services.zk

    def register(self, routes: EventRoutes) -> None:
        routes.on(ev.TopicChange, lambda _e: self.process_topic_change())
        routes.on(ev.PartitionModifications, lambda e: self.process_partition_modifications(e.topic))
        routes.on(ev.TopicDeletion, lambda _e: self.process_topic_deletion())
        routes.on(ev.TopicDeletionStopReplicaResponseReceived, self.process_stop_replica_response)
        routes.on(ev.IsrChangeNotification, lambda _e: self.process_isr_change_notification())

    def watch_topic(self, topic: str) -> None:
        self._zk.watch_node(
            f"/brokers/topics/{topic}",
            lambda: self._put(ev.PartitionModifications(topic)),
            on_delete=lambda: None,
        )  # deletion is a TopicChange, seen through the children watch

    def load_assignments(self, topics: Iterable[str]) -> dict[TopicPartition, ReplicaAssignment]:
        """Read topics' assignments into the context, giving an id to topics created without one
        (by pre-2.8 tools), as Kafka 2.8's controller does. Returns what was loaded."""
        loaded: dict[TopicPartition, ReplicaAssignment] = {}
        for topic, assignment in self._zk.get_replica_assignments(topics).items():
            topic_id = assignment.topic_id
            if topic_id is None:
                topic_id = generate_topic_id()
                self._zk.set_topic_id(topic, topic_id, assignment, self._context.epoch_zk_version)
                self._log.info(f"Assigned topic id {topic_id} to topic {topic}")
            self._context.topic_ids[topic] = topic_id
            for partition, replicas in assignment.partitions.items():
                tp = TopicPartition(topic, partition)
                self._context.update_partition_full_replica_assignment(tp, replicas)
                loaded[tp] = replicas
        return loaded

    def on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        self._log.info(f"New partition creation callback for {','.join(map(str, partitions))}")
        replicas = self._context.replicas_for_partitions(partitions)
        self._partition_state_machine.handle_state_changes(partitions, PartitionState.NEW)
        self._replica_state_machine.handle_state_changes(replicas, ReplicaState.NEW)
        self._partition_state_machine.handle_state_changes(
            partitions, PartitionState.ONLINE, ElectionStrategy.OFFLINE
        )
        self._replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE)

    def process_topic_change(self) -> None:
        if not self._is_active():
            return
        ctx = self._context
        topics = self._zk.get_all_topics()
        new_topics = sorted(topics - ctx.all_topics)
        deleted_topics = sorted(ctx.all_topics - topics)
        ctx.set_all_topics(topics)
        for topic in new_topics:
            self.watch_topic(topic)
        for topic in deleted_topics:
            self._zk.unwatch(f"/brokers/topics/{topic}")
            ctx.remove_topic(topic)
        added = self.load_assignments(new_topics)
        self._log.info(
            f"New topics: [{','.join(new_topics)}], deleted topics: [{','.join(deleted_topics)}], "
            f"new partition replica assignment [{len(added)} partitions]"
        )
        if added:
            self.on_new_partition_creation(sorted(added))

    def process_partition_modifications(self, topic: str) -> None:
        if not self._is_active():
            return
        ctx = self._context
        found = self._zk.get_replica_assignments([topic]).get(topic)
        if found is None:
            return  # the topic is gone; TopicChange handles that
        to_add = {
            TopicPartition(topic, p): a
            for p, a in found.partitions.items()
            if not ctx.partition_replica_assignment(TopicPartition(topic, p))
        }
        if self._topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
            if to_add:
                self._log.warning(
                    f"Skipping adding partitions {','.join(map(str, sorted(to_add)))} for topic {topic} "
                    f"since it is currently being deleted"
                )
            return
        if to_add:
            self._log.info(f"New partitions to be added {','.join(map(str, sorted(to_add)))}")
            for tp, assignment in to_add.items():
                ctx.update_partition_full_replica_assignment(tp, assignment)
            self.on_new_partition_creation(sorted(to_add))

    def fetch_topic_deletions_in_progress(self) -> tuple[set[str], set[str]]:
        ctx = self._context
        to_delete = self._zk.get_topic_deletions()
        with_offline_replicas = {
            t
            for t in ctx.all_topics
            if any(not ctx.is_replica_online(r.replica, r.topic_partition) for r in ctx.replicas_for_topic(t))
        }
        self._log.info(f"List of topics to be deleted: {','.join(sorted(to_delete))}")
        self._log.info(f"List of topics ineligible for deletion: {','.join(sorted(with_offline_replicas))}")
        return to_delete, with_offline_replicas

    def process_topic_deletion(self) -> None:
        if not self._is_active():
            return
        ctx = self._context
        to_delete = self._zk.get_topic_deletions()
        self._log.debug(
            f"Delete topics listener fired for topics {','.join(sorted(to_delete))} to be deleted"
        )
        non_existent = to_delete - ctx.all_topics
        if non_existent:
            self._log.warning(
                f"Ignoring request to delete non-existing topics {','.join(sorted(non_existent))}"
            )
            self._zk.delete_topic_deletions(non_existent, ctx.epoch_zk_version)
        to_delete -= non_existent
        if not self._config.delete_topic_enable:
            if to_delete:
                self._log.info(f"Removing {sorted(to_delete)} since delete topic is disabled")
                self._zk.delete_topic_deletions(to_delete, ctx.epoch_zk_version)
            return
        if to_delete:
            self._log.info(f"Starting topic deletion for topics {','.join(sorted(to_delete))}")
            being_reassigned = {tp.topic for tp in ctx.partitions_being_reassigned}
            self._topic_deletion_manager.mark_topic_ineligible_for_deletion(
                to_delete & being_reassigned, "topic reassignment in progress"
            )
            self._topic_deletion_manager.enqueue_topics_for_deletion(to_delete)

    def process_stop_replica_response(self, e: ev.TopicDeletionStopReplicaResponseReceived) -> None:
        if not self._is_active():
            return
        # Only partitions of topics whose deletion is under way matter here (Kafka filters these
        # in the response callback; ours runs off the event thread, so we filter now).
        errors = {
            tp: code
            for tp, code in e.partition_errors.items()
            if self._topic_deletion_manager.is_topic_deletion_in_progress(tp.topic)
        }
        if not errors:
            return
        self._log.debug(
            f"Delete topic callback invoked on StopReplica response received from broker {e.replica_id}: "
            f"request error = {e.request_error}, partition errors = {errors}"
        )
        in_error = {tp for tp, code in errors.items() if e.request_error or code}
        self._topic_deletion_manager.fail_replica_deletion(
            [PartitionAndReplica(tp, e.replica_id) for tp in sorted(in_error)]
        )
        deleted = sorted(set(errors) - in_error)
        if deleted:
            self._topic_deletion_manager.complete_replica_deletion(
                [PartitionAndReplica(tp, e.replica_id) for tp in deleted]
            )

    def process_isr_change_notification(self) -> None:
        if not self._is_active():
            return
        sequence_numbers = self._zk.get_isr_change_notifications()
        try:
            partitions = self._zk.get_partitions_from_isr_change_notifications(sequence_numbers)
            partitions = {tp for tp in partitions if tp.topic in self._context.all_topics}
            if partitions:
                self._context.partition_leadership_info.update(self._zk.get_partition_states(partitions))
                live = self._context.live_or_shutting_down_broker_ids
                self._log.debug(
                    f"Sending MetadataRequest to Brokers: {sorted(live)} for TopicPartitions: {sorted(partitions)}"
                )
                self._send_update_metadata_request(live, sorted(partitions))
        finally:
            # Processed or not, these notifications are consumed: a later one re-reads state anyway.
            self._zk.delete_isr_change_notifications(sequence_numbers, self._context.epoch_zk_version)
