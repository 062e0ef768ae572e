"""What the active controller does when brokers come, go, change or ask to shut down
(Kafka's onBrokerStartup / onBrokerFailure / doControlledShutdown). Called on the event thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkapy.protocol.errors import (
    BrokerNotAvailableException,
    ControllerMovedException,
    StaleBrokerEpochException,
)
from kafkapy.server.controller import events as ev
from kafkapy.server.controller import reassignment
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import PartitionAndReplica, ReplicaAssignment, TopicPartition
from kafkapy.server.controller.state_change_log import StateChangeLogger
from kafkapy.server.controller.states import PartitionState, ReplicaState
from kafkapy.server.zk.cluster_znodes import generate_topic_id

if TYPE_CHECKING:
    from kafkapy.server.controller.kafka_controller import KafkaController

KAFKA_STORAGE_ERROR = 56
UNKNOWN_BROKER_EPOCH = -1


def _watch_broker(c: KafkaController, broker_id: int) -> None:
    c.zk.watch_node(f"/brokers/ids/{broker_id}", lambda: c.put(ev.BrokerModifications(broker_id)),
                    on_delete=lambda: None)  # deletion is a BrokerChange, seen through the children watch


def initialize_controller_context(c: KafkaController) -> None:
    ctx = c.context
    brokers = c.zk.get_all_brokers_and_epochs()
    ctx.set_live_brokers([(info, epoch) for info, epoch in brokers.values()])
    ctx.set_all_topics(c.zk.get_all_topics())
    for topic in ctx.all_topics:
        register_partition_modifications_handler(c, topic)
    load_assignments(c, ctx.all_topics)
    ctx.partition_leadership_info.clear()
    ctx.shutting_down_broker_ids.clear()
    for broker_id in ctx.live_or_shutting_down_broker_ids:
        _watch_broker(c, broker_id)
    ctx.partition_leadership_info.update(c.zk.get_partition_states(ctx.all_partitions))
    c.channel_manager.startup(list(ctx.live_brokers.values()))
    c.log.info(f"Currently active brokers in the cluster: {sorted(ctx.live_broker_ids)}")
    c.log.info(f"Currently shutting brokers in the cluster: {sorted(ctx.shutting_down_broker_ids)}")
    c.log.info(f"Current list of topics in the cluster: {sorted(ctx.all_topics)}")


def register_partition_modifications_handler(c: KafkaController, topic: str) -> None:
    c.zk.watch_node(f"/brokers/topics/{topic}", lambda: c.put(ev.PartitionModifications(topic)),
                    on_delete=lambda: None)  # deletion is a TopicChange, seen through the children watch


def load_assignments(c: KafkaController, topics: Any) -> dict[TopicPartition, ReplicaAssignment]:
    """Read topics' assignments into the context, giving an id to topics created without one
    (by pre-2.8 tools), as Kafka 2.8's controller does. Returns what was loaded."""
    loaded: dict[TopicPartition, ReplicaAssignment] = {}
    for topic, assignment in c.zk.get_replica_assignments(topics).items():
        topic_id = assignment.topic_id
        if topic_id is None:
            topic_id = generate_topic_id()
            c.zk.set_topic_id(topic, topic_id, assignment, c.context.epoch_zk_version)
            c.log.info(f"Assigned topic id {topic_id} to topic {topic}")
        c.context.topic_ids[topic] = topic_id
        for partition, replicas in assignment.partitions.items():
            tp = TopicPartition(topic, partition)
            c.context.update_partition_full_replica_assignment(tp, replicas)
            loaded[tp] = replicas
    return loaded


def process_broker_change(c: KafkaController) -> None:
    if not c.is_active():
        return
    ctx = c.context
    current = c.zk.get_all_brokers_and_epochs()
    known = ctx.live_or_shutting_down_broker_ids
    new = sorted(set(current) - known)
    dead = sorted(known - set(current))
    # Same id, newer registration: the broker restarted faster than its old session expired.
    bounced = sorted(b for b in set(current) & known if current[b][1] > ctx.live_broker_epochs.get(b, -1))
    c.log.info(f"Newly added brokers: {','.join(map(str, new))}, deleted brokers: {','.join(map(str, dead))}, "
               f"bounced brokers: {','.join(map(str, bounced))}, all live brokers: {','.join(map(str, sorted(current)))}")
    for b in new:
        c.channel_manager.add_broker(current[b][0])
    for b in bounced:
        c.channel_manager.remove_broker(b)
        c.channel_manager.add_broker(current[b][0])
    for b in dead:
        c.channel_manager.remove_broker(b)
    if new:
        ctx.add_live_brokers([current[b] for b in new])
        on_broker_startup(c, new)
    if bounced:
        ctx.remove_live_brokers(bounced)
        on_broker_failure(c, bounced)
        ctx.add_live_brokers([current[b] for b in bounced])
        on_broker_startup(c, bounced)
    if dead:
        ctx.remove_live_brokers(dead)
        on_broker_failure(c, dead)
    if new or dead or bounced:
        c.log.info(f"Updated broker epochs cache: {ctx.live_broker_epochs}")


