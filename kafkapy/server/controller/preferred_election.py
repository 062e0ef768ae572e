"""Preferred replica leader election: on request (/admin/preferred_replica_election) and
automatically (auto.leader.rebalance.enable, every leader.imbalance.check.interval.seconds, for
brokers whose share of not-led preferred partitions exceeds leader.imbalance.per.broker.percentage).
Called on the event thread."""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import TYPE_CHECKING

from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition
from kafkapy.server.controller.states import PartitionState

if TYPE_CHECKING:
    from kafkapy.server.controller.services import ControllerServices, EventRoutes


class PreferredReplicaElection:
    """Elections to the preferred replica, requested or automatic; owns the auto-rebalance timer."""

    def __init__(self, services: ControllerServices) -> None:
        self._broker_id = services.broker_id
        self._put = services.put
        self._rebalance_timer: threading.Timer | None = None
        self._config = services.config
        self._context = services.context
        self._is_active = services.is_active
        self._log = services.log
        self._partition_state_machine = services.partition_state_machine
        self._zk = services.zk

    def register(self, routes: EventRoutes) -> None:
        routes.on(ev.ReplicaLeaderElection, self.process_replica_leader_election)
        routes.on(ev.AutoPreferredReplicaLeaderElection, lambda _e: self.process_auto_rebalance())

    def schedule_auto_leader_rebalance(self, delay_s: float) -> None:
        timer = threading.Timer(delay_s, lambda: self._put(ev.AutoPreferredReplicaLeaderElection()))
        timer.daemon = True
        timer.name = f"controller-{self._broker_id}-auto-leader-rebalance"
        self._rebalance_timer = timer
        timer.start()

    def cancel_auto_leader_rebalance(self) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None

    def process_replica_leader_election(self, e: ev.ReplicaLeaderElection) -> None:
        if not self._is_active():
            return
        ctx = self._context
        zk_triggered = e.partitions is None
        partitions = self._zk.get_preferred_replica_election() if zk_triggered else set(e.partitions or ())
        trigger = (
            "ZkTriggered"
            if zk_triggered
            else ("AutoTriggered" if e.auto_triggered else "AdminClientTriggered")
        )
        known = set(ctx.all_partitions)
        for tp in sorted(partitions - known):
            self._log.info(
                f"Skipping replica leader election (PREFERRED) for partition {tp} by {trigger} since it doesn't exist."
            )
        deleting = {tp for tp in partitions & known if ctx.is_topic_queued_up_for_deletion(tp.topic)}
        if deleting:
            self._log.warning(
                f"Skipping replica leader election (PREFERRED) for partitions {sorted(deleting)} by {trigger} "
                f"since the respective topics are being deleted"
            )
        live = sorted((partitions & known) - deleting)
        # Only partitions not already led by their preferred replica need an election.
        electable = [
            tp
            for tp in live
            if tp in ctx.partition_leadership_info
            and ctx.partition_leadership_info[tp].leader_and_isr.leader
            != ctx.partition_replica_assignment(tp)[0]
        ]
        self.on_replica_election(electable, trigger, remove_request=zk_triggered)

    def on_replica_election(
        self, partitions: list[TopicPartition], trigger: str, remove_request: bool
    ) -> dict[TopicPartition, LeaderAndIsr | Exception]:
        results: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        try:
            if partitions:
                self._log.info(
                    f"Starting replica leader election (PREFERRED) for partitions "
                    f"{','.join(map(str, partitions))} triggered by {trigger}"
                )
            results = self._partition_state_machine.handle_state_changes(
                partitions, PartitionState.ONLINE, ElectionStrategy.PREFERRED
            )
            for tp, outcome in results.items():
                if isinstance(outcome, ControllerMovedException):
                    raise outcome
                if isinstance(outcome, Exception):
                    self._log.error(
                        f"Error completing replica leader election (PREFERRED) for partition {tp}: {outcome}"
                    )
        finally:
            for tp in partitions:
                info = self._context.partition_leadership_info.get(tp)
                assignment = self._context.partition_replica_assignment(tp)
                if info is None or not assignment:
                    continue
                if info.leader_and_isr.leader == assignment[0]:
                    self._log.info(
                        f"Partition {tp} completed preferred replica leader election. New leader is {assignment[0]}"
                    )
                else:
                    self._log.warning(
                        f"Partition {tp} failed to complete preferred replica leader election to "
                        f"{assignment[0]}. Leader is still {info.leader_and_isr.leader}"
                    )
            if remove_request and self._is_active():
                # The request is consumed whatever the outcome; the admin tool re-submits if needed.
                self._zk.delete_preferred_replica_election(self._context.epoch_zk_version)
        return results

    def process_auto_rebalance(self) -> None:
        if not self._is_active():
            return
        try:
            self.check_and_trigger_auto_leader_rebalance()
        finally:
            if self._is_active():
                self.schedule_auto_leader_rebalance(self._config.leader_imbalance_check_interval_seconds)

    def check_and_trigger_auto_leader_rebalance(self) -> None:
        ctx = self._context
        self._log.debug("Checking need to trigger auto leader balancing")
        by_preferred: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in ctx.all_partitions:
            replicas = ctx.partition_replica_assignment(tp)
            if replicas and not ctx.is_topic_queued_up_for_deletion(tp.topic):
                by_preferred[replicas[0]].append(tp)
        threshold = self._config.leader_imbalance_per_broker_percentage / 100
        for broker, partitions in sorted(by_preferred.items()):
            not_led = [
                tp
                for tp in partitions
                if tp in ctx.partition_leadership_info
                and ctx.partition_leadership_info[tp].leader_and_isr.leader != broker
            ]
            ratio = len(not_led) / len(partitions)
            self._log.debug(f"Leader imbalance ratio for broker {broker} is {ratio}")
            if ratio <= threshold:
                continue
            candidates = [
                tp
                for tp in not_led
                if ctx.is_replica_online(broker, tp)
                and not ctx.partitions_being_reassigned
                and not ctx.is_topic_queued_up_for_deletion(tp.topic)
                and tp.topic in ctx.all_topics
                and broker in ctx.partition_leadership_info[tp].leader_and_isr.isr
            ]
            if candidates:
                self.on_replica_election(sorted(candidates), "AutoTriggered", remove_request=False)
