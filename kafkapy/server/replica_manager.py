"""ReplicaManager: the partitions this broker hosts, and the produce and fetch paths into them.

State changes come only from the controller (LeaderAndIsr, StopReplica). Appends and reads run
on the event loop; the log's own lock covers the background flush and retention threads and the
replica fetcher threads, which append a follower's data straight to its Log.

Replication, as in Kafka's ZooKeeper mode: a follower partition is handed to the
ReplicaFetcherManager (threads fetching from the leader); a leader learns its followers'
positions from their fetches (`read_from_local_log` with a replica id), moves its high
watermark, completes the produce and fetch requests waiting for it, and asks the IsrManager to
write ISR expansions and shrinks to ZooKeeper.

A log dir that fails (reported to the LogManager's LogDirFailureChannel) is handled by the
LogDirFailureHandler thread through `handle_log_dir_failure`: the partitions in it become offline
(KAFKA_STORAGE_ERROR to clients and to the controller's LeaderAndIsr), their fetchers stop, and
the broker tells the controller with a /log_dir_event_notification znode.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH
from kafkapy.protocol.errors import (
    ControllerMovedException,
    CorruptRecordException,
    InvalidRecordException,
    KafkaError,
    KafkaStorageException,
    NotLeaderOrFollowerException,
    OffsetOutOfRangeException,
    RecordBatchTooLargeException,
    RecordTooLargeException,
    TimeoutException,
    UnknownTopicOrPartitionException,
    error_code,
)
from kafkapy.protocol.file_region import FileRegion
from kafkapy.protocol.generated.leader_and_isr_request import LeaderAndIsrPartitionState, LeaderAndIsrRequest
from kafkapy.protocol.generated.leader_and_isr_response import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from kafkapy.protocol.generated.stop_replica_request import StopReplicaRequest
from kafkapy.protocol.generated.stop_replica_response import StopReplicaPartitionError, StopReplicaResponse
from kafkapy.server.fetch_session_watch import FetchSessionWatch
from kafkapy.server.isr_manager import IsrManager
from kafkapy.server.log_dir_failure_handler import LogDirFailureHandler
from kafkapy.server.metrics.meters import BrokerTopicStats
from kafkapy.server.partition import Partition, now_ms
from kafkapy.server.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkapy.server.replica_fetcher_manager import ReplicaFetcherManager
from kafkapy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    FetcherConfig,
    InitialFetchState,
    ReplicaFetcherThread,
)
from kafkapy.server.replication_quota import ReplicationQuotaManager

log = logging.getLogger("kafkapy.server.ReplicaManager")
state_change_log = logging.getLogger("state.change.logger")

STALE_CONTROLLER_EPOCH = ControllerMovedException.code
# LeaderAndIsr creating at least this many logs creates them on LOG_CREATION_THREADS threads.
LOG_CREATION_PARALLEL_MIN = 32
LOG_CREATION_THREADS = 4
# Appends refused for what the records are (BytesRejectedPerSec), not for where they were sent.
_REJECTED_BYTES_ERRORS = frozenset(
    (RecordTooLargeException.code, CorruptRecordException.code, InvalidRecordException.code)
)
# Kafka's FailedProduceRequestsPerSec leaves out the errors it expects (a client's stale
# metadata, oversized or corrupt records, a failed disk): it counts unexpected failures.
_EXPECTED_APPEND_ERRORS = frozenset(
    (
        UnknownTopicOrPartitionException.code,
        NotLeaderOrFollowerException.code,
        RecordTooLargeException.code,
        RecordBatchTooLargeException.code,
        CorruptRecordException.code,
        KafkaStorageException.code,
    )
)


@dataclass(slots=True)
class ProduceResult:
    error_code: int = 0
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    last_offset: int = -1


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """One partition of an OffsetForLeaderEpoch answer, named as the response's fields."""

    error_code: int
    partition: int
    leader_epoch: int = -1
    end_offset: int = -1


READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Fetch/ListOffsets isolation_level


