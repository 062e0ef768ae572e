"""Partition reassignment in the active controller (Kafka 2.8's KafkaController.onPartitionReassignment
and its callers), called on the event thread.

A reassignment of partition P from ORS to TRS keeps RS = TRS + ORS, AR = TRS - ORS and
RR = ORS - TRS in /brokers/topics/<t> while it runs (KIP-455, reassignment_rules.py), then:

  A1. bump P's leader epoch, LeaderAndIsr with the new RS to every replica in RS;
  A2. the replicas in AR -> NewReplica: they create their logs and fetch from the leader;
  ... the leader adds them to the ISR as they catch up; the state znode's watch re-runs this ...
  B1. once TRS is in the ISR: AR -> OnlineReplica; B2. RS = TRS in memory;
  B3. a leader outside TRS (or dead) is replaced by one from TRS
      (ReassignPartitionLeaderElectionStrategy), else the leader epoch is bumped;
  B4/B5. RR -> Offline -> NonExistent, StopReplica(delete=true) deletes their logs;
  B6. /brokers/topics/<t> gets RS = TRS; B7. P leaves /admin/reassign_partitions (deleted when
      empty); B8. UpdateMetadata to every broker.

Requests come from /admin/reassign_partitions (the --zookeeper tool) or from
AlterPartitionReassignments (KIP-455, where a null target cancels); a new controller resumes
both (initialize_reassignments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from kafkapy.protocol.errors import (
    ControllerMovedException,
    KafkaError,
    NoReassignmentInProgressException,
    NotControllerException,
    UnknownServerException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.errors import StateChangeFailedException
from kafkapy.server.controller.leader_and_isr import (
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
    new_leader,
)
from kafkapy.server.controller.reassignment_rules import (
    build_reassignment,
    is_being_reassigned,
    origin_replicas,
    target_replicas,
    validate_replicas,
)
from kafkapy.server.controller.state_change_log import StateChangeLogger
from kafkapy.server.controller.states import PartitionState, ReplicaState
from kafkapy.server.controller.zk_interface import TopicAssignment

if TYPE_CHECKING:
    from kafkapy.server.controller.kafka_controller import KafkaController

REASSIGN_PARTITIONS = "/admin/reassign_partitions"
Errors = dict[TopicPartition, Exception | None]


def state_path(tp: TopicPartition) -> str:
    return f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state"


def _fmt(a: ReplicaAssignment) -> str:
    # Kafka's ReplicaAssignment.toString, which operators grep for in controller.log.
    return (f"ReplicaAssignment(replicas={','.join(map(str, a.replicas))}, "
            f"addingReplicas={','.join(map(str, a.adding_replicas))}, "
            f"removingReplicas={','.join(map(str, a.removing_replicas))})")


# --- events ---------------------------------------------------------------------------------------

def process_zk_partition_reassignment(c: KafkaController) -> set[TopicPartition]:
    """Start what /admin/reassign_partitions asks for; returns the partitions it started.
    The znode also changes when this controller removes completed partitions from it, so a
    partition already moving to the same target is left alone (Kafka only watches creation)."""
    if not c.is_active():
        return set()
    requested = c.zk.get_partition_reassignment()
    if not requested:
        return set()
    ctx = c.context
    results: Errors = {}
    to_start: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in sorted(requested.items()):
        current = ctx.partition_full_replica_assignment(tp)
        if is_being_reassigned(current) and list(target_replicas(current)) == list(target):
            continue
        error = validate_replicas(current, target, ctx.live_broker_ids) if current.replicas else None
        if error is not None:
            results[tp] = error
            continue
        reassignment = build_reassignment(current, target)
        assert reassignment is not None  # a target is given
        to_start[tp] = reassignment
    results.update(_maybe_trigger(c, to_start))
    failed = {tp: e for tp, e in results.items() if e is not None}
    if failed:
        c.log.warning("Failed reassignment through zk with the following errors: "
                      + ", ".join(f"{tp} -> {e}" for tp, e in sorted(failed.items())))
        _maybe_remove_from_zk_reassignment(c, lambda tp, _replicas: tp in failed)
    return {tp for tp, e in results.items() if e is None}


def process_api_partition_reassignment(c: KafkaController, e: ev.ApiPartitionReassignment) -> None:
    if not c.is_active():
        e.future.set_exception(NotControllerException("This is not the correct controller for this cluster."))
        return
    try:
        e.future.set_result(_api_reassign(c, e.reassignments))
    except ControllerMovedException:
        # The client must ask the new controller, which NOT_CONTROLLER tells it to do.
        e.future.set_exception(NotControllerException("This is not the correct controller for this cluster."))
        raise
    except Exception as exc:  # noqa: BLE001 - the error goes back to the request
        e.future.set_exception(exc)
        raise


def _api_reassign(c: KafkaController, reassignments: Mapping[TopicPartition, tuple[int, ...] | None]) -> Errors:
    ctx = c.context
    results: Errors = {}
    to_start: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, target in reassignments.items():
        current = ctx.partition_full_replica_assignment(tp)
        error = validate_replicas(current, target, ctx.live_broker_ids) if target is not None else None
        if error is not None:
            results[tp] = error
            continue
        reassignment = build_reassignment(current, target)
        if reassignment is None:
            results[tp] = NoReassignmentInProgressException(
                f"No reassignment in progress for partition {tp}.")
        else:
            to_start[tp] = reassignment
    # The latest request wins over a reassignment submitted through ZooKeeper.
    _maybe_remove_from_zk_reassignment(c, lambda tp, _replicas: tp in to_start)
    results.update(_maybe_trigger(c, to_start))
    return results


def process_list_partition_reassignments(c: KafkaController, e: ev.ListPartitionReassignments) -> None:
    if not c.is_active():
        e.future.set_exception(NotControllerException("This is not the correct controller for this cluster."))
        return
    ctx = c.context
    wanted = ctx.partitions_being_reassigned if e.partitions is None else e.partitions
    listed = {tp: ctx.partition_full_replica_assignment(tp) for tp in wanted}
    e.future.set_result({tp: a for tp, a in listed.items() if is_being_reassigned(a)})


def process_isr_change(c: KafkaController, tp: TopicPartition) -> None:
    """The ISR of a moving partition changed: complete the reassignment if TRS is all in sync."""
    if not c.is_active() or tp not in c.context.partitions_being_reassigned:
        return
    reassignment = c.context.partition_full_replica_assignment(tp)
    if _is_complete(c, tp, reassignment):
        c.log.info(f"Target replicas {list(target_replicas(reassignment))} have all caught up with the leader "
                   f"for reassigning partition {tp}")
        on_partition_reassignment(c, tp, reassignment)


def initialize_reassignments(c: KafkaController) -> None:
    """On failover: partitions whose topic znode shows one in flight were found by
    load_reassignments_in_progress; /admin/reassign_partitions may hold new ones."""
    started = process_zk_partition_reassignment(c)
    maybe_resume(c, lambda tp, _a: tp not in started)


def load_reassignments_in_progress(c: KafkaController) -> None:
    """Kafka's initializeControllerContext marks every partition with adding/removing replicas."""
    for tp in c.context.all_partitions:
        if is_being_reassigned(c.context.partition_full_replica_assignment(tp)):
            c.context.partitions_being_reassigned.add(tp)


