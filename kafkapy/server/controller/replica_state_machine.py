"""ReplicaStateMachine: one replica (partition, broker) through NewReplica, OnlineReplica,
OfflineReplica, the three deletion states and NonExistentReplica (table in states.py), as Kafka's
ZkReplicaStateMachine does.

- -> NewReplica: LeaderAndIsr(is_new) to the replica if the partition has a leader (and it is not
  that leader); -> OnlineReplica: LeaderAndIsr to the replica (from New: just make sure it is in
  the assignment).
- -> OfflineReplica: StopReplica(delete=false) to it, then remove it from the ISR in ZooKeeper
  (leader -1 if it led; never shrink an ISR below one so a clean election stays possible) and tell
  the remaining replicas.
- -> ReplicaDeletionStarted: StopReplica(delete=true), whose response drives topic deletion.
- -> NonExistentReplica: drop it from the assignment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkapy.protocol.constants import NO_LEADER
from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.errors import StateChangeFailedException
from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
    describe,
)
from kafkapy.server.controller.request_batch import ControllerBrokerRequestBatch
from kafkapy.server.controller.state_change_log import ControllerLogger, StateChangeLogger
from kafkapy.server.controller.states import ReplicaState, is_valid_transition
from kafkapy.server.controller.zk_interface import ControllerZk, cached_or_read_states

R = ReplicaState


class ReplicaStateMachine:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk: ControllerZk,
        batch: ControllerBrokerRequestBatch,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.zk = zk
        self.batch = batch
        self._state_change_logger = StateChangeLogger(controller_id)
        self.log = ControllerLogger(f"[ReplicaStateMachine controllerId={controller_id}] ")

    def startup(self) -> None:
        self.log.info("Initializing replica state")
        online: list[PartitionAndReplica] = []
        offline: list[PartitionAndReplica] = []
        for tp in self.context.all_partitions:
            for replica_id in self.context.partition_replica_assignment(tp):
                replica = PartitionAndReplica(tp, replica_id)
                if self.context.is_replica_online(replica_id, tp):
                    self.context.replica_states[replica] = R.ONLINE
                    online.append(replica)
                else:
                    # Ineligible (not Offline) so that a topic deletion started before a failover
                    # does not wait on a replica no broker can delete right now.
                    self.context.replica_states[replica] = R.REPLICA_DELETION_INELIGIBLE
                    offline.append(replica)
        self.log.info("Triggering online replica state changes")
        self.handle_state_changes(online, R.ONLINE)
        self.log.info("Triggering offline replica state changes")
        self.handle_state_changes(offline, R.OFFLINE)
        self.log.debug(f"Started replica state machine with initial state -> {self.context.replica_states}")

    def shutdown(self) -> None:
        self.context.replica_states.clear()
        self.log.info("Stopped replica state machine")

    def handle_state_changes(self, replicas: Sequence[PartitionAndReplica], target: ReplicaState) -> None:
        if not replicas:
            return
        try:
            self.batch.new_batch()
            by_broker: dict[int, list[PartitionAndReplica]] = {}
            for replica in replicas:
                by_broker.setdefault(replica.replica, []).append(replica)
            for replica_id, group in by_broker.items():
                self._do_handle_state_changes(replica_id, group, target)
            self.batch.send_requests_to_brokers(self.context.epoch)
        except ControllerMovedException as e:
            self.log.error(
                f"Controller moved to another broker when moving some replicas to {target} state", e
            )
            self.batch.clear()
            raise
        except Exception as e:  # noqa: BLE001 - log and keep the controller going, as Kafka does
            self.log.error(f"Error while moving some replicas to {target} state", e)
            self.batch.clear()

    def _do_handle_state_changes(
        self, replica_id: int, replicas: list[PartitionAndReplica], target: ReplicaState
    ) -> None:
        states = self.context.replica_states
        log = self._state_change_logger.with_controller_epoch(self.context.epoch)
        for replica in replicas:
            states.setdefault(replica, R.NON_EXISTENT)
        valid = []
        for replica in replicas:
            if is_valid_transition(states[replica], target):
                valid.append(replica)
            else:
                allowed = ",".join(sorted(map(str, target.valid_previous_states)))
                self._log_failed(
                    replica,
                    states[replica],
                    target,
                    StateChangeFailedException(
                        f"Replica {replica_id} for partition {replica.topic_partition} should be in the {allowed} "
                        f"states before moving to {target} state. Instead it is in {states[replica]} state"
                    ),
                )

        # One line per replica: Kafka's TRACE, built only when someone reads it.
        trace = log.trace_enabled()

        def changed(replica: PartitionAndReplica) -> None:
            if trace:
                log.trace(
                    f"Changed state of replica {replica_id} for partition {replica.topic_partition} "
                    f"from {states[replica]} to {target}"
                )
            states[replica] = target

        if target is R.NEW:
            for replica in valid:
                tp = replica.topic_partition
                info = self.context.partition_leadership_info.get(tp)
                if info is not None and info.leader_and_isr.leader == replica_id:
                    self._log_failed(
                        replica,
                        states[replica],
                        target,
                        StateChangeFailedException(
                            f"Replica {replica_id} for partition {tp} cannot be moved to NewReplica state as it is "
                            f"being requested to become leader"
                        ),
                    )
                    continue
                if info is not None:
                    self.batch.add_leader_and_isr_request_for_brokers(
                        [replica_id],
                        tp,
                        info,
                        self.context.partition_full_replica_assignment(tp),
                        is_new=True,
                    )
                changed(replica)
        elif target is R.ONLINE:
            for replica in valid:
                tp = replica.topic_partition
                assignment = self.context.partition_full_replica_assignment(tp)
                if states[replica] is R.NEW:
                    if replica_id not in assignment.replicas:
                        self.log.error(
                            f"Adding replica ({replica_id}) that is not part of the assignment {assignment}"
                        )
                        self.context.update_partition_full_replica_assignment(
                            tp,
                            ReplicaAssignment(
                                assignment.replicas + (replica_id,),
                                assignment.adding_replicas,
                                assignment.removing_replicas,
                            ),
                        )
                else:
                    info = self.context.partition_leadership_info.get(tp)
                    if info is not None:
                        self.batch.add_leader_and_isr_request_for_brokers(
                            [replica_id], tp, info, assignment, is_new=False
                        )
                changed(replica)
        elif target is R.OFFLINE:
            self._to_offline(replica_id, valid, changed)
        elif target is R.REPLICA_DELETION_STARTED:
            for replica in valid:
                changed(replica)
                self.batch.add_stop_replica_request_for_brokers([replica_id], replica.topic_partition, True)
        elif target in (R.REPLICA_DELETION_INELIGIBLE, R.REPLICA_DELETION_SUCCESSFUL):
            for replica in valid:
                changed(replica)
        elif target is R.NON_EXISTENT:
            for replica in valid:
                tp = replica.topic_partition
                a = self.context.partition_full_replica_assignment(tp)
                self.context.update_partition_full_replica_assignment(
                    tp,
                    ReplicaAssignment(
                        tuple(r for r in a.replicas if r != replica_id),
                        tuple(r for r in a.adding_replicas if r != replica_id),
                        tuple(r for r in a.removing_replicas if r != replica_id),
                    ),
                )
                if trace:
                    log.trace(
                        f"Changed state of replica {replica_id} for partition {tp} from {states[replica]} to {target}"
                    )
                del states[replica]

    def _to_offline(
        self,
        replica_id: int,
        valid: list[PartitionAndReplica],
        changed: Callable[[PartitionAndReplica], None],
    ) -> None:
        log = self._state_change_logger.with_controller_epoch(self.context.epoch)
        for replica in valid:
            self.batch.add_stop_replica_request_for_brokers([replica_id], replica.topic_partition, False)
        with_leader = [
            r.topic_partition for r in valid if r.topic_partition in self.context.partition_leadership_info
        ]
        without_leader = [r for r in valid if r.topic_partition not in self.context.partition_leadership_info]
        updated = self._remove_replica_from_isr(replica_id, with_leader)
        trace = log.trace_enabled()
        for tp, state in updated.items():
            if trace:
                log.trace(
                    f"Partition {tp} state changed to {describe(state.leader_and_isr)} after removing replica "
                    f"{replica_id} from the ISR as part of transition to {R.OFFLINE}"
                )
            if not self.context.is_topic_queued_up_for_deletion(tp.topic):
                recipients = [r for r in self.context.partition_replica_assignment(tp) if r != replica_id]
                self.batch.add_leader_and_isr_request_for_brokers(
                    recipients, tp, state, self.context.partition_full_replica_assignment(tp), is_new=False
                )
            changed(PartitionAndReplica(tp, replica_id))
        for replica in without_leader:
            self.batch.add_update_metadata_request_for_brokers(
                self.context.live_or_shutting_down_broker_ids, [replica.topic_partition]
            )
            changed(replica)

    def _remove_replica_from_isr(
        self, replica_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Shrink the ISR in ZooKeeper, re-reading and retrying on zk version conflicts. Returns the
        new state of each partition that now has it (unchanged ones included)."""
        done: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = partitions
        first = True
        while remaining:
            current = self._isr_states(replica_id, remaining, from_cache=first)
            first = False
            to_write: dict[TopicPartition, LeaderAndIsr] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    if not self.context.is_topic_queued_up_for_deletion(tp.topic):
                        self._log_failed(
                            PartitionAndReplica(tp, replica_id),
                            R.ONLINE,
                            R.OFFLINE,
                            StateChangeFailedException(
                                f"Failed to change state of replica {replica_id} for partition {tp} "
                                f"since the leader and isr path in zookeeper is empty"
                            ),
                        )
                    continue
                if state.controller_epoch > self.context.epoch:
                    self._log_failed(
                        PartitionAndReplica(tp, replica_id),
                        R.ONLINE,
                        R.OFFLINE,
                        ControllerMovedException(
                            f"Controller moved to another broker. Aborting controller epoch {self.context.epoch} ISR "
                            f"update for partition {tp}; zk has controller epoch {state.controller_epoch}"
                        ),
                    )
                    continue
                lai = state.leader_and_isr
                if replica_id not in lai.isr:
                    done[tp] = LeaderIsrAndControllerEpoch(lai, self.context.epoch)
                    self.context.partition_leadership_info[tp] = done[tp]
                    continue
                leader = NO_LEADER if lai.leader == replica_id else lai.leader
                # The last ISR member stays: it is the only replica known to have all committed data.
                isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica_id)
                to_write[tp] = lai.new_leader_and_isr(leader, isr)
            if not to_write:
                break
            result = self.zk.update_leader_and_isr(
                to_write, self.context.epoch, self.context.epoch_zk_version
            )
            for tp, lai in result.successful.items():
                done[tp] = LeaderIsrAndControllerEpoch(lai, self.context.epoch)
                self.context.partition_leadership_info[tp] = done[tp]
            for tp, e in result.failed.items():
                self._log_failed(PartitionAndReplica(tp, replica_id), R.ONLINE, R.OFFLINE, e)
            remaining = list(result.to_retry)
        return done

    def _isr_states(
        self, replica_id: int, partitions: list[TopicPartition], from_cache: bool
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """The states to shrink from. Kafka reads them all from ZooKeeper; on a first attempt the
        cached state of a partition whose cached ISR holds the replica is used instead (a
        controlled shutdown of a broker following thousands of partitions spent seconds on those
        reads). That is safe because each write is conditional on the cached zk version: a state
        changed meanwhile (a leader's ISR update) fails with BADVERSION and is re-read on retry.
        A cached ISR without the replica may be stale the other way, so those are read."""
        if not from_cache:
            return self.zk.get_partition_states(partitions)
        return cached_or_read_states(
            self.zk,
            self.context.partition_leadership_info,
            partitions,
            lambda state: replica_id in state.leader_and_isr.isr,
        )

    def _log_failed(
        self, replica: PartitionAndReplica, current: ReplicaState, target: ReplicaState, e: BaseException
    ) -> None:
        self._state_change_logger.with_controller_epoch(self.context.epoch).error(
            f"Controller {self.controller_id} epoch {self.context.epoch} initiated state change of replica "
            f"{replica.replica} for partition {replica.topic_partition} from {current} to {target} failed: {e}"
        )