def process_broker_modification(c: KafkaController, broker_id: int) -> None:
    """A live broker rewrote its registration (new endpoints): everyone needs its new address."""
    if not c.is_active():
        return
    current = c.zk.get_all_brokers_and_epochs().get(broker_id)
    old = c.context.live_brokers.get(broker_id)
    if current is None or old is None or current[0] == old:
        return
    c.log.info(f"Updated broker {broker_id}: {current[0]}")
    c.context.add_live_brokers([current])
    c.channel_manager.remove_broker(broker_id)
    c.channel_manager.add_broker(current[0])
    c.send_update_metadata_request(c.context.live_or_shutting_down_broker_ids, [])


def on_broker_startup(c: KafkaController, new_brokers: list[int]) -> None:
    ctx = c.context
    c.log.info(f"New broker startup callback for {','.join(map(str, new_brokers))}")
    for b in new_brokers:
        ctx.replicas_on_offline_dirs.pop(b, None)
    existing = ctx.live_or_shutting_down_broker_ids - set(new_brokers)
    # Existing brokers only need the new broker list; new ones need every partition's state.
    c.send_update_metadata_request(existing, [])
    c.send_update_metadata_request(new_brokers, ctx.partitions_with_leaders)
    replicas = ctx.replicas_on_brokers(new_brokers)
    to_online = [r for r in replicas if not ctx.is_topic_queued_up_for_deletion(r.topic)]
    c.replica_state_machine.handle_state_changes(to_online, ReplicaState.ONLINE)
    c.partition_state_machine.trigger_online_partition_state_change()
    reassignment.resume_for_new_brokers(c, new_brokers)
    deleting = {r.topic for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic)}
    if deleting:
        c.log.info(f"Some replicas {','.join(sorted(deleting))} for topics scheduled for deletion are on the newly "
                   f"restarted brokers. Signaling restart of topic deletion for these topics")
        c.topic_deletion_manager.resume_deletion_for_topics(deleting)
    for b in new_brokers:
        _watch_broker(c, b)


def on_broker_failure(c: KafkaController, dead_brokers: list[int]) -> None:
    ctx = c.context
    c.log.info(f"Broker failure callback for {','.join(map(str, dead_brokers))}")
    for b in dead_brokers:
        ctx.replicas_on_offline_dirs.pop(b, None)
        c.zk.unwatch(f"/brokers/ids/{b}")
    shutting_down = ctx.shutting_down_broker_ids & set(dead_brokers)
    ctx.shutting_down_broker_ids -= set(dead_brokers)
    if shutting_down:
        c.log.info(f"Removed {sorted(shutting_down)} from list of shutting down brokers.")
    on_replicas_become_offline(c, ctx.replicas_on_brokers(dead_brokers))


def on_replicas_become_offline(c: KafkaController, replicas: list[PartitionAndReplica]) -> None:
    ctx = c.context
    for_deletion = [r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic)]
    not_for_deletion = [r for r in replicas if not ctx.is_topic_queued_up_for_deletion(r.topic)]
    offline_leader = [
        tp for tp, info in ctx.partition_leadership_info.items()
        if not ctx.is_replica_online(info.leader_and_isr.leader, tp) and not ctx.is_topic_queued_up_for_deletion(tp.topic)
    ]
    c.partition_state_machine.handle_state_changes(offline_leader, PartitionState.OFFLINE)
    c.partition_state_machine.trigger_online_partition_state_change()
    c.replica_state_machine.handle_state_changes(not_for_deletion, ReplicaState.OFFLINE)
    if for_deletion:
        c.topic_deletion_manager.fail_replica_deletion(for_deletion)
    # Leader changes above already told every broker; otherwise they still need the broker list.
    if not offline_leader:
        c.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, [])