def maybe_resume(c: KafkaController, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
    for tp in sorted(c.context.partitions_being_reassigned):
        assignment = c.context.partition_full_replica_assignment(tp)
        if should_resume(tp, assignment):
            _guarded(c, tp, assignment)


def resume_for_new_brokers(c: KafkaController, new_brokers: Sequence[int]) -> None:
    """A broker came (back): reassignments waiting for it to join the target can go on."""
    new = set(new_brokers)
    maybe_resume(c, lambda _tp, a: bool(new & set(target_replicas(a))))


def on_resignation(c: KafkaController) -> None:
    for tp in c.context.partitions_being_reassigned:
        c.zk.unwatch(state_path(tp))


# --- the algorithm --------------------------------------------------------------------------------

def _maybe_trigger(c: KafkaController, reassignments: Mapping[TopicPartition, ReplicaAssignment]) -> Errors:
    results: Errors = {}
    for tp, reassignment in sorted(reassignments.items()):
        if c.topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic):
            c.log.info(f"Skipping reassignment of {tp} since the topic is currently being deleted")
            results[tp] = UnknownTopicOrPartitionException("The partition does not exist.")
        elif not c.context.partition_replica_assignment(tp):
            results[tp] = UnknownTopicOrPartitionException("The partition does not exist.")
        else:
            results[tp] = _guarded(c, tp, reassignment)
    return results


