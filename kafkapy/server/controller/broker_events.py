"""What the active controller does when brokers come, go, change or ask to shut down
(Kafka's onBrokerStartup / onBrokerFailure / doControlledShutdown). Called on the event thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkapy.protocol.constants import UNKNOWN_BROKER_EPOCH
from kafkapy.protocol.errors import (
    BrokerNotAvailableException,
    ControllerMovedException,
    KafkaStorageException,
    StaleBrokerEpochException,
)
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import PartitionAndReplica, TopicPartition
from kafkapy.server.controller.state_change_log import StateChangeLogger
from kafkapy.server.controller.states import PartitionState, ReplicaState

if TYPE_CHECKING:
    from kafkapy.server.controller.reassignment import PartitionReassignments
    from kafkapy.server.controller.services import ControllerServices, EventRoutes
    from kafkapy.server.controller.topic_events import TopicEvents

KAFKA_STORAGE_ERROR = KafkaStorageException.code


class BrokerEvents:
    """Broker registrations, LeaderAndIsr answers (replicas on failed log dirs) and controlled
    shutdown; `initialize_controller_context` reads the cluster on failover."""

    def __init__(
        self, services: ControllerServices, topics: TopicEvents, reassignments: PartitionReassignments
    ) -> None:
        self._topics = topics
        self._reassignments = reassignments
        self._batch = services.batch
        self._broker_id = services.broker_id
        self._channel_manager = services.channel_manager
        self._context = services.context
        self._is_active = services.is_active
        self._log = services.log
        self._partition_state_machine = services.partition_state_machine
        self._put = services.put
        self._replica_state_machine = services.replica_state_machine
        self._send_update_metadata_request = services.send_update_metadata_request
        self._topic_deletion_manager = services.topic_deletion_manager
        self._zk = services.zk

    def register(self, routes: EventRoutes) -> None:
        routes.on(ev.BrokerChange, lambda _e: self.process_broker_change())
        routes.on(ev.BrokerModifications, lambda e: self.process_broker_modification(e.broker_id))
        routes.on(ev.ControlledShutdown, self.process_controlled_shutdown)
        routes.on(ev.LeaderAndIsrResponseReceived, self.process_leader_and_isr_response)
        routes.on(ev.LogDirEventNotification, lambda _e: self.process_log_dir_event_notification())

    def _watch_broker(self, broker_id: int) -> None:
        self._zk.watch_node(
            f"/brokers/ids/{broker_id}",
            lambda: self._put(ev.BrokerModifications(broker_id)),
            on_delete=lambda: None,
        )  # deletion is a BrokerChange, seen through the children watch

    def initialize_controller_context(self) -> None:
        ctx = self._context
        brokers = self._zk.get_all_brokers_and_epochs()
        ctx.set_live_brokers([(info, epoch) for info, epoch in brokers.values()])
        ctx.set_all_topics(self._zk.get_all_topics())
        for topic in ctx.all_topics:
            self._topics.watch_topic(topic)
        self._topics.load_assignments(ctx.all_topics)
        ctx.partition_leadership_info.clear()
        ctx.shutting_down_broker_ids.clear()
        for broker_id in ctx.live_or_shutting_down_broker_ids:
            self._watch_broker(broker_id)
        ctx.partition_leadership_info.update(self._zk.get_partition_states(ctx.all_partitions))
        self._channel_manager.startup(list(ctx.live_brokers.values()))
        self._log.info(f"Currently active brokers in the cluster: {sorted(ctx.live_broker_ids)}")
        self._log.info(f"Currently shutting brokers in the cluster: {sorted(ctx.shutting_down_broker_ids)}")
        self._log.info(f"Current list of topics in the cluster: {sorted(ctx.all_topics)}")

    def process_broker_change(self) -> None:
        if not self._is_active():
            return
        ctx = self._context
        current = self._zk.get_all_brokers_and_epochs()
        known = ctx.live_or_shutting_down_broker_ids
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        # Same id, newer registration: the broker restarted faster than its old session expired.
        bounced = sorted(b for b in set(current) & known if current[b][1] > ctx.live_broker_epochs.get(b, -1))
        self._log.info(
            f"Newly added brokers: {','.join(map(str, new))}, deleted brokers: {','.join(map(str, dead))}, "
            f"bounced brokers: {','.join(map(str, bounced))}, all live brokers: {','.join(map(str, sorted(current)))}"
        )
        for b in new:
            self._channel_manager.add_broker(current[b][0])
        for b in bounced:
            self._channel_manager.remove_broker(b)
            self._channel_manager.add_broker(current[b][0])
        for b in dead:
            self._channel_manager.remove_broker(b)
        if new:
            ctx.add_live_brokers([current[b] for b in new])
            self.on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            self.on_broker_failure(bounced)
            ctx.add_live_brokers([current[b] for b in bounced])
            self.on_broker_startup(bounced)
        if dead:
            ctx.remove_live_brokers(dead)
            self.on_broker_failure(dead)
        if new or dead or bounced:
            self._log.info(f"Updated broker epochs cache: {ctx.live_broker_epochs}")

    def process_broker_modification(self, broker_id: int) -> None:
        """A live broker rewrote its registration (new endpoints): everyone needs its new address."""
        if not self._is_active():
            return
        current = self._zk.get_all_brokers_and_epochs().get(broker_id)
        old = self._context.live_brokers.get(broker_id)
        if current is None or old is None or current[0] == old:
            return
        self._log.info(f"Updated broker {broker_id}: {current[0]}")
        self._context.add_live_brokers([current])
        self._channel_manager.remove_broker(broker_id)
        self._channel_manager.add_broker(current[0])
        self._send_update_metadata_request(self._context.live_or_shutting_down_broker_ids, [])

    def on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self._context
        self._log.info(f"New broker startup callback for {','.join(map(str, new_brokers))}")
        for b in new_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        existing = ctx.live_or_shutting_down_broker_ids - set(new_brokers)
        # Existing brokers only need the new broker list; new ones need every partition's state.
        self._send_update_metadata_request(existing, [])
        self._send_update_metadata_request(new_brokers, ctx.partitions_with_leaders)
        replicas = ctx.replicas_on_brokers(new_brokers)
        to_online = [r for r in replicas if not ctx.is_topic_queued_up_for_deletion(r.topic)]
        self._replica_state_machine.handle_state_changes(to_online, ReplicaState.ONLINE)
        self._partition_state_machine.trigger_online_partition_state_change()
        self._reassignments.resume_for_new_brokers(new_brokers)
        deleting = {r.topic for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic)}
        if deleting:
            self._log.info(
                f"Some replicas {','.join(sorted(deleting))} for topics scheduled for deletion are on the newly "
                f"restarted brokers. Signaling restart of topic deletion for these topics"
            )
            self._topic_deletion_manager.resume_deletion_for_topics(deleting)
        for b in new_brokers:
            self._watch_broker(b)

    def on_broker_failure(self, dead_brokers: list[int]) -> None:
        ctx = self._context
        self._log.info(f"Broker failure callback for {','.join(map(str, dead_brokers))}")
        for b in dead_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
            self._zk.unwatch(f"/brokers/ids/{b}")
        shutting_down = ctx.shutting_down_broker_ids & set(dead_brokers)
        ctx.shutting_down_broker_ids -= set(dead_brokers)
        if shutting_down:
            self._log.info(f"Removed {sorted(shutting_down)} from list of shutting down brokers.")
        self.on_replicas_become_offline(ctx.replicas_on_brokers(dead_brokers))

    def on_replicas_become_offline(self, replicas: list[PartitionAndReplica]) -> None:
        ctx = self._context
        for_deletion = [r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic)]
        not_for_deletion = [r for r in replicas if not ctx.is_topic_queued_up_for_deletion(r.topic)]
        offline_leader = [
            tp
            for tp, info in ctx.partition_leadership_info.items()
            if not ctx.is_replica_online(info.leader_and_isr.leader, tp)
            and not ctx.is_topic_queued_up_for_deletion(tp.topic)
        ]
        self._partition_state_machine.handle_state_changes(offline_leader, PartitionState.OFFLINE)
        self._partition_state_machine.trigger_online_partition_state_change()
        self._replica_state_machine.handle_state_changes(not_for_deletion, ReplicaState.OFFLINE)
        if for_deletion:
            self._topic_deletion_manager.fail_replica_deletion(for_deletion)
        # Leader changes above already told every broker; otherwise they still need the broker list.
        if not offline_leader:
            self._send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, [])

    def process_log_dir_event_notification(self) -> None:
        """A broker wrote /log_dir_event_notification: one of its log dirs failed. LeaderAndIsr for
        every replica it hosts makes it say which ones are offline (KAFKA_STORAGE_ERROR in the response)."""
        if not self._is_active():
            return
        sequence_numbers = self._zk.get_log_dir_event_notifications()
        if not sequence_numbers:  # the watch fires again when the notifications are deleted
            return
        try:
            broker_ids = self._zk.get_broker_ids_from_log_dir_events(sequence_numbers)
            self.on_broker_log_dir_failure(broker_ids)
        finally:
            self._zk.delete_log_dir_event_notifications(sequence_numbers, self._context.epoch_zk_version)

    def on_broker_log_dir_failure(self, broker_ids: list[int]) -> None:
        self._log.info(f"Handling log directory failure for brokers {','.join(map(str, broker_ids))}")
        replicas = self._context.replicas_on_brokers(broker_ids)
        self._replica_state_machine.handle_state_changes(replicas, ReplicaState.ONLINE)

    def process_leader_and_isr_response(self, e: ev.LeaderAndIsrResponseReceived) -> None:
        if not self._is_active():
            return
        log = StateChangeLogger(self._broker_id, self._context.epoch)
        if e.error_code:
            log.error(f"Received error {e.error_code} in LeaderAndIsr response from broker {e.broker_id}")
            return
        offline = {tp for tp, code in e.partition_errors.items() if code == KAFKA_STORAGE_ERROR}
        online = {tp for tp, code in e.partition_errors.items() if code == 0}
        previous = self._context.replicas_on_offline_dirs.get(e.broker_id, set())
        current = (previous - online) | offline
        self._context.replicas_on_offline_dirs[e.broker_id] = current
        newly_offline = current - previous
        if newly_offline:
            log.info(
                f"Mark replicas {','.join(map(str, sorted(newly_offline)))} on broker {e.broker_id} as offline"
            )
            self.on_replicas_become_offline(
                [PartitionAndReplica(tp, e.broker_id) for tp in sorted(newly_offline)]
            )

    def process_controlled_shutdown(self, e: ev.ControlledShutdown) -> None:
        try:
            result = self.do_controlled_shutdown(e.broker_id, e.broker_epoch)
        except Exception as exc:  # noqa: BLE001 - the error goes back to the requesting broker
            e.future.set_exception(exc)
        else:
            e.future.set_result(result)

    def do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
        ctx = self._context
        if not self._is_active():
            raise ControllerMovedException("Controller moved to another broker. Aborting controlled shutdown")
        if broker_epoch != UNKNOWN_BROKER_EPOCH:
            cached = ctx.live_broker_epochs.get(broker_id, UNKNOWN_BROKER_EPOCH)
            if broker_epoch < cached:
                raise StaleBrokerEpochException(
                    f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                    f"{broker_id}. Current broker epoch is {cached}."
                )
        self._log.info(f"Shutting down broker {broker_id}")
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            raise BrokerNotAvailableException(f"Broker id {broker_id} does not exist.")
        ctx.shutting_down_broker_ids.add(broker_id)
        self._log.debug(f"All shutting down brokers: {sorted(ctx.shutting_down_broker_ids)}")
        self._log.debug(f"Live brokers: {sorted(ctx.live_broker_ids)}")
        # Single-replica partitions cannot move anywhere; they go offline with the broker.
        to_act_on = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if len(ctx.partition_replica_assignment(tp)) > 1
            and tp in ctx.partition_leadership_info
            and not ctx.is_topic_queued_up_for_deletion(tp.topic)
        ]
        led = [tp for tp in to_act_on if ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id]
        led_set = set(led)  # built once: a per-item set(led) made this quadratic
        followed = [tp for tp in to_act_on if tp not in led_set]
        self._partition_state_machine.handle_state_changes(
            led, PartitionState.ONLINE, ElectionStrategy.CONTROLLED_SHUTDOWN
        )
        try:
            self._batch.new_batch()
            for tp in followed:
                self._batch.add_stop_replica_request_for_brokers([broker_id], tp, delete_partition=False)
            self._batch.send_requests_to_brokers(ctx.epoch)
        except Exception as exc:  # noqa: BLE001
            self._log.error("Error sending StopReplica for controlled shutdown", exc)
            self._batch.clear()
        # Followers leave the ISR now, so the leaders stop waiting for them (acks=all).
        self._replica_state_machine.handle_state_changes(
            [PartitionAndReplica(tp, broker_id) for tp in followed], ReplicaState.OFFLINE
        )
        remaining = {
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if tp in ctx.partition_leadership_info
            and ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id
            and len(ctx.partition_replica_assignment(tp)) > 1
        }
        self._log.debug(f"Broker {broker_id} leaves {len(remaining)} partitions: {sorted(remaining)}")
        return remaining
