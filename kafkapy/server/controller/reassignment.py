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
    from kafkapy.server.controller.services import ControllerServices, EventRoutes

REASSIGN_PARTITIONS = "/admin/reassign_partitions"
Errors = dict[TopicPartition, Exception | None]


def state_path(tp: TopicPartition) -> str:
    return f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state"


def _fmt(a: ReplicaAssignment) -> str:
    # Kafka's ReplicaAssignment.toString, which operators grep for in controller.log.
    return (
        f"ReplicaAssignment(replicas={','.join(map(str, a.replicas))}, "
        f"addingReplicas={','.join(map(str, a.adding_replicas))}, "
        f"removingReplicas={','.join(map(str, a.removing_replicas))})"
    )


class PartitionReassignments:
    """Partition reassignments: started from ZooKeeper or the API, advanced by ISR changes."""

    def __init__(self, services: ControllerServices) -> None:
        self._batch = services.batch
        self._broker_id = services.broker_id
        self._context = services.context
        self._is_active = services.is_active
        self._log = services.log
        self._partition_state_machine = services.partition_state_machine
        self._put = services.put
        self._replica_state_machine = services.replica_state_machine
        self._send_update_metadata_request = services.send_update_metadata_request
        self._topic_deletion_manager = services.topic_deletion_manager
        self._zk = services.zk

    # --- events ---------------------------------------------------------------------------------------

    def register(self, routes: EventRoutes) -> None:
        routes.on(ev.ZkPartitionReassignment, lambda _e: self.process_zk_partition_reassignment())
        routes.on(ev.PartitionReassignmentIsrChange, lambda e: self.process_isr_change(e.partition))
        routes.on(ev.ApiPartitionReassignment, self.process_api_partition_reassignment)
        routes.on(ev.ListPartitionReassignments, self.process_list_partition_reassignments)

    def process_zk_partition_reassignment(self) -> set[TopicPartition]:
        """Start what /admin/reassign_partitions asks for; returns the partitions it started.
        The znode also changes when this controller removes completed partitions from it, so a
        partition already moving to the same target is left alone (Kafka only watches creation)."""
        if not self._is_active():
            return set()
        requested = self._zk.get_partition_reassignment()
        if not requested:
            return set()
        ctx = self._context
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
        results.update(self._maybe_trigger(to_start))
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            self._log.warning(
                "Failed reassignment through zk with the following errors: "
                + ", ".join(f"{tp} -> {e}" for tp, e in sorted(failed.items()))
            )
            self._maybe_remove_from_zk_reassignment(lambda tp, _replicas: tp in failed)
        return {tp for tp, e in results.items() if e is None}

    def process_api_partition_reassignment(self, e: ev.ApiPartitionReassignment) -> None:
        if not self._is_active():
            e.future.set_exception(
                NotControllerException("This is not the correct controller for this cluster.")
            )
            return
        try:
            e.future.set_result(self._api_reassign(e.reassignments))
        except ControllerMovedException:
            # The client must ask the new controller, which NOT_CONTROLLER tells it to do.
            e.future.set_exception(
                NotControllerException("This is not the correct controller for this cluster.")
            )
            raise
        except Exception as exc:  # noqa: BLE001 - the error goes back to the request
            e.future.set_exception(exc)
            raise

    def _api_reassign(self, reassignments: Mapping[TopicPartition, tuple[int, ...] | None]) -> Errors:
        ctx = self._context
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
                    f"No reassignment in progress for partition {tp}."
                )
            else:
                to_start[tp] = reassignment
        # The latest request wins over a reassignment submitted through ZooKeeper.
        self._maybe_remove_from_zk_reassignment(lambda tp, _replicas: tp in to_start)
        results.update(self._maybe_trigger(to_start))
        return results

    def process_list_partition_reassignments(self, e: ev.ListPartitionReassignments) -> None:
        if not self._is_active():
            e.future.set_exception(
                NotControllerException("This is not the correct controller for this cluster.")
            )
            return
        ctx = self._context
        wanted = ctx.partitions_being_reassigned if e.partitions is None else e.partitions
        listed = {tp: ctx.partition_full_replica_assignment(tp) for tp in wanted}
        e.future.set_result({tp: a for tp, a in listed.items() if is_being_reassigned(a)})

    def process_isr_change(self, tp: TopicPartition) -> None:
        """The ISR of a moving partition changed: complete the reassignment if TRS is all in sync."""
        if not self._is_active() or tp not in self._context.partitions_being_reassigned:
            return
        reassignment = self._context.partition_full_replica_assignment(tp)
        if self._is_complete(tp, reassignment):
            self._log.info(
                f"Target replicas {list(target_replicas(reassignment))} have all caught up with the leader "
                f"for reassigning partition {tp}"
            )
            self.on_partition_reassignment(tp, reassignment)

    def initialize_reassignments(self) -> None:
        """On failover: partitions whose topic znode shows one in flight were found by
        load_reassignments_in_progress; /admin/reassign_partitions may hold new ones."""
        started = self.process_zk_partition_reassignment()
        self.maybe_resume(lambda tp, _a: tp not in started)

    def load_reassignments_in_progress(self) -> None:
        """Kafka's initializeControllerContext marks every partition with adding/removing replicas."""
        for tp in self._context.all_partitions:
            if is_being_reassigned(self._context.partition_full_replica_assignment(tp)):
                self._context.partitions_being_reassigned.add(tp)

    def maybe_resume(self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
        for tp in sorted(self._context.partitions_being_reassigned):
            assignment = self._context.partition_full_replica_assignment(tp)
            if should_resume(tp, assignment):
                self._guarded(tp, assignment)

    def resume_for_new_brokers(self, new_brokers: Sequence[int]) -> None:
        """A broker came (back): reassignments waiting for it to join the target can go on."""
        new = set(new_brokers)
        self.maybe_resume(lambda _tp, a: bool(new & set(target_replicas(a))))

    def on_resignation(self) -> None:
        for tp in self._context.partitions_being_reassigned:
            self._zk.unwatch(state_path(tp))

    # --- the algorithm --------------------------------------------------------------------------------

    def _maybe_trigger(self, reassignments: Mapping[TopicPartition, ReplicaAssignment]) -> Errors:
        results: Errors = {}
        for tp, reassignment in sorted(reassignments.items()):
            if self._topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic):
                self._log.info(f"Skipping reassignment of {tp} since the topic is currently being deleted")
                results[tp] = UnknownTopicOrPartitionException("The partition does not exist.")
            elif not self._context.partition_replica_assignment(tp):
                results[tp] = UnknownTopicOrPartitionException("The partition does not exist.")
            else:
                results[tp] = self._guarded(tp, reassignment)
        return results

    def _guarded(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> KafkaError | None:
        try:
            self.on_partition_reassignment(tp, reassignment)
            return None
        except ControllerMovedException:
            self._log.info(
                f"Failed completing reassignment of partition {tp} because controller has moved to another broker"
            )
            raise
        except Exception as e:  # noqa: BLE001 - one partition's failure must not stop the others
            self._log.error(f"Error completing reassignment of partition {tp}", e)
            return UnknownServerException(str(e))

    def on_partition_reassignment(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
        ctx = self._context
        # While a reassignment is in progress, deletion is not allowed.
        self._topic_deletion_manager.mark_topic_ineligible_for_deletion(
            {tp.topic}, "topic reassignment in progress"
        )
        self._update_current_reassignment(tp, reassignment)
        if not self._is_complete(tp, reassignment):
            self._update_leader_epoch_and_send_request(tp, reassignment)  # A1
            self._replica_state_machine.handle_state_changes(  # A2
                [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas], ReplicaState.NEW
            )
            return
        self._replica_state_machine.handle_state_changes(  # B1
            [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas], ReplicaState.ONLINE
        )
        completed = ReplicaAssignment(target_replicas(reassignment))
        ctx.update_partition_full_replica_assignment(tp, completed)  # B2
        self._move_leader_if_required(tp, completed)  # B3
        self._stop_removed_replicas(tp, reassignment.removing_replicas)  # B4, B5
        self._write_assignment(tp, completed)  # B6
        self._remove_from_reassigning(tp, completed)  # B7
        self._send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, [tp])  # B8
        # A deletion requested while the partition moved can go on now.
        self._topic_deletion_manager.resume_deletion_for_topics({tp.topic})

    def _update_current_reassignment(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
        current = self._context.partition_full_replica_assignment(tp)
        if current != reassignment:
            self._log.debug(
                f"Updating assignment of partition {tp} from {_fmt(current)} to {_fmt(reassignment)}"
            )
            self._write_assignment(tp, reassignment)
            self._context.update_partition_full_replica_assignment(tp, reassignment)
            # A reassignment replacing one in flight may drop replicas the first one was adding.
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                self._stop_removed_replicas(tp, unneeded)
        self._zk.watch_node(
            state_path(tp), lambda: self._put(ev.PartitionReassignmentIsrChange(tp)), on_delete=lambda: None
        )
        self._context.partitions_being_reassigned.add(tp)

    def _is_complete(self, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
        if not is_being_reassigned(assignment):
            return True
        state = self._zk.get_partition_states([tp]).get(tp)
        return state is not None and set(target_replicas(assignment)) <= set(state.leader_and_isr.isr)

    def _update_leader_epoch(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch:
        """Same leader and ISR, next leader epoch, so the brokers accept the new replica set."""
        ctx = self._context
        while True:
            state = self._zk.get_partition_states([tp]).get(tp)
            if state is None:
                raise StateChangeFailedException(
                    f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is empty. This could mean "
                    f"we somehow tried to reassign a partition that doesn't exist"
                )
            if state.controller_epoch > ctx.epoch:
                raise StateChangeFailedException(
                    f"Leader and isr path written by another controller. This probably means the current controller "
                    f"with epoch {ctx.epoch} went through a soft failure and another controller was elected with "
                    f"epoch {state.controller_epoch}. Aborting state change by this controller"
                )
            lai = state.leader_and_isr
            result = self._zk.update_leader_and_isr(
                {tp: new_leader(lai, lai.leader)}, ctx.epoch, ctx.epoch_zk_version
            )
            if tp in result.failed:
                raise result.failed[tp]
            if tp in result.successful:
                updated = LeaderIsrAndControllerEpoch(result.successful[tp], ctx.epoch)
                ctx.partition_leadership_info[tp] = updated
                self._log.info(
                    f"Updated leader epoch for partition {tp} to {updated.leader_and_isr.leader_epoch}"
                )
                return updated
            # A zk version conflict: the leader changed the ISR meanwhile; read again.

    def _update_leader_epoch_and_send_request(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self._context
        log = StateChangeLogger(self._broker_id, ctx.epoch)
        updated = self._update_leader_epoch(tp)
        try:
            self._batch.new_batch()
            # is_new only for the replicas being added: an original replica on an offline log dir
            # must not be recreated empty in a good one.
            self._batch.add_leader_and_isr_request_for_brokers(
                origin_replicas(assignment), tp, updated, assignment, False
            )
            self._batch.add_leader_and_isr_request_for_brokers(
                assignment.adding_replicas, tp, updated, assignment, True
            )
            self._batch.send_requests_to_brokers(ctx.epoch)
        except Exception:
            self._batch.clear()
            raise
        lai = updated.leader_and_isr
        log.info(
            f"Sent LeaderAndIsr request (Leader:{lai.leader},ISR:{','.join(map(str, lai.isr))},"
            f"LeaderEpoch:{lai.leader_epoch},ControllerEpoch:{updated.controller_epoch}) with new replica "
            f"assignment {_fmt(assignment)} to leader {lai.leader} for partition being reassigned {tp}"
        )

    def _move_leader_if_required(self, tp: TopicPartition, completed: ReplicaAssignment) -> None:
        info = self._context.partition_leadership_info.get(tp)
        leader = info.leader_and_isr.leader if info is not None else -1
        replicas = ",".join(map(str, completed.replicas))
        if leader not in completed.replicas:
            self._log.info(
                f"Leader {leader} for partition {tp} being reassigned, is not in the new list of replicas "
                f"{replicas}. Re-electing leader"
            )
            self._elect_from_target(tp)
        elif self._context.is_replica_online(leader, tp):
            self._log.info(
                f"Leader {leader} for partition {tp} being reassigned, is already in the new list of replicas "
                f"{replicas} and is alive"
            )
            # The replica set shrank: a new leader epoch carries it to the brokers.
            self._update_leader_epoch_and_send_request(tp, completed)
        else:
            self._log.info(
                f"Leader {leader} for partition {tp} being reassigned, is already in the new list of replicas "
                f"{replicas} but is dead"
            )
            self._elect_from_target(tp)

    def _elect_from_target(self, tp: TopicPartition) -> None:
        outcome = self._partition_state_machine.handle_state_changes(
            [tp], PartitionState.ONLINE, ElectionStrategy.REASSIGN
        ).get(tp)
        if isinstance(outcome, ControllerMovedException):
            raise outcome

    def _stop_removed_replicas(self, tp: TopicPartition, removed: Sequence[int]) -> None:
        """Offline first (out of the ISR), then StopReplica(delete=true); Kafka does not wait for the
        deletion's answer either."""
        replicas = [PartitionAndReplica(tp, r) for r in removed]
        if not replicas:
            return
        rsm = self._replica_state_machine
        rsm.handle_state_changes(replicas, ReplicaState.OFFLINE)
        rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_STARTED)
        rsm.handle_state_changes(replicas, ReplicaState.REPLICA_DELETION_SUCCESSFUL)
        rsm.handle_state_changes(replicas, ReplicaState.NON_EXISTENT)

    def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self._context
        partitions = ctx.partition_assignments_for_topic(tp.topic)
        partitions[tp.partition] = assignment
        self._zk.update_topic_assignment(
            tp.topic, TopicAssignment(ctx.topic_ids.get(tp.topic), partitions), ctx.epoch_zk_version
        )
        self._log.info(f"Successfully updated assignment of partition {tp} to {_fmt(assignment)}")

    def _remove_from_reassigning(self, tp: TopicPartition, completed: ReplicaAssignment) -> None:
        self._zk.unwatch(state_path(tp))
        self._maybe_remove_from_zk_reassignment(
            lambda p, replicas: p == tp and list(replicas) == list(completed.replicas)
        )
        self._context.partitions_being_reassigned.discard(tp)

    def _maybe_remove_from_zk_reassignment(
        self, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
    ) -> None:
        requested = self._zk.get_partition_reassignment()
        if requested is None:
            return
        removing = {tp for tp, replicas in requested.items() if should_remove(tp, replicas)}
        if not removing:
            return
        remaining = {tp: replicas for tp, replicas in requested.items() if tp not in removing}
        self._log.info(
            f"Removing partitions {','.join(map(str, sorted(removing)))} from the list of reassigned "
            f"partitions in zookeeper"
        )
        if not remaining:
            self._log.info(
                f"No more partitions need to be reassigned. Deleting zk path {REASSIGN_PARTITIONS}"
            )
            self._zk.delete_partition_reassignment(self._context.epoch_zk_version)
        else:
            self._zk.set_partition_reassignment(remaining, self._context.epoch_zk_version)