def _guarded(c: KafkaController, tp: TopicPartition, reassignment: ReplicaAssignment) -> KafkaError | None:
    try:
        on_partition_reassignment(c, tp, reassignment)
        return None
    except ControllerMovedException:
        c.log.info(f"Failed completing reassignment of partition {tp} because controller has moved to another broker")
        raise
    except Exception as e:  # noqa: BLE001 - one partition's failure must not stop the others
        c.log.error(f"Error completing reassignment of partition {tp}", e)
        return UnknownServerException(str(e))


def on_partition_reassignment(c: KafkaController, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
    ctx = c.context
    # While a reassignment is in progress, deletion is not allowed.
    c.topic_deletion_manager.mark_topic_ineligible_for_deletion({tp.topic}, "topic reassignment in progress")
    _update_current_reassignment(c, tp, reassignment)
    if not _is_complete(c, tp, reassignment):
        _update_leader_epoch_and_send_request(c, tp, reassignment)  # A1
        c.replica_state_machine.handle_state_changes(  # A2
            [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas], ReplicaState.NEW)
        return
    c.replica_state_machine.handle_state_changes(  # B1
        [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas], ReplicaState.ONLINE)
    completed = ReplicaAssignment(target_replicas(reassignment))
    ctx.update_partition_full_replica_assignment(tp, completed)  # B2
    _move_leader_if_required(c, tp, completed)  # B3
    _stop_removed_replicas(c, tp, reassignment.removing_replicas)  # B4, B5
    _write_assignment(c, tp, completed)  # B6
    _remove_from_reassigning(c, tp, completed)  # B7
    c.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, [tp])  # B8
    # A deletion requested while the partition moved can go on now.
    c.topic_deletion_manager.resume_deletion_for_topics({tp.topic})