@dataclass(slots=True)
class FetchResult:
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: list[FileRegion] = field(default_factory=list)
    size: int = 0
    # read_committed only: (producer id, first offset) of the aborted transactions in range.
    aborted_transactions: list[tuple[int, int]] | None = None


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: Any,
        log_config_for: Callable[[str], Any],
        config: Any = None,
        zk: Callable[[], Any] | None = None,
        leader_quota: ReplicationQuotaManager | None = None,
        fetcher_connect: Callable[..., Any] | None = None,
        topic_stats: BrokerTopicStats | None = None,
    ) -> None:
        self.broker_id = broker_id
        # BrokerTopicMetrics, bumped once per produced partition (never per record), on the loop.
        self.topic_stats = topic_stats if topic_stats is not None else BrokerTopicStats()
        # Leader-side replication throttle (Kafka's quotas.leader); None: never throttle.
        self.leader_quota = leader_quota
        self.log_manager = log_manager
        self.log_config_for = log_config_for  # topic -> LogConfig (blocking: reads ZooKeeper)
        self.partitions: dict[TopicPartition, Partition] = {}
        # Kafka's HostedPartition.Offline: replicas whose log dir failed (until a restart).
        self.offline_partitions: set[TopicPartition] = set()
        self._zk = zk or (lambda: None)
        self._failure_handler: LogDirFailureHandler | None = None
        self.controller_epoch = 0
        # Kafka's KafkaServer.isShuttingDown, shared with the replica manager: set before the
        # controlled shutdown, so the followerships that shutdown hands this broker start no
        # fetcher (below).
        self.is_shutting_down = False
        self.produce_purgatory = DelayedOperationPurgatory("Produce")
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch")
        # Followers' fetch sessions, told of every change to their partitions (KIP-227 sessions
        # that read only what changed): every place that checks the fetch purgatory tells it too.
        self.fetch_session_watch = FetchSessionWatch(self.fetch_purgatory)
        self.delete_records_purgatory = DelayedOperationPurgatory("DeleteRecords")
        self.replica_lag_time_max_ms = int(config.replica_lag_time_max_ms) if config is not None else 30000
        self.fetcher_manager = ReplicaFetcherManager(
            broker_id,
            FetcherConfig.from_config(config) if config is not None else FetcherConfig(),
            int(config.num_replica_fetchers) if config is not None else 1,
            # The followers' connections to leaders: BrokerConnection with the inter-broker
            # listener's TLS/SASL settings when the broker gives them.
            **(
                {"thread_factory": partial(ReplicaFetcherThread, connect=fetcher_connect)}  # type: ignore[arg-type]  # the keyword is thread_factory
                if fetcher_connect
                else {}
            ),
        )
        self.isr_manager = IsrManager(
            broker_id,
            zk or (lambda: None),
            self._leader_partitions,
            self._on_isr_updated,
            self.replica_lag_time_max_ms,
        )

    # -- controller requests --------------------------------------------------------------------

    def become_leader_or_follower(
        self, request: LeaderAndIsrRequest, topic_configs: dict[str, Any]
    ) -> LeaderAndIsrResponse:
        """Apply LeaderAndIsr; `topic_configs` holds the LogConfig of each topic (read off-loop)."""
        if request.controller_epoch < self.controller_epoch:
            state_change_log.warning(
                "[Broker id=%d] Ignoring LeaderAndIsr request from controller %d with epoch %d since its "
                "controller epoch is older than the current %d",
                self.broker_id,
                request.controller_id,
                request.controller_epoch,
                self.controller_epoch,
            )
            return LeaderAndIsrResponse(error_code=STALE_CONTROLLER_EPOCH)
        self.controller_epoch = request.controller_epoch
        leaders = {
            ll.broker_id: BrokerEndPoint(ll.broker_id, ll.host_name, ll.port) for ll in request.live_leaders
        }
        new_fetches: dict[TopicPartition, InitialFetchState] = {}
        # Partitions whose waiting requests are checked once all states are applied (nothing
        # else runs on the loop meanwhile), each waiting request once for all of them.
        touched: list[TopicPartition] = []
        # Fetching stops first, for every partition that changes role or leader at once, as
        # Kafka's makeLeaders/makeFollowers: nothing from an old leader may land once we lead
        # or follow another. One call, not one per partition: each call takes every fetcher's
        # lock, wakes it and logs a line (3.3k of each per LeaderAndIsr of a 10k-partition
        # controlled shutdown).
        stopping = [
            tp
            for ts in request.topic_states
            for ps in ts.partition_states
            if self._stops_fetching(tp := TopicPartition(ts.topic_name, ps.partition_index), ps)
        ]
        if stopping:
            self.fetcher_manager.remove_fetcher_for_partitions(stopping)
        topics_out = []
        for ts in request.topic_states:
            topic_id = ts.topic_id  # the codec yields uuid.UUID, the zero UUID when absent
            errors = []
            for ps in ts.partition_states:
                tp = TopicPartition(ts.topic_name, ps.partition_index)
                try:
                    code = self._apply_partition_state(
                        tp, ps, request, topic_id, topic_configs[ts.topic_name], leaders, new_fetches, touched
                    )
                except KafkaError as e:
                    code = e.code
                except Exception:
                    state_change_log.exception(
                        "[Broker id=%d] Error applying LeaderAndIsr for %s", self.broker_id, tp
                    )
                    code = KafkaStorageException.code
                errors.append(LeaderAndIsrPartitionError(partition_index=ps.partition_index, error_code=code))
                if code == 0 and (future := self.log_manager.take_future_log(tp)) is not None:
                    # A log-dir move the last run did not finish: carry on now the replica is hosted
                    # (Kafka's becomeLeaderOrFollower starts its ReplicaAlterLogDirsThread here).
                    self.log_manager.moves.resume(tp, self.partitions[tp].log, future)
            topics_out.append(LeaderAndIsrTopicError(topic_id=topic_id, partition_errors=errors))
        self._complete_delayed_all(touched)
        if new_fetches and self.is_shutting_down:
            self._skip_fetchers_while_shutting_down(request, new_fetches)
        elif new_fetches:
            self.fetcher_manager.add_fetcher_for_partitions(new_fetches)
        self.fetcher_manager.shutdown_idle_fetcher_threads()
        return LeaderAndIsrResponse(error_code=0, topics=topics_out)

    def _skip_fetchers_while_shutting_down(
        self, request: LeaderAndIsrRequest, new_fetches: dict[TopicPartition, InitialFetchState]
    ) -> None:
        """As Kafka's makeFollowers once its broker is shutting down: the controlled shutdown
        makes this broker a follower of every partition it led, and a fetcher started now would
        truncate, catch up and so put this broker back into the ISRs it is leaving: each new
        leader would write that ISR change to ZooKeeper, and its acks=all produces would wait
        for a replica about to stop."""
        if not state_change_log.isEnabledFor(logging.DEBUG):
            return
        for tp, state in new_fetches.items():
            state_change_log.debug(
                "[Broker id=%d] Skipped the adding-fetcher step of the become-follower state change from "
                "controller %d epoch %d for partition %s with leader %d since it is shutting down",
                self.broker_id,
                request.controller_id,
                request.controller_epoch,
                tp,
                state.leader.id,
            )

    def create_missing_logs(self, request: LeaderAndIsrRequest, topic_configs: dict[str, Any]) -> int:
        """Create, off the event loop, the logs a LeaderAndIsr will need: a broker becoming a
        replica of thousands of partitions at once would otherwise stall every request for the
        seconds their files take. Only reads the partition map; a log that cannot be created here
        is left to `become_leader_or_follower`, which answers its error. Returns logs created."""
        if request.controller_epoch < self.controller_epoch:
            return 0
        wanted: list[tuple[TopicPartition, Any, bool]] = []
        for ts in request.topic_states:
            config = topic_configs[ts.topic_name]
            for ps in ts.partition_states:
                tp = TopicPartition(ts.topic_name, ps.partition_index)
                if (
                    tp in self.partitions
                    or tp in self.offline_partitions
                    or self.broker_id not in ps.replicas
                ):
                    continue
                if self.log_manager.get_log(tp) is None:
                    wanted.append((tp, config, bool(getattr(ps, "is_new", True))))

        def create(job: tuple[TopicPartition, Any, bool]) -> bool:
            tp, config, is_new = job
            try:
                self.log_manager.get_or_create_log(tp, config, is_new=is_new)
            except Exception:  # noqa: BLE001 - answered per partition by the request itself
                return False
            return True

        if len(wanted) < LOG_CREATION_PARALLEL_MIN:
            return sum(map(create, wanted))
        # Creating a log is a few mkdir/open/ftruncate calls that wait on the file system with
        # the GIL released: a handful of threads make thousands of them several times faster.
        with ThreadPoolExecutor(LOG_CREATION_THREADS, thread_name_prefix="log-creation") as pool:
            return sum(pool.map(create, wanted))

    def _stops_fetching(self, tp: TopicPartition, ps: LeaderAndIsrPartitionState) -> bool:
        """Whether `_apply_partition_state` will apply `ps` to a hosted replica that then leads,
        or follows another leader or epoch: its fetcher must stop before any state is applied."""
        partition = self.partitions.get(tp)
        if partition is None or tp in self.offline_partitions or self.broker_id not in ps.replicas:
            return False  # no fetcher yet, or the state is refused
        if ps.leader_epoch < partition.leader_epoch:
            return False
        return ps.leader == self.broker_id or _follower_change(partition, ps) is FollowerChange.ANEW

    def _apply_partition_state(
        self,
        tp: TopicPartition,
        ps: LeaderAndIsrPartitionState,
        request: LeaderAndIsrRequest,
        topic_id: uuid.UUID,
        config: Any,
        leaders: dict[int, BrokerEndPoint],
        new_fetches: dict[TopicPartition, InitialFetchState],
        touched: list[TopicPartition],
    ) -> int:
        if tp in self.offline_partitions:
            state_change_log.warning(
                "[Broker id=%d] Ignoring LeaderAndIsr request from controller %d epoch %d for partition %s as the "
                "local replica for the partition is in an offline log directory",
                self.broker_id, request.controller_id, request.controller_epoch, tp,
            )  # fmt: skip
            return KafkaStorageException.code
        partition = self.partitions.get(tp)
        if partition is not None and ps.leader_epoch < partition.leader_epoch:
            state_change_log.info(
                "[Broker id=%d] Ignoring LeaderAndIsr for %s: leader epoch %d is older than the current %d",
                self.broker_id,
                tp,
                ps.leader_epoch,
                partition.leader_epoch,
            )
            return STALE_CONTROLLER_EPOCH
        if self.broker_id not in ps.replicas:
            return UnknownTopicOrPartitionException.code
        before = None if partition is None else _completion_state(partition)
        if partition is None:
            # is_new: a LeaderAndIsr v1+ field (hand-built states in tests may leave it out).
            the_log = self.log_manager.get_or_create_log(tp, config, is_new=bool(getattr(ps, "is_new", True)))
            partition = Partition(tp, self.broker_id, the_log, self.replica_lag_time_max_ms)
            self.partitions[tp] = partition
        if ps.leader == self.broker_id:
            partition.make_leader(ps, request.controller_epoch, topic_id)  # its fetcher is stopped
            # A shrunken ISR or a new epoch can satisfy (or fail) acks=all produces and fetches
            # waiting here: answer them now, not at their timeout (Kafka's makeLeader does too).
            if before != _completion_state(partition):
                touched.append(tp)
            role = "leader"
        else:
            change = _follower_change(partition, ps)  # ANEW: its fetcher is stopped
            restart = change is not FollowerChange.NONE
            partition.make_follower(ps, request.controller_epoch, topic_id)
            # Requests waiting for this partition as leader answer now (NOT_LEADER_OR_FOLLOWER).
            if before != _completion_state(partition):
                touched.append(tp)
            role = "follower"
            leader = leaders.get(ps.leader)
            if restart and leader is not None:
                new_fetches[tp] = InitialFetchState(
                    leader, ps.leader_epoch, partition.log, resume=change is FollowerChange.NEXT_EPOCH
                )
            elif restart:
                state_change_log.info(
                    "[Broker id=%d] Leader %d of %s is not alive: no fetcher until it is",
                    self.broker_id,
                    ps.leader,
                    tp,
                )
        # Per partition at TRACE (DEBUG here, as the controller's StateChangeLogger.trace), as
        # Kafka's makeLeaders/makeFollowers: at INFO, a LeaderAndIsr of thousands of partitions
        # spent ~0.3 s of the event loop on these lines alone.
        if state_change_log.isEnabledFor(logging.DEBUG):
            state_change_log.debug(
                "[Broker id=%d] Completed LeaderAndIsr request from controller %d epoch %d for the %s "
                "transition for partition %s%s (leader epoch %d, isr %s, replicas %s)",
                self.broker_id,
                request.controller_id,
                request.controller_epoch,
                "become-leader" if role == "leader" else "become-follower",
                tp,
                "" if role == "leader" else f" with leader {ps.leader}",
                ps.leader_epoch,
                list(ps.isr),
                list(ps.replicas),
            )
        return 0

    def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        if request.controller_epoch < self.controller_epoch:
            return StopReplicaResponse(error_code=STALE_CONTROLLER_EPOCH)
        self.controller_epoch = request.controller_epoch
        out: list[StopReplicaPartitionError] = []
        # Fetchers go first: once this returns, no fetcher writes to these logs any more.
        self.fetcher_manager.remove_fetcher_for_partitions(
            TopicPartition(ts.topic_name, ps.partition_index)
            for ts in request.topic_states
            for ps in ts.partition_states
        )
        stopped: list[TopicPartition] = []
        for ts in request.topic_states:
            for ps in ts.partition_states:
                tp = TopicPartition(ts.topic_name, ps.partition_index)
                if tp in self.offline_partitions:  # its log dir failed: nothing can be stopped or deleted
                    out.append(StopReplicaPartitionError(
                        topic_name=tp.topic, partition_index=tp.partition, error_code=KafkaStorageException.code
                    ))  # fmt: skip
                    continue
                partition = self.partitions.pop(tp, None)
                if ps.delete_partition:
                    if partition is not None or self.log_manager.get_log(tp) is not None:
                        self.log_manager.delete_log(tp)
                elif partition is not None:
                    partition.leader_id = -1
                if state_change_log.isEnabledFor(logging.DEBUG):  # per partition at TRACE in Kafka
                    state_change_log.debug(
                        "[Broker id=%d] Stopped replica %s (delete=%s)",
                        self.broker_id,
                        tp,
                        ps.delete_partition,
                    )
                stopped.append(tp)
                out.append(
                    StopReplicaPartitionError(topic_name=tp.topic, partition_index=tp.partition, error_code=0)
                )
        self._complete_delayed_all(stopped)
        self.fetcher_manager.shutdown_idle_fetcher_threads()
        # A topic this broker no longer hosts loses its BrokerTopicMetrics, as in Kafka (the
        # all-topics counters keep what it counted).
        hosted = {tp.topic for tp in self.partitions}
        for topic in {ts.topic_name for ts in request.topic_states} - hosted:
            self.topic_stats.remove_topic(topic)
        return StopReplicaResponse(error_code=0, partition_errors=out)

    def leader_partition(
        self, tp: TopicPartition, current_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    ) -> Partition:
        """The partition if this broker leads it in the request's leader epoch (KIP-320).

        Partition.local_log_with_epoch inlined: the fetch path runs this for every partition,
        and a matching epoch must cost one comparison, not another call.
        """
        partition = self.partitions.get(tp)
        if partition is None:
            self._raise_not_hosted(tp)
        if current_leader_epoch != partition.leader_epoch:
            partition.check_current_leader_epoch(current_leader_epoch)  # raises unless no epoch was named
        if not partition.is_leader:
            raise NotLeaderOrFollowerException(
                f"Leader not local for partition {tp} on broker {self.broker_id}"
            )
        return partition

    def _raise_not_hosted(self, tp: TopicPartition) -> NoReturn:
        if tp in self.offline_partitions:
            raise KafkaStorageException(f"Partition {tp} is in an offline log directory")
        raise UnknownTopicOrPartitionException(f"This server does not host this topic-partition {tp}")

    def _gone_code(self, tp: TopicPartition) -> int:
        """A waiting request's answer for a partition no longer hosted here."""
        return (
            KafkaStorageException.code if tp in self.offline_partitions else NotLeaderOrFollowerException.code
        )

    def last_offset_for_leader_epoch(
        self, tp: TopicPartition, current_leader_epoch: int, leader_epoch: int, fetch_only_from_leader: bool
    ) -> EpochEndOffset:
        """OffsetForLeaderEpoch for one partition, its error as a value (Kafka's
        ReplicaManager.lastOffsetForLeaderEpoch)."""
        partition = self.partitions.get(tp)
        try:
            if partition is None:
                self._raise_not_hosted(tp)
            found = partition.last_offset_for_leader_epoch(
                current_leader_epoch, leader_epoch, fetch_only_from_leader
            )
        except KafkaError as e:
            return EpochEndOffset(e.code, tp.partition)
        return EpochEndOffset(0, tp.partition, found.leader_epoch, found.offset)

    # -- produce --------------------------------------------------------------------------------

    def append_records(
        self,
        required_acks: int,
        entries: Iterable[tuple[TopicPartition, Any]],
        *,
        from_coordinator: bool = False,
    ) -> dict[TopicPartition, ProduceResult]:
        """Append to the leaders; the caller waits in purgatory for acks=all (`await_isr`).

        `from_coordinator`: a coordinator's writes (transaction markers, transactional offset
        commits), which may hold control batches and carry no sequence numbers."""
        results: dict[TopicPartition, ProduceResult] = {}
        partitions = self.partitions
        topic_stats = self.topic_stats
        for tp, records in entries:
            stats = topic_stats.topics.get(tp.topic) or topic_stats.topic(tp.topic)
            stats.total_produce_requests += 1
            try:
                partition = partitions.get(tp)
                if partition is None or not partition.is_leader:
                    partition = self.leader_partition(tp)  # raises the error that says why
                info = partition.append_records_to_leader(records, required_acks, from_coordinator)
                results[tp] = ProduceResult(
                    0, info.first_offset, info.log_append_time, info.log_start_offset, None, info.last_offset
                )
                stats.bytes_in += len(records)
                stats.messages_in += info.num_messages
                self.fetch_purgatory.check_and_complete(tp)
                self.fetch_session_watch.changed(tp)
            except KafkaError as e:
                if e.code not in _EXPECTED_APPEND_ERRORS:
                    stats.failed_produce_requests += 1
                if e.code in _REJECTED_BYTES_ERRORS:
                    stats.bytes_rejected += len(records)
                results[tp] = ProduceResult(e.code, -1, -1, -1, e.message)
            except OSError as e:
                log.error("Error appending to %s", tp, exc_info=e)
                results[tp] = ProduceResult(KafkaStorageException.code, -1, -1, -1, str(e))
        return results

    def try_complete_acks_all(self, results: dict[TopicPartition, Any]) -> bool:
        """acks=all without waiting: True, with each result's final error code set, when every
        appended partition's high watermark already passes its last offset (a single-replica
        ISR), as Kafka's tryCompleteElseWatch completes such a produce at once."""
        outcomes = []
        for tp, r in results.items():
            if r.error_code:
                continue
            partition = self.partitions.get(tp)
            if partition is None:
                outcomes.append((r, self._gone_code(tp)))
                continue
            done, code = partition.check_enough_replicas_reached(r.last_offset + 1)
            if not done:
                return False
            outcomes.append((r, code))
        for r, code in outcomes:
            r.error_code = code
        return True

    async def await_isr(self, results: dict[TopicPartition, ProduceResult], timeout_ms: int) -> None:
        """acks=all: wait until every appended partition's high watermark passes its last offset."""
        pending = {tp: r for tp, r in results.items() if r.error_code == 0}
        # Each partition's outcome is fixed the moment it is reached, as Kafka's DelayedProduce
        # does: leadership may move on again before this coroutine resumes.
        outcomes: dict[TopicPartition, int] = {}

        def can_complete() -> bool:
            for tp, r in pending.items():
                if tp in outcomes:
                    continue
                partition = self.partitions.get(tp)
                if partition is None:
                    outcomes[tp] = self._gone_code(tp)
                    continue
                done, code = partition.check_enough_replicas_reached(r.last_offset + 1)
                if done:
                    outcomes[tp] = code
            return len(outcomes) == len(pending)

        op = DelayedOperation(can_complete)
        await self.produce_purgatory.try_complete_else_watch(op, pending, timeout_ms)
        for tp, r in pending.items():
            code = outcomes.get(tp)
            if code is None:
                r.error_code = TimeoutException.code
                r.error_message = "Timed out waiting for the ISR"
            else:
                r.error_code = code

    # -- fetch ----------------------------------------------------------------------------------

    def read_from_local_log(
        self,
        replica_id: int,
        isolation_level: int,
        fetch_max_bytes: int,
        partitions: list[tuple[TopicPartition, int, int, int]],
        update_follower_state: bool = True,
    ) -> dict[TopicPartition, FetchResult]:
        """Read (tp, fetch_offset, partition_max_bytes, current_leader_epoch) ranges as file
        regions, Kafka's limits applied.

        The first partition with data may exceed the limits by one batch, so a consumer always makes
        progress past a batch larger than its max.partition.fetch.bytes. A follower's fetch offsets
        count as its position when the request arrives, not again when a delayed fetch completes
        (as in Kafka): by then a LeaderAndIsr may have removed it from the ISR on purpose. A fetch
        fenced by its leader epoch (KIP-320) reads nothing and moves no follower state.
        """
        results: dict[TopicPartition, FetchResult] = {}
        remaining = fetch_max_bytes
        min_one = True
        # One check per fetch: with no throttled partition the loop below never looks at quotas.
        quota = self.leader_quota if replica_id >= 0 and self.leader_quota is not None else None
        if quota is not None and not quota.any_throttled:
            quota = None
        follower_update = replica_id >= 0 and update_follower_state
        at_ms = now_ms()  # one clock reading for the whole fetch, as Kafka's fetchTimeMs
        for tp, offset, part_max, current_leader_epoch in partitions:
            res = FetchResult()
            results[tp] = res
            try:
                partition = self.leader_partition(tp, current_leader_epoch)
                the_log = partition.log
                hw = the_log.high_watermark
                res.high_watermark = hw
                lso = res.last_stable_offset = the_log.last_stable_offset
                res.log_start_offset = the_log.log_start_offset
                # Consumers read up to the high watermark, read_committed ones up to the LSO.
                max_offset = None if replica_id >= 0 else lso if isolation_level == READ_COMMITTED else hw
                if offset == (the_log.log_end_offset if max_offset is None else max_offset):
                    # Caught up: nothing to read. The common case of an idle broker's fetches
                    # (each follower's covers every partition it replicates), kept off Log.read.
                    if isolation_level == READ_COMMITTED and replica_id < 0:
                        res.aborted_transactions = []
                else:
                    info = the_log.read(offset, min(part_max, max(remaining, 0)), max_offset, min_one)
                    if isolation_level == READ_COMMITTED and replica_id < 0:
                        res.aborted_transactions = (
                            [
                                (t.producer_id, t.first_offset)
                                for t in the_log.collect_aborted_transactions(offset, lso)
                            ]
                            if info.records
                            else []
                        )
                    res.records = list(info.records)
                    res.size = sum(r.length for r in res.records)
                if follower_update:
                    # Only a fetch the log could serve says where the follower is (an
                    # out-of-range offset must not count as caught up).
                    self._update_follower(partition, replica_id, offset, at_ms)
                if (
                    quota is not None
                    and quota.is_throttled(tp)
                    and self._leader_throttle(quota, partition, replica_id, res)
                ):
                    continue
                if res.size:
                    min_one = False
                    remaining -= res.size
            except KafkaError as e:
                res.error_code = e.code
            except Exception as e:  # a damaged segment must not take the whole fetch down
                log.error("Error reading %s at offset %d", tp, offset, exc_info=e)
                res.error_code = error_code(e)
        return results

    def _throttled_now(self, tp: TopicPartition, partition: Partition, replica_id: int) -> bool:
        quota = self.leader_quota
        return (
            replica_id >= 0
            and quota is not None
            and quota.any_throttled
            and quota.is_throttled(tp)
            and replica_id not in partition.isr
            and quota.is_quota_exceeded()
        )

    @staticmethod
    def _leader_throttle(
        quota: ReplicationQuotaManager, partition: Partition, replica_id: int, res: FetchResult
    ) -> bool:
        """Kafka's shouldLeaderThrottle: a throttled replica outside the ISR gets nothing while the
        leader's quota is exceeded; what it does get counts against the quota."""
        if replica_id not in partition.isr and quota.is_quota_exceeded():
            res.records, res.size = [], 0
            return True
        quota.record(res.size)
        return False

    def fetchable_bytes(
        self,
        tp: TopicPartition,
        offset: int,
        replica_id: int,
        limit: int,
        current_leader_epoch: int,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> int:
        """Bytes (up to about `limit`) a fetch at `offset` would get now, for a delayed fetch's
        min_bytes; -1 if it must answer at once (leadership or the leader epoch the fetch named
        moved on, as Kafka's DelayedFetch checks). Runs on every append to a watched partition,
        so it never looks further than the bytes still missing."""
        partition = self.partitions.get(tp)
        if partition is None or not partition.is_leader:
            return -1
        if (
            current_leader_epoch != partition.leader_epoch
            and current_leader_epoch != NO_PARTITION_LEADER_EPOCH
        ):
            return -1
        the_log = partition.log
        if replica_id >= 0:
            end = the_log.log_end_offset
        else:
            end = the_log.last_stable_offset if isolation_level == READ_COMMITTED else the_log.high_watermark
        if offset == end or self._throttled_now(tp, partition, replica_id):
            return 0  # a throttled follower waits out its long poll rather than spinning
        if offset > end or offset < the_log.log_start_offset:
            return -1
        try:
            info = the_log.read(offset, max(limit, 1), end, True)
        except (OffsetOutOfRangeException, KafkaStorageException):
            return -1  # answer now: the read will say why
        return sum(r.length for r in info.records)

    # -- replication ----------------------------------------------------------------------------

    def _update_follower(self, partition: Partition, replica_id: int, fetch_offset: int, at_ms: int) -> None:
        hw_moved, expanded_isr = partition.update_follower_fetch_state(replica_id, fetch_offset, at_ms)
        if expanded_isr is not None:
            self.isr_manager.maybe_expand_isr(partition, expanded_isr)
        if hw_moved:
            self._complete_delayed(partition.tp)

    def update_follower_log_start_offsets(self, replica_id: int, starts: dict[TopicPartition, int]) -> None:
        """A follower's fetch reported its log start offsets: DeleteRecords waiting on them may be done."""
        for tp, start in starts.items():
            partition = self.partitions.get(tp)
            remote = partition.remote_replicas.get(replica_id) if partition is not None else None
            if (
                remote is not None
                and partition is not None
                and partition.is_leader
                and remote.log_start_offset != start
            ):
                remote.log_start_offset = start
                self.delete_records_purgatory.check_and_complete(tp)

    def _on_isr_updated(self, partition: Partition) -> None:
        if self.partitions.get(partition.tp) is not partition:
            return
        if partition.maybe_increment_high_watermark():
            self._complete_delayed(partition.tp)
        else:
            # Written or not, the ISR change decides whether a follower's partition is idle.
            self.fetch_session_watch.changed(partition.tp)

    def log_start_offset_moved(self, tp: TopicPartition) -> None:
        """DeleteRecords moved a leader's log start offset: its followers' sessions must say so."""
        self.fetch_session_watch.changed(tp)

    def _complete_delayed(self, tp: TopicPartition) -> None:
        """The high watermark moved or leadership changed: acks=all produces and consumer
        fetches waiting on `tp` may be done."""
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)
        self.fetch_session_watch.changed(tp)
        self.delete_records_purgatory.check_and_complete(tp)

    def _complete_delayed_all(self, tps: list[TopicPartition]) -> None:
        """`_complete_delayed` for many partitions, each waiting request checked once."""
        if tps:
            self.produce_purgatory.check_and_complete_all(tps)
            self.fetch_purgatory.check_and_complete_all(tps)
            self.fetch_session_watch.changed_all(tps)
            self.delete_records_purgatory.check_and_complete_all(tps)

    def _leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    # -- a failed log dir -----------------------------------------------------------------------

    async def handle_log_dir_failure(self, log_dir: str, send_zk_notification: bool = True) -> None:
        """Kafka's ReplicaManager.handleLogDirFailure, on the event loop (which owns the partitions):
        the replicas and future replicas in `log_dir` stop, the LogManager closes the dir's logs
        (or halts the broker if it was the last dir), and the controller is told through ZooKeeper."""
        loop = asyncio.get_running_loop()
        if log_dir not in self.log_manager.log_dirs:
            return
        log.warning("Stopping serving replicas in dir %s", log_dir)
        offline = sorted(tp for tp, p in self.partitions.items() if _parent(p.log.dir) == log_dir)
        moving = sorted(
            tp
            for tp, future in self.log_manager.moves.future_logs().items()
            if _parent(future.dir) == log_dir
        )
        self.fetcher_manager.remove_fetcher_for_partitions(offline)
        for tp in offline:
            del self.partitions[tp]
            self.offline_partitions.add(tp)
            # Requests waiting on these partitions answer now, with KAFKA_STORAGE_ERROR.
            self._complete_delayed(tp)
        log.warning(
            "Broker %d stopped fetcher for partitions %s and stopped moving logs for partitions %s because they "
            "are in the failed log directory %s.",
            self.broker_id, ",".join(map(str, offline)), ",".join(map(str, moving)), log_dir,
        )  # fmt: skip
        # Off the loop: it waits for movers and the cleaner, and may halt the process.
        await loop.run_in_executor(None, self.log_manager.handle_log_dir_failure, log_dir)
        if send_zk_notification:
            zk = self._zk()
            if zk is not None:
                await loop.run_in_executor(None, zk.propagate_log_dir_event, self.broker_id)
        log.warning("Stopped serving replicas in dir %s", log_dir)

    # -- lifecycle ------------------------------------------------------------------------------

    def startup(self) -> None:
        """Start the isr-expiration and isr-change-propagation tasks (on the event loop) and the
        LogDirFailureHandler thread (dirs that failed at start-up are handled first)."""
        self.isr_manager.start()
        channel = getattr(self.log_manager, "failure_channel", None)
        if channel is not None:
            self._failure_handler = LogDirFailureHandler(
                self.broker_id, channel, self.handle_log_dir_failure, asyncio.get_running_loop()
            )
            self._failure_handler.start()

    async def shutdown(self, executor: Executor | None = None) -> None:
        """`executor` runs the blocking fetcher stop (default: the loop's default executor)."""
        loop = asyncio.get_running_loop()
        if self._failure_handler is not None:
            self._failure_handler.initiate_shutdown()
        await self.isr_manager.stop()
        await loop.run_in_executor(executor, self.fetcher_manager.shutdown)
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.delete_records_purgatory.shutdown()


