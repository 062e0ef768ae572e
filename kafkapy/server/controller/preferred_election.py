"""Preferred replica leader election: on request (/admin/preferred_replica_election) and
automatically (auto.leader.rebalance.enable, every leader.imbalance.check.interval.seconds, for
brokers whose share of not-led preferred partitions exceeds leader.imbalance.per.broker.percentage).
Called on the event thread."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition
from kafkapy.server.controller.states import PartitionState

if TYPE_CHECKING:
    from kafkapy.server.controller.kafka_controller import KafkaController


def process_replica_leader_election(c: KafkaController, e: ev.ReplicaLeaderElection) -> None:
    if not c.is_active():
        return
    ctx = c.context
    zk_triggered = e.partitions is None
    partitions = c.zk.get_preferred_replica_election() if zk_triggered else set(e.partitions or ())
    trigger = "ZkTriggered" if zk_triggered else ("AutoTriggered" if e.auto_triggered else "AdminClientTriggered")
    known = set(ctx.all_partitions)
    for tp in sorted(partitions - known):
        c.log.info(f"Skipping replica leader election (PREFERRED) for partition {tp} by {trigger} since it doesn't exist.")
    deleting = {tp for tp in partitions & known if ctx.is_topic_queued_up_for_deletion(tp.topic)}
    if deleting:
        c.log.warning(f"Skipping replica leader election (PREFERRED) for partitions {sorted(deleting)} by {trigger} "
                      f"since the respective topics are being deleted")
    live = sorted((partitions & known) - deleting)
    # Only partitions not already led by their preferred replica need an election.
    electable = [
        tp for tp in live
        if tp in ctx.partition_leadership_info
        and ctx.partition_leadership_info[tp].leader_and_isr.leader != ctx.partition_replica_assignment(tp)[0]
    ]
    on_replica_election(c, electable, trigger, remove_request=zk_triggered)


def on_replica_election(
    c: KafkaController, partitions: list[TopicPartition], trigger: str, remove_request: bool
) -> dict[TopicPartition, LeaderAndIsr | Exception]:
    results: dict[TopicPartition, LeaderAndIsr | Exception] = {}
    try:
        if partitions:
            c.log.info(f"Starting replica leader election (PREFERRED) for partitions "
                       f"{','.join(map(str, partitions))} triggered by {trigger}")
        results = c.partition_state_machine.handle_state_changes(
            partitions, PartitionState.ONLINE, ElectionStrategy.PREFERRED)
        for tp, outcome in results.items():
            if isinstance(outcome, ControllerMovedException):
                raise outcome
            if isinstance(outcome, Exception):
                c.log.error(f"Error completing replica leader election (PREFERRED) for partition {tp}: {outcome}")
    finally:
        for tp in partitions:
            info = c.context.partition_leadership_info.get(tp)
            assignment = c.context.partition_replica_assignment(tp)
            if info is None or not assignment:
                continue
            if info.leader_and_isr.leader == assignment[0]:
                c.log.info(f"Partition {tp} completed preferred replica leader election. New leader is {assignment[0]}")
            else:
                c.log.warning(f"Partition {tp} failed to complete preferred replica leader election to "
                              f"{assignment[0]}. Leader is still {info.leader_and_isr.leader}")
        if remove_request and c.is_active():
            # The request is consumed whatever the outcome; the admin tool re-submits if needed.
            c.zk.delete_preferred_replica_election(c.context.epoch_zk_version)
    return results


def process_auto_rebalance(c: KafkaController) -> None:
    if not c.is_active():
        return
    try:
        check_and_trigger_auto_leader_rebalance(c)
    finally:
        if c.is_active():
            c.schedule_auto_leader_rebalance(c.config.leader_imbalance_check_interval_seconds)


def check_and_trigger_auto_leader_rebalance(c: KafkaController) -> None:
    ctx = c.context
    c.log.debug("Checking need to trigger auto leader balancing")
    by_preferred: dict[int, list[TopicPartition]] = defaultdict(list)
    for tp in ctx.all_partitions:
        replicas = ctx.partition_replica_assignment(tp)
        if replicas and not ctx.is_topic_queued_up_for_deletion(tp.topic):
            by_preferred[replicas[0]].append(tp)
    threshold = c.config.leader_imbalance_per_broker_percentage / 100
    for broker, partitions in sorted(by_preferred.items()):
        not_led = [
            tp for tp in partitions
            if tp in ctx.partition_leadership_info and ctx.partition_leadership_info[tp].leader_and_isr.leader != broker
        ]
        ratio = len(not_led) / len(partitions)
        c.log.debug(f"Leader imbalance ratio for broker {broker} is {ratio}")
        if ratio <= threshold:
            continue
        candidates = [
            tp for tp in not_led
            if ctx.is_replica_online(broker, tp)
            and not ctx.partitions_being_reassigned
            and not ctx.is_topic_queued_up_for_deletion(tp.topic)
            and tp.topic in ctx.all_topics
            and broker in ctx.partition_leadership_info[tp].leader_and_isr.isr
        ]
        if candidates:
            on_replica_election(c, sorted(candidates), "AutoTriggered", remove_request=False)