def _update_current_reassignment(c: KafkaController, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
    current = c.context.partition_full_replica_assignment(tp)
    if current != reassignment:
        c.log.debug(f"Updating assignment of partition {tp} from {_fmt(current)} to {_fmt(reassignment)}")
        _write_assignment(c, tp, reassignment)
        c.context.update_partition_full_replica_assignment(tp, reassignment)
        # A reassignment replacing one in flight may drop replicas the first one was adding.
        unneeded = [r for r in current.replicas if r not in reassignment.replicas]
        if unneeded:
            _stop_removed_replicas(c, tp, unneeded)
    c.zk.watch_node(state_path(tp), lambda: c.put(ev.PartitionReassignmentIsrChange(tp)), on_delete=lambda: None)
    c.context.partitions_being_reassigned.add(tp)


def _is_complete(c: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
    if not is_being_reassigned(assignment):
        return True
    state = c.zk.get_partition_states([tp]).get(tp)
    return state is not None and set(target_replicas(assignment)) <= set(state.leader_and_isr.isr)


def _update_leader_epoch(c: KafkaController, tp: TopicPartition) -> LeaderIsrAndControllerEpoch:
    """Same leader and ISR, next leader epoch, so the brokers accept the new replica set."""
    ctx = c.context
    while True:
        state = c.zk.get_partition_states([tp]).get(tp)
        if state is None:
            raise StateChangeFailedException(
                f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is empty. This could mean "
                f"we somehow tried to reassign a partition that doesn't exist")
        if state.controller_epoch > ctx.epoch:
            raise StateChangeFailedException(
                f"Leader and isr path written by another controller. This probably means the current controller "
                f"with epoch {ctx.epoch} went through a soft failure and another controller was elected with "
                f"epoch {state.controller_epoch}. Aborting state change by this controller")
        lai = state.leader_and_isr
        result = c.zk.update_leader_and_isr({tp: new_leader(lai, lai.leader)}, ctx.epoch, ctx.epoch_zk_version)
        if tp in result.failed:
            raise result.failed[tp]
        if tp in result.successful:
            updated = LeaderIsrAndControllerEpoch(result.successful[tp], ctx.epoch)
            ctx.partition_leadership_info[tp] = updated
            c.log.info(f"Updated leader epoch for partition {tp} to {updated.leader_and_isr.leader_epoch}")
            return updated
        # A zk version conflict: the leader changed the ISR meanwhile; read again.


def _update_leader_epoch_and_send_request(c: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    ctx = c.context
    log = StateChangeLogger(c.broker_id, ctx.epoch)
    updated = _update_leader_epoch(c, tp)
    try:
        c.batch.new_batch()
        # is_new only for the replicas being added: an original replica on an offline log dir
        # must not be recreated empty in a good one.
        c.batch.add_leader_and_isr_request_for_brokers(origin_replicas(assignment), tp, updated, assignment, False)
        c.batch.add_leader_and_isr_request_for_brokers(assignment.adding_replicas, tp, updated, assignment, True)
        c.batch.send_requests_to_brokers(ctx.epoch)
    except Exception:
        c.batch.clear()
        raise
    lai = updated.leader_and_isr
    log.info(f"Sent LeaderAndIsr request (Leader:{lai.leader},ISR:{','.join(map(str, lai.isr))},"
             f"LeaderEpoch:{lai.leader_epoch},ControllerEpoch:{updated.controller_epoch}) with new replica "
             f"assignment {_fmt(assignment)} to leader {lai.leader} for partition being reassigned {tp}")


def _move_leader_if_required(c: KafkaController, tp: TopicPartition, completed: ReplicaAssignment) -> None:
    info = c.context.partition_leadership_info.get(tp)
    leader = info.leader_and_isr.leader if info is not None else -1
    replicas = ",".join(map(str, completed.replicas))
    if leader not in completed.replicas:
        c.log.info(f"Leader {leader} for partition {tp} being reassigned, is not in the new list of replicas "
                   f"{replicas}. Re-electing leader")
        _elect_from_target(c, tp)
    elif c.context.is_replica_online(leader, tp):
        c.log.info(f"Leader {leader} for partition {tp} being reassigned, is already in the new list of replicas "
                   f"{replicas} and is alive")
        # The replica set shrank: a new leader epoch carries it to the brokers.
        _update_leader_epoch_and_send_request(c, tp, completed)
    else:
        c.log.info(f"Leader {leader} for partition {tp} being reassigned, is already in the new list of replicas "
                   f"{replicas} but is dead")
        _elect_from_target(c, tp)


def _elect_from_target(c: KafkaController, tp: TopicPartition) -> None:
    outcome = c.partition_state_machine.handle_state_changes(
        [tp], PartitionState.ONLINE, ElectionStrategy.REASSIGN).get(tp)
    if isinstance(outcome, ControllerMovedException):
        raise outcome


def _stop_removed_replicas(c: KafkaController, tp: TopicPartition, removed: Sequence[int]) -> None:
    """Offline first (out of the ISR), then StopReplica(delete=true); Kafka does not wait for the
    deletion's answer either."""
    replicas = [PartitionAndReplica(tp, r) for r in removed]
    if not replicas:
        return
    rsm = c.replica_state_machine
    rsm.handle_state_changes(replicas, ReplicaState.OFFLINE)
    rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_STARTED)
    rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_SUCCESSFUL)
    rsm.handle_state_changes(replicas, ReplicaState.NON_EXISTENT)


def _write_assignment(c: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    ctx = c.context
    partitions = ctx.partition_assignments_for_topic(tp.topic)
    partitions[tp.partition] = assignment
    c.zk.update_topic_assignment(tp.topic, TopicAssignment(ctx.topic_ids.get(tp.topic), partitions),
                                 ctx.epoch_zk_version)
    c.log.info(f"Successfully updated assignment of partition {tp} to {_fmt(assignment)}")


def _remove_from_reassigning(c: KafkaController, tp: TopicPartition, completed: ReplicaAssignment) -> None:
    c.zk.unwatch(state_path(tp))
    _maybe_remove_from_zk_reassignment(c, lambda p, replicas: p == tp and list(replicas) == list(completed.replicas))
    c.context.partitions_being_reassigned.discard(tp)


def _maybe_remove_from_zk_reassignment(
    c: KafkaController, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
) -> None:
    requested = c.zk.get_partition_reassignment()
    if requested is None:
        return
    removing = {tp for tp, replicas in requested.items() if should_remove(tp, replicas)}
    if not removing:
        return
    remaining = {tp: replicas for tp, replicas in requested.items() if tp not in removing}
    c.log.info(f"Removing partitions {','.join(map(str, sorted(removing)))} from the list of reassigned "
               f"partitions in zookeeper")
    if not remaining:
        c.log.info(f"No more partitions need to be reassigned. Deleting zk path {REASSIGN_PARTITIONS}")
        c.zk.delete_partition_reassignment(c.context.epoch_zk_version)
    else:
        c.zk.set_partition_reassignment(remaining, c.context.epoch_zk_version)