def process_log_dir_event_notification(c: KafkaController) -> None:
    """A broker wrote /log_dir_event_notification: one of its log dirs failed. LeaderAndIsr for every
    replica it hosts makes it say which ones are offline (KAFKA_STORAGE_ERROR in the response)."""
    if not c.is_active():
        return
    sequence_numbers = c.zk.get_log_dir_event_notifications()
    if not sequence_numbers:  # the watch fires again when the notifications are deleted
        return
    try:
        broker_ids = c.zk.get_broker_ids_from_log_dir_events(sequence_numbers)
        on_broker_log_dir_failure(c, broker_ids)
    finally:
        c.zk.delete_log_dir_event_notifications(sequence_numbers, c.context.epoch_zk_version)


def on_broker_log_dir_failure(c: KafkaController, broker_ids: list[int]) -> None:
    c.log.info(f"Handling log directory failure for brokers {','.join(map(str, broker_ids))}")
    replicas = c.context.replicas_on_brokers(broker_ids)
    c.replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE)


def process_leader_and_isr_response(c: KafkaController, e: ev.LeaderAndIsrResponseReceived) -> None:
    if not c.is_active():
        return
    log = StateChangeLogger(c.broker_id, c.context.epoch)
    if e.error_code:
        log.error(f"Received error {e.error_code} in LeaderAndIsr response from broker {e.broker_id}")
        return
    offline = {tp for tp, code in e.partition_errors.items() if code == KAFKA_STORAGE_ERROR}
    online = {tp for tp, code in e.partition_errors.items() if code == 0}
    previous = c.context.replicas_on_offline_dirs.get(e.broker_id, set())
    current = (previous - online) | offline
    c.context.replicas_on_offline_dirs[e.broker_id] = current
    newly_offline = current - previous
    if newly_offline:
        log.info(f"Mark replicas {','.join(map(str, sorted(newly_offline)))} on broker {e.broker_id} as offline")
        on_replicas_become_offline(c, [PartitionAndReplica(tp, e.broker_id) for tp in sorted(newly_offline)])


def process_controlled_shutdown(c: KafkaController, e: ev.ControlledShutdown) -> None:
    try:
        result = do_controlled_shutdown(c, e.broker_id, e.broker_epoch)
    except Exception as exc:  # noqa: BLE001 - the error goes back to the requesting broker
        e.future.set_exception(exc)
    else:
        e.future.set_result(result)


def do_controlled_shutdown(c: KafkaController, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
    ctx = c.context
    if not c.is_active():
        raise ControllerMovedException("Controller moved to another broker. Aborting controlled shutdown")
    if broker_epoch != UNKNOWN_BROKER_EPOCH:
        cached = ctx.live_broker_epochs.get(broker_id, UNKNOWN_BROKER_EPOCH)
        if broker_epoch < cached:
            raise StaleBrokerEpochException(
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                f"{broker_id}. Current broker epoch is {cached}.")
    c.log.info(f"Shutting down broker {broker_id}")
    if broker_id not in ctx.live_or_shutting_down_broker_ids:
        raise BrokerNotAvailableException(f"Broker id {broker_id} does not exist.")
    ctx.shutting_down_broker_ids.add(broker_id)
    c.log.debug(f"All shutting down brokers: {sorted(ctx.shutting_down_broker_ids)}")
    c.log.debug(f"Live brokers: {sorted(ctx.live_broker_ids)}")
    # Single-replica partitions cannot move anywhere; they go offline with the broker.
    to_act_on = [
        tp for tp in ctx.partitions_on_broker(broker_id)
        if len(ctx.partition_replica_assignment(tp)) > 1
        and tp in ctx.partition_leadership_info
        and not ctx.is_topic_queued_up_for_deletion(tp.topic)
    ]
    led = [tp for tp in to_act_on if ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id]
    followed = [tp for tp in to_act_on if tp not in set(led)]
    c.partition_state_machine.handle_state_changes(led, PartitionState.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN)
    try:
        c.batch.new_batch()
        for tp in followed:
            c.batch.add_stop_replica_request_for_brokers([broker_id], tp, delete_partition=False)
        c.batch.send_requests_to_brokers(ctx.epoch)
    except Exception as exc:  # noqa: BLE001
        c.log.error("Error sending StopReplica for controlled shutdown", exc)
        c.batch.clear()
    # Followers leave the ISR now, so the leaders stop waiting for them (acks=all).
    c.replica_state_machine.handle_state_changes(
        [PartitionAndReplica(tp, broker_id) for tp in followed], ReplicaState.OFFLINE)
    remaining = {
        tp for tp in ctx.partitions_on_broker(broker_id)
        if tp in ctx.partition_leadership_info
        and ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id
        and len(ctx.partition_replica_assignment(tp)) > 1
    }
    c.log.debug(f"Broker {broker_id} leaves {len(remaining)} partitions: {sorted(remaining)}")
    return remaining
