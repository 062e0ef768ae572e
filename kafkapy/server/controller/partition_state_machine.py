"""PartitionStateMachine: moves partitions between NewPartition, OnlinePartition, OfflinePartition
and NonExistentPartition (table in states.py), as Kafka's ZkPartitionStateMachine does.

- NonExistent -> New: replicas are assigned (already in the context); nothing else.
- New -> Online: first live replica leads, live replicas form the ISR; create the /state znode;
  LeaderAndIsr to the ISR (is_new) and UpdateMetadata to every live broker.
- Offline/Online -> Online: elect with a strategy (election.py), write /state conditionally on
  its zk version (re-read and retry on conflicts), LeaderAndIsr to the recipients.
- New/Online/Offline -> Offline, Offline -> NonExistent: only the state changes.
A batch splits into valid and invalid transitions; invalid ones are logged per partition and the
others proceed. Requests accumulate in the ControllerBrokerRequestBatch and go out at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.server.controller import election
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.election import ElectionResult, ElectionStrategy
from kafkapy.server.controller.errors import StateChangeFailedException
from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
    describe,
    initial_leader_and_isr,
)
from kafkapy.server.controller.request_batch import ControllerBrokerRequestBatch
from kafkapy.server.controller.state_change_log import ControllerLogger, StateChangeLogger
from kafkapy.server.controller.states import PartitionState, is_valid_transition
from kafkapy.server.controller.zk_interface import ControllerZk, cached_or_read_states
from kafkapy.server.metrics.process_metrics import LEADER_ELECTION, UNCLEAN_LEADER_ELECTIONS

P = PartitionState
# partition -> the LeaderAndIsr it got, or why it failed
Results = dict[TopicPartition, LeaderAndIsr | Exception]


class PartitionStateMachine:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk: ControllerZk,
        batch: ControllerBrokerRequestBatch,
        unclean_leader_election_default: Callable[[], bool] = lambda: False,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.zk = zk
        self.batch = batch
        self._unclean_default = unclean_leader_election_default
        self._state_change_logger = StateChangeLogger(controller_id)
        self.log = ControllerLogger(f"[PartitionStateMachine controllerId={controller_id}] ")

    # --- lifecycle -------------------------------------------------------------------------------

    def startup(self) -> None:
        self.log.info("Initializing partition state")
        self._initialize_partition_state()
        self.log.info("Triggering online partition state changes")
        self.trigger_online_partition_state_change()
        self.log.debug(
            f"Started partition state machine with initial state -> {self.context.partition_states}"
        )

    def shutdown(self) -> None:
        self.context.partition_states.clear()
        self.log.info("Stopped partition state machine")

    def _initialize_partition_state(self) -> None:
        for tp in self.context.all_partitions:
            info = self.context.partition_leadership_info.get(tp)
            if info is None:
                self.context.partition_states[tp] = P.NEW
            elif self.context.is_replica_online(info.leader_and_isr.leader, tp):
                self.context.partition_states[tp] = P.ONLINE
            else:
                self.context.partition_states[tp] = P.OFFLINE

    def trigger_online_partition_state_change(self, topic: str | None = None) -> Results:
        """Try to bring every New/Offline partition online, except those of topics being deleted."""
        partitions = [
            tp
            for tp, state in self.context.partition_states.items()
            if (topic is None or tp.topic == topic)
            and state in (P.NEW, P.OFFLINE)
            and not self.context.is_topic_queued_up_for_deletion(tp.topic)
        ]
        return self.handle_state_changes(partitions, P.ONLINE, ElectionStrategy.OFFLINE)

    # --- transitions -----------------------------------------------------------------------------

    def handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        strategy: ElectionStrategy | None = None,
    ) -> Results:
        if not partitions:
            return {}
        try:
            self.batch.new_batch()
            results = self._do_handle_state_changes(list(partitions), target, strategy)
            self.batch.send_requests_to_brokers(self.context.epoch)
            return results
        except ControllerMovedException as e:
            # Another controller was elected: nothing more may be written; the caller resigns.
            self.log.error(
                f"Controller moved to another broker when moving some partitions to {target} state", e
            )
            self.batch.clear()
            raise
        except Exception as e:  # noqa: BLE001 - Kafka's behaviour: log, fail the lot, keep running
            self.log.error(f"Error while moving some partitions to {target} state", e)
            self.batch.clear()
            return {tp: e for tp in partitions}

    def _do_handle_state_changes(
        self, partitions: list[TopicPartition], target: PartitionState, strategy: ElectionStrategy | None
    ) -> Results:
        log = self._state_change_logger.with_controller_epoch(self.context.epoch)
        states = self.context.partition_states
        for tp in partitions:
            states.setdefault(tp, P.NON_EXISTENT)
        valid = [tp for tp in partitions if is_valid_transition(states[tp], target)]
        results: Results = {}
        for tp in partitions:
            if not is_valid_transition(states[tp], target):
                e = StateChangeFailedException(
                    f"Partition {tp} should be in one of {','.join(sorted(map(str, target.valid_previous_states)))} "
                    f"states before moving to {target} state. Instead it is in {states[tp]} state"
                )
                self._log_failed(tp, states[tp], target, e)
                results[tp] = e

        if target is P.ONLINE:
            uninitialized = [tp for tp in valid if states[tp] is P.NEW]
            to_elect = [tp for tp in valid if states[tp] in (P.OFFLINE, P.ONLINE)]
            if uninitialized:
                results.update(self._initialize_leader_and_isr(uninitialized))
            if to_elect:
                if strategy is None:
                    raise ValueError(
                        "an election strategy is needed to move Online/Offline partitions Online"
                    )
                results.update(self._elect_leaders(to_elect, strategy))
            for tp in uninitialized + to_elect:
                outcome = results.get(tp)
                if isinstance(outcome, LeaderAndIsr):
                    log.info(
                        f"Changed partition {tp} from {states[tp]} to {target} with state {describe(outcome)}"
                    )
                    states[tp] = P.ONLINE
        else:
            trace = log.trace_enabled()
            for tp in valid:
                if target is P.NEW:
                    replicas = ",".join(map(str, self.context.partition_replica_assignment(tp)))
                    log.info(
                        f"Changed partition {tp} state from {states[tp]} to {target} with assigned replicas {replicas}"
                    )
                elif trace:  # Offline and NonExistent: Kafka's TRACE
                    log.trace(f"Changed partition {tp} state from {states[tp]} to {target}")
                states[tp] = target
                if target is P.NON_EXISTENT:
                    # Forget the partition entirely; the topic is going away.
                    del states[tp]
        return results

    def _initialize_leader_and_isr(self, partitions: list[TopicPartition]) -> Results:
        results: Results = {}
        to_create: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            replicas = self.context.partition_replica_assignment(tp)
            live = [r for r in replicas if self.context.is_replica_online(r, tp)]
            if not live:
                e = StateChangeFailedException(
                    f"Controller {self.controller_id} epoch {self.context.epoch} encountered error during state "
                    f"change of partition {tp} from New to Online, assigned replicas are "
                    f"[{','.join(map(str, replicas))}], live brokers are "
                    f"[{','.join(map(str, sorted(self.context.live_broker_ids)))}]. No assigned replica is alive."
                )
                self._log_failed(tp, P.NEW, P.ONLINE, e)
                results[tp] = e
                continue
            to_create[tp] = LeaderIsrAndControllerEpoch(initial_leader_and_isr(live), self.context.epoch)
        if not to_create:
            return results
        try:
            outcomes = self.zk.create_partition_states(to_create, self.context.epoch_zk_version)
        except ControllerMovedException:
            raise
        except Exception as e:  # noqa: BLE001
            for tp in to_create:
                self._log_failed(tp, P.NEW, P.ONLINE, e)
                results[tp] = e
            return results
        for tp, state in to_create.items():
            error = outcomes.get(tp)
            if error is None:
                self.context.partition_leadership_info[tp] = state
                self.batch.add_leader_and_isr_request_for_brokers(
                    state.leader_and_isr.isr,
                    tp,
                    state,
                    self.context.partition_full_replica_assignment(tp),
                    is_new=True,
                )
                results[tp] = state.leader_and_isr
            else:
                self._log_failed(tp, P.NEW, P.ONLINE, error)
                results[tp] = error
        return results

    def _elect_leaders(self, partitions: list[TopicPartition], strategy: ElectionStrategy) -> Results:
        """Elect repeatedly: zk version conflicts (the leader changed the ISR meanwhile) are retried
        after re-reading the /state znodes; other failures are final."""
        results: Results = {}
        remaining = partitions
        # A controlled shutdown's first attempt starts from the cached states (_election_states).
        from_cache = strategy is ElectionStrategy.CONTROLLED_SHUTDOWN
        while remaining:
            with LEADER_ELECTION.time():
                success, remaining, failed = self._do_elect_leaders(remaining, strategy, from_cache)
            from_cache = False
            results.update(success)
            for tp, e in failed.items():
                self._log_failed(tp, self.context.partition_states[tp], P.ONLINE, e)
                results[tp] = e
        return results

    def _do_elect_leaders(
        self, partitions: list[TopicPartition], strategy: ElectionStrategy, from_cache: bool = False
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition], dict[TopicPartition, Exception]]:
        try:
            current_states = self._election_states(partitions, from_cache)
        except ControllerMovedException:
            raise
        except Exception as e:  # noqa: BLE001
            return {}, [], {tp: e for tp in partitions}
        failed: dict[TopicPartition, Exception] = {}
        valid: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch]] = []
        for tp in partitions:
            state = current_states.get(tp)
            if state is None:
                failed[tp] = StateChangeFailedException(
                    f"LeaderAndIsr information doesn't exist for partition {tp} in "
                    f"{self.context.partition_states[tp]} state"
                )
            elif state.controller_epoch > self.context.epoch:
                failed[tp] = StateChangeFailedException(
                    f"Aborted leader election for partition {tp} since the LeaderAndIsr path was already "
                    f"written by another controller. This probably means that the current controller "
                    f"{self.controller_id} went through a soft failure and another controller was elected "
                    f"with epoch {state.controller_epoch}."
                )
            else:
                valid.append((tp, state))
        if not valid:
            return {}, [], failed

        elections = self._run_elections(valid, strategy)
        new_states: dict[TopicPartition, LeaderAndIsr] = {}
        recipients: dict[TopicPartition, tuple[int, ...]] = {}
        reread: list[TopicPartition] = []
        for result in elections:
            if result.leader_and_isr is None:
                if from_cache:
                    # Nothing is written, so no zk version can catch a stale cached ISR: the
                    # election is run again from what ZooKeeper holds.
                    reread.append(result.partition)
                    continue
                failed[result.partition] = StateChangeFailedException(
                    f"Failed to elect leader for partition {result.partition} under strategy {strategy}"
                )
            else:
                new_states[result.partition] = result.leader_and_isr
                recipients[result.partition] = result.recipients
        if not new_states:
            return {}, reread, failed
        update = self.zk.update_leader_and_isr(new_states, self.context.epoch, self.context.epoch_zk_version)
        previous_isr = {tp: s.leader_and_isr.isr for tp, s in valid}
        for tp, lai in update.successful.items():
            if lai.leader not in previous_isr[tp]:
                UNCLEAN_LEADER_ELECTIONS.inc()  # a leader from outside the ISR
            state = LeaderIsrAndControllerEpoch(lai, self.context.epoch)
            self.context.partition_leadership_info[tp] = state
            self.batch.add_leader_and_isr_request_for_brokers(
                recipients[tp], tp, state, self.context.partition_full_replica_assignment(tp), is_new=False
            )
        failed.update(update.failed)
        return dict(update.successful), [*update.to_retry, *reread], failed

    def _election_states(
        self, partitions: list[TopicPartition], from_cache: bool
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """The states to elect from. Kafka reads them all from ZooKeeper; a controlled shutdown's
        first attempt takes the cached state of each partition that has one instead (reading the
        ~3.3k states of the partitions a broker leads at 10k took ~1-1.4 s of its ~2 s of
        controller time, the pipelined reads paying a thread hand-off each). That is safe
        because each write is conditional on the cached zk version: a state changed meanwhile
        (a leader's ISR update) fails with BADVERSION and is re-read on the retry, and an
        election that finds no leader in a cached state is retried from ZooKeeper as well."""
        if not from_cache:
            return self.zk.get_partition_states(partitions)
        return cached_or_read_states(
            self.zk, self.context.partition_leadership_info, partitions, lambda _state: True
        )

    def _run_elections(
        self, states: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch]], strategy: ElectionStrategy
    ) -> list[ElectionResult]:
        ctx = self.context
        if strategy in (ElectionStrategy.OFFLINE, ElectionStrategy.OFFLINE_UNCLEAN):
            # Unclean election is a per-topic config; only look it up where it could matter.
            needs_config = {
                tp.topic
                for tp, s in states
                if not any(ctx.is_replica_online(r, tp) for r in s.leader_and_isr.isr)
            }
            if strategy is ElectionStrategy.OFFLINE_UNCLEAN:
                unclean = dict.fromkeys(needs_config, True)
            elif needs_config:
                unclean = self.zk.get_unclean_leader_election_enabled(needs_config, self._unclean_default())
            else:
                unclean = {}
            return [
                election.leader_for_offline(
                    tp,
                    s.leader_and_isr,
                    ctx.partition_replica_assignment(tp),
                    lambda r, tp=tp: ctx.is_replica_online(r, tp),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                    unclean.get(tp.topic, False),
                )
                for tp, s in states
            ]
        if strategy is ElectionStrategy.PREFERRED:
            return [
                election.leader_for_preferred_replica(
                    tp,
                    s.leader_and_isr,
                    ctx.partition_replica_assignment(tp),
                    lambda r, tp=tp: ctx.is_replica_online(r, tp),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                )
                for tp, s in states
            ]
        if strategy is ElectionStrategy.CONTROLLED_SHUTDOWN:
            shutting_down = set(ctx.shutting_down_broker_ids)
            return [
                election.leader_for_controlled_shutdown(
                    tp,
                    s.leader_and_isr,
                    ctx.partition_replica_assignment(tp),
                    lambda r, tp=tp: ctx.is_replica_online(r, tp, include_shutting_down=True),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                    shutting_down,
                )
                for tp, s in states
            ]
        # REASSIGN: the target replicas are the assignment minus the replicas being removed.
        results = []
        for tp, s in states:
            full = ctx.partition_full_replica_assignment(tp)
            target = [r for r in full.replicas if r not in full.removing_replicas]
            results.append(
                election.leader_for_reassign(
                    tp,
                    s.leader_and_isr,
                    target,
                    lambda r, tp=tp: ctx.is_replica_online(r, tp),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                )
            )
        return results

    # --- queries and logging ---------------------------------------------------------------------

    def partitions_in_state(
        self, state: PartitionState, partitions: Iterable[TopicPartition] | None = None
    ) -> list[TopicPartition]:
        wanted = None if partitions is None else set(partitions)
        return [
            tp
            for tp, s in self.context.partition_states.items()
            if s is state and (wanted is None or tp in wanted)
        ]

    def _log_failed(
        self, tp: TopicPartition, current: PartitionState, target: PartitionState, e: BaseException
    ) -> None:
        self._state_change_logger.with_controller_epoch(self.context.epoch).error(
            f"Controller {self.controller_id} epoch {self.context.epoch} failed to change state for partition "
            f"{tp} from {current} to {target}: {e}"
        )