class FollowerChange(enum.Enum):
    """What a follower state changes for a replica's fetching."""

    NONE = "same leader, same epoch: the fetch goes on"
    # The controller shrinking or growing the ISR moves the epoch on by one under the same
    # leader (every controlled shutdown does, for each partition the broker followed): the
    # fetch goes on at the new epoch, as Kafka's makeFollower kept it, with no truncation round.
    NEXT_EPOCH = "same leader, next epoch"
    ANEW = "new role, new leader or an epoch skipped: stop, truncate, fetch again"


def _follower_change(partition: Partition, ps: LeaderAndIsrPartitionState) -> FollowerChange:
    if partition.is_leader or partition.leader_id != ps.leader:
        return FollowerChange.ANEW
    if ps.leader_epoch == partition.leader_epoch:
        return FollowerChange.NONE
    if ps.leader_epoch == partition.leader_epoch + 1:
        return FollowerChange.NEXT_EPOCH
    return FollowerChange.ANEW


def _completion_state(partition: Partition) -> tuple[object, ...]:
    """What a waiting produce, fetch or DeleteRecords on `partition` can depend on that a
    LeaderAndIsr may change. Equal before and after one, nothing waiting can have become
    completable, so the partition's watchers are not checked: a new controller resends the
    unchanged state of every partition, and checking a follower's parked fetch (a walk over
    thousands of partitions) once per partition took 33 s of the event loop at 10k partitions.
    Checking each waiting request once per request (`_complete_delayed_all`) bounds that; this
    spares even the one walk when nothing changed, and leaves `rechecked` unset, so an idle
    follower fetch is still answered from its first read."""
    return (
        partition.leader_id,
        partition.leader_epoch,
        partition.isr,
        partition.pending_isr,
        partition.log.high_watermark,
    )


def _parent(path: str) -> str:
    return os.path.dirname(path)


async def gather_configs(
    loop: asyncio.AbstractEventLoop, topics: set[str], config_for: Callable[[str], Any]
) -> dict[str, Any]:
    """Read the LogConfigs of `topics` off the event loop (ZooKeeper reads block)."""

    def read_all() -> dict[str, Any]:
        return {t: config_for(t) for t in topics}

    return await loop.run_in_executor(None, read_all)
