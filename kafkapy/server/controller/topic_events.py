"""What the active controller does when topics appear, grow, are deleted, or their ISRs change
(Kafka's TopicChange / PartitionModifications / TopicDeletion / IsrChangeNotification handling).
Called on the event thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkapy.server.controller import events as ev
from kafkapy.server.controller.broker_events import load_assignments, register_partition_modifications_handler
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import PartitionAndReplica, TopicPartition
from kafkapy.server.controller.states import PartitionState, ReplicaState

if TYPE_CHECKING:
    from kafkapy.server.controller.kafka_controller import KafkaController


def on_new_partition_creation(c: KafkaController, partitions: list[TopicPartition]) -> None:
    c.log.info(f"New partition creation callback for {','.join(map(str, partitions))}")
    replicas = c.context.replicas_for_partitions(partitions)
    c.partition_state_machine.handle_state_changes(partitions, PartitionState.NEW)
    c.replica_state_machine.handle_state_changes(replicas, ReplicaState.NEW)
    c.partition_state_machine.handle_state_changes(partitions, PartitionState.ONLINE, ElectionStrategy.OFFLINE)
    c.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE)


def process_topic_change(c: KafkaController) -> None:
    if not c.is_active():
        return
    ctx = c.context
    topics = c.zk.get_all_topics()
    new_topics = sorted(topics - ctx.all_topics)
    deleted_topics = sorted(ctx.all_topics - topics)
    ctx.set_all_topics(topics)
    for topic in new_topics:
        register_partition_modifications_handler(c, topic)
    for topic in deleted_topics:
        c.zk.unwatch(f"/brokers/topics/{topic}")
        ctx.remove_topic(topic)
    added = load_assignments(c, new_topics)
    c.log.info(f"New topics: [{','.join(new_topics)}], deleted topics: [{','.join(deleted_topics)}], "
               f"new partition replica assignment [{len(added)} partitions]")
    if added:
        on_new_partition_creation(c, sorted(added))


def process_partition_modifications(c: KafkaController, topic: str) -> None:
    if not c.is_active():
        return
    ctx = c.context
    found = c.zk.get_replica_assignments([topic]).get(topic)
    if found is None:
        return  # the topic is gone; TopicChange handles that
    to_add = {
        TopicPartition(topic, p): a for p, a in found.partitions.items()
        if not ctx.partition_replica_assignment(TopicPartition(topic, p))
    }
    if c.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
        if to_add:
            c.log.warning(f"Skipping adding partitions {','.join(map(str, sorted(to_add)))} for topic {topic} "
                          f"since it is currently being deleted")
        return
    if to_add:
        c.log.info(f"New partitions to be added {','.join(map(str, sorted(to_add)))}")
        for tp, assignment in to_add.items():
            ctx.update_partition_full_replica_assignment(tp, assignment)
        on_new_partition_creation(c, sorted(to_add))


def fetch_topic_deletions_in_progress(c: KafkaController) -> tuple[set[str], set[str]]:
    ctx = c.context
    to_delete = c.zk.get_topic_deletions()
    with_offline_replicas = {
        t for t in ctx.all_topics
        if any(not ctx.is_replica_online(r.replica, r.topic_partition) for r in ctx.replicas_for_topic(t))
    }
    c.log.info(f"List of topics to be deleted: {','.join(sorted(to_delete))}")
    c.log.info(f"List of topics ineligible for deletion: {','.join(sorted(with_offline_replicas))}")
    return to_delete, with_offline_replicas


def process_topic_deletion(c: KafkaController) -> None:
    if not c.is_active():
        return
    ctx = c.context
    to_delete = c.zk.get_topic_deletions()
    c.log.debug(f"Delete topics listener fired for topics {','.join(sorted(to_delete))} to be deleted")
    non_existent = to_delete - ctx.all_topics
    if non_existent:
        c.log.warning(f"Ignoring request to delete non-existing topics {','.join(sorted(non_existent))}")
        c.zk.delete_topic_deletions(non_existent, ctx.epoch_zk_version)
    to_delete -= non_existent
    if not c.config.delete_topic_enable:
        if to_delete:
            c.log.info(f"Removing {sorted(to_delete)} since delete topic is disabled")
            c.zk.delete_topic_deletions(to_delete, ctx.epoch_zk_version)
        return
    if to_delete:
        c.log.info(f"Starting topic deletion for topics {','.join(sorted(to_delete))}")
        being_reassigned = {tp.topic for tp in ctx.partitions_being_reassigned}
        c.topic_deletion_manager.mark_topic_ineligible_for_deletion(
            to_delete & being_reassigned, "topic reassignment in progress")
        c.topic_deletion_manager.enqueue_topics_for_deletion(to_delete)


def process_stop_replica_response(c: KafkaController, e: ev.TopicDeletionStopReplicaResponseReceived) -> None:
    if not c.is_active():
        return
    # Only partitions of topics whose deletion is under way matter here (Kafka filters these
    # in the response callback; ours runs off the event thread, so we filter now).
    errors = {tp: code for tp, code in e.partition_errors.items()
              if c.topic_deletion_manager.is_topic_deletion_in_progress(tp.topic)}
    if not errors:
        return
    c.log.debug(f"Delete topic callback invoked on StopReplica response received from broker {e.replica_id}: "
                f"request error = {e.request_error}, partition errors = {errors}")
    in_error = {tp for tp, code in errors.items() if e.request_error or code}
    c.topic_deletion_manager.fail_replica_deletion([PartitionAndReplica(tp, e.replica_id) for tp in sorted(in_error)])
    deleted = sorted(set(errors) - in_error)
    if deleted:
        c.topic_deletion_manager.complete_replica_deletion([PartitionAndReplica(tp, e.replica_id) for tp in deleted])


def process_isr_change_notification(c: KafkaController) -> None:
    if not c.is_active():
        return
    sequence_numbers = c.zk.get_isr_change_notifications()
    try:
        partitions = c.zk.get_partitions_from_isr_change_notifications(sequence_numbers)
        partitions = {tp for tp in partitions if tp.topic in c.context.all_topics}
        if partitions:
            c.context.partition_leadership_info.update(c.zk.get_partition_states(partitions))
            live = c.context.live_or_shutting_down_broker_ids
            c.log.debug(f"Sending MetadataRequest to Brokers: {sorted(live)} for TopicPartitions: {sorted(partitions)}")
            c.send_update_metadata_request(live, sorted(partitions))
    finally:
        # Processed or not, these notifications are consumed: a later one re-reads state anyway.
        c.zk.delete_isr_change_notifications(sequence_numbers, c.context.epoch_zk_version)
