"""ReplicaFetcherThread: a follower's loop fetching its partitions from one leader broker.

Kafka's AbstractFetcherThread + ReplicaFetcherThread, on a plain thread with one blocking
BrokerConnection (the fetch is a long poll of up to replica.fetch.wait.max.ms, so a thread
that blocks in recv costs nothing while the event loop serves clients). Each partition goes:

  truncating -> fetching (-> delayed for replica.fetch.backoff.ms after an error -> fetching)

Truncation follows KIP-101/KIP-279 (kafkapy/server/follower_truncation.py): the partitions
still truncating are sent to the leader in one OffsetsForLeaderEpoch request with the latest
epoch each log holds, and each log is cut where the leader says that epoch ends (asking again
when the leader answers with an older epoch). Only a log that carries no epochs at all falls
back to the pre-KIP-101 rule of cutting at its high watermark.

Appends go straight to the Log, which has its own lock; this thread never touches Partition or
ReplicaManager state, which live on the event loop. `_lock` guards the partition map and is
held while a response is applied, so once `remove_partitions` returns, nothing more is written
to those logs (StopReplica may delete them next).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafkapy.client.connection import BrokerConnection
from kafkapy.client.fetch_session_handler import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    FetchSessionTopicIdException,
    InvalidFetchSessionEpochException,
    KafkaError,
    OffsetOutOfRangeException,
    ProtocolError,
    UnsupportedVersionException,
    for_code,
)
from kafkapy.server.follower_rules import (
    OFFSET_FOR_LEADER_EPOCH_VERSIONS,
    EpochQuery,
    OffsetTruncationState,
    epoch_request,
    follower_high_watermark,
    follower_records,
    offset_truncation_state,
    out_of_range_action,
)
from kafkapy.server.metrics.process_metrics import REPLICATION_BYTES_IN
from kafkapy.server.replication_quota import ReplicationQuotaManager

log = logging.getLogger("kafkapy.server.ReplicaFetcherThread")

# The newest Fetch version that names topics (v13+ uses topic ids only).
MAX_FETCH_VERSION = 12
MIN_FETCH_VERSION = 4
_SESSION_ERRORS = frozenset(
    (
        FetchSessionIdNotFoundException.code,
        InvalidFetchSessionEpochException.code,
        FetchSessionTopicIdException.code,
    )
)


@dataclass(frozen=True, slots=True)
class BrokerEndPoint:
    id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"BrokerEndPoint(id={self.id}, host={self.host}:{self.port})"


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The replica.* settings a fetcher uses (Kafka's names in the comments)."""

    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    response_max_bytes: int = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
    partition_max_bytes: int = 1024 * 1024  # replica.fetch.max.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30000  # replica.socket.timeout.ms

    @classmethod
    def from_config(cls, c: Any) -> FetcherConfig:
        return cls(
            c.replica_fetch_wait_max_ms,
            c.replica_fetch_min_bytes,
            c.replica_fetch_response_max_bytes,
            c.replica_fetch_max_bytes,
            c.replica_fetch_backoff_ms,
            c.replica_socket_timeout_ms,
        )


@dataclass(frozen=True, slots=True)
class FetchRound:
    """One fetch in flight: every partition's fetch offset (sent or left to the session) and the
    session's view of the request (None when nothing was sent)."""

    offsets: dict[TopicPartition, int]
    session: FetchRequestData | None


@dataclass(slots=True)
class InitialFetchState:
    leader: BrokerEndPoint
    leader_epoch: int
    log: Any  # kafkapy.server.log.log.Log


@dataclass(slots=True)
class PartitionFetchState:
    log: Any
    leader_epoch: int
    fetch_offset: int = -1
    truncating: bool = True
    delayed_until: float = 0.0  # time.monotonic()
    lag: int | None = None  # leader's high watermark - fetch offset, after the last fetch

    def ready(self, now: float) -> bool:
        return not self.truncating and self.delayed_until <= now

    def ready_to_truncate(self, now: float) -> bool:
        return self.truncating and self.delayed_until <= now


# -- the thread -------------------------------------------------------------------------------


class ReplicaFetcherThread(threading.Thread):
    def __init__(
        self,
        broker_id: int,
        fetcher_id: int,
        leader: BrokerEndPoint,
        config: FetcherConfig,
        connect: Callable[..., Any] = BrokerConnection,
        quota: ReplicationQuotaManager | None = None,
    ) -> None:
        name = f"ReplicaFetcherThread-{fetcher_id}-{leader.id}"
        self.quota = quota  # follower-side replication throttle (Kafka's quotas.follower)
        super().__init__(name=name, daemon=True)
        self.broker_id = broker_id
        self.fetcher_id = fetcher_id
        self.leader = leader
        self.config = config
        self._conn = connect(
            leader.host, leader.port, client_id=f"broker-{broker_id}-fetcher-{fetcher_id}",
            timeout=max(config.socket_timeout_ms, config.max_wait_ms + 1000) / 1000,
        )  # fmt: skip
        self._version: int | None = None
        self._lock = threading.Condition()
        self._partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._stopping = threading.Event()
        self._rotation = 0
        self._throttled = False  # the last request left partitions out for the quota
        # The fetch session with the leader: only this thread builds requests and reads answers.
        self._session = FetchSessionHandler(leader.id, f"[{name}] ")

    def __repr__(self) -> str:
        return f"[{self.name} broker={self.broker_id} leader={self.leader.id}]"

    # -- called from the event loop -------------------------------------------------------------

    def add_partitions(self, states: dict[TopicPartition, InitialFetchState]) -> None:
        with self._lock:
            for tp, s in states.items():
                current = self._partitions.get(tp)
                if current is not None and current.leader_epoch == s.leader_epoch and current.log is s.log:
                    continue
                self._partitions[tp] = PartitionFetchState(s.log, s.leader_epoch)
            self._lock.notify_all()
        log.info("%s Added fetcher to broker %s for partitions %s", self, self.leader, sorted(states))

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        """Stop fetching `tps`; blocks until a response being applied to them is done."""
        removed = {}
        with self._lock:
            for tp in tps:
                state = self._partitions.pop(tp, None)
                if state is not None:
                    removed[tp] = state
            self._lock.notify_all()
        if removed:
            log.info("%s Removed fetcher for partitions %s", self, sorted(removed))
        return removed

    def partitions(self) -> list[TopicPartition]:
        with self._lock:
            return list(self._partitions)

    def partition_count(self) -> int:
        with self._lock:
            return len(self._partitions)

    def max_lag(self) -> int:
        """The largest lag of this thread's partitions (lock-free: for the metrics thread)."""
        return max((s.lag or 0 for s in list(self._partitions.values())), default=0)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        with self._lock:
            return self._partitions.get(tp)

    def initiate_shutdown(self) -> None:
        self._stopping.set()
        self._conn.initiate_close()  # an in-flight fetch returns now, not after the leader answers
        with self._lock:
            self._lock.notify_all()

    def shutdown(self, timeout: float = 10.0) -> None:
        self.initiate_shutdown()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        log.info("%s Starting", self)
        try:
            while not self._stopping.is_set():
                try:
                    self.do_work()
                except Exception:
                    log.exception("%s Error in fetcher loop", self)
                    self._sleep(self.config.backoff_ms / 1000)
        finally:
            self._conn.close()
            log.info("%s Stopped", self)

    def do_work(self) -> None:
        with self._lock:
            queries = self._epoch_queries()
            if not queries:
                request, offsets = self._build_request()
                if request is None:
                    self._lock.wait(self._idle_wait())
                    return
        if queries:
            self._truncate_to_epoch_end_offsets(queries)
            return
        try:
            response = self._fetch(request)  # type: ignore[arg-type]  # not None: the locked block returned otherwise
        except (KafkaError, OSError) as e:
            self._session.handle_error()
            if self._stopping.is_set():
                return
            log.warning("%s Error sending fetch request to broker %s: %s", self, self.leader, e)
            self._conn.close()
            with self._lock:
                self._delay(offsets.offsets)
            return
        with self._lock:
            self._process(response, offsets)

    def _sleep(self, seconds: float) -> None:
        with self._lock:
            if not self._stopping.is_set():
                self._lock.wait(seconds)

    def _idle_wait(self) -> float:
        now = time.monotonic()
        delays = [s.delayed_until - now for s in self._partitions.values() if s.delayed_until > now]
        if self._throttled:  # Kafka backs off replica.fetch.backoff.ms when the quota empties a fetch
            delays.append(self.config.backoff_ms / 1000)
        return max(min(delays), 0.001) if delays else 1.0

    # -- truncation (KIP-101, KIP-279) ------------------------------------------------------------

    def _epoch_queries(self) -> dict[TopicPartition, tuple[PartitionFetchState, EpochQuery]]:
        """The partitions to ask the leader about; a log without epochs is cut at once."""
        now = time.monotonic()
        queries = {}
        for tp, state in self._partitions.items():
            if not state.ready_to_truncate(now):
                continue
            latest = state.log.latest_epoch
            if latest is None:
                self._truncate_to_high_watermark(tp, state)
            else:
                queries[tp] = (state, EpochQuery(state.leader_epoch, latest))
        return queries

    def _truncate_to_high_watermark(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        hw = state.log.high_watermark
        log.info("%s Truncating partition %s to local high watermark %d", self, tp, hw)
        self._truncate(tp, state, OffsetTruncationState(hw, True))

    def _truncate(
        self, tp: TopicPartition, state: PartitionFetchState, truncation: OffsetTruncationState
    ) -> None:
        try:
            state.log.truncate_to(truncation.offset)
        except Exception:
            log.exception("%s Error truncating %s", self, tp)
            self._delay([tp])
            return
        if truncation.completed:
            state.fetch_offset = state.log.log_end_offset
            state.truncating = False

    def _truncate_to_epoch_end_offsets(
        self, queries: dict[TopicPartition, tuple[PartitionFetchState, EpochQuery]]
    ) -> None:
        request = epoch_request(self.broker_id, {tp: q for tp, (_, q) in queries.items()})
        try:
            response = self._send_epoch_request(request)
        except UnsupportedVersionException as e:
            log.warning("%s Leader %s cannot answer OffsetsForLeaderEpoch (%s): truncating to the high "
                        "watermark", self, self.leader, e)  # fmt: skip
            with self._lock:
                for tp, (state, _) in queries.items():
                    if self._partitions.get(tp) is state and state.truncating:
                        self._truncate_to_high_watermark(tp, state)
            return
        except (KafkaError, OSError) as e:
            if self._stopping.is_set():
                return
            log.warning(
                "%s Error sending OffsetsForLeaderEpoch request to broker %s: %s", self, self.leader, e
            )
            self._conn.close()
            with self._lock:
                self._delay(queries)
            return
        with self._lock:
            answered = set()
            for topic in response.topics:
                for pd in topic.partitions:
                    tp = TopicPartition(topic.topic, pd.partition)
                    answered.add(tp)
                    asked = queries.get(tp)
                    # Removed, re-added (a new leader epoch) or done meanwhile: the answer is stale.
                    if asked is None or self._partitions.get(tp) is not asked[0] or not asked[0].truncating:
                        continue
                    self._apply_epoch_end_offset(tp, asked[0], pd)
            self._delay(tp for tp in queries if tp not in answered)

    def _send_epoch_request(self, request: dict[str, Any]) -> Any:
        self._ensure_versions()
        version = self._conn.pick_version(ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSIONS)
        return self._conn.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, request)

    def _apply_epoch_end_offset(self, tp: TopicPartition, state: PartitionFetchState, pd: Any) -> None:
        if pd.error_code:
            log.info("%s Error getting the end offset of its latest epoch for %s from %s: %s; backing off",
                     self, tp, self.leader, for_code(pd.error_code).name)  # fmt: skip
            self._delay([tp])
            return
        the_log = state.log
        truncation = offset_truncation_state(
            pd.leader_epoch, pd.end_offset, the_log.log_end_offset, the_log.high_watermark,
            the_log.end_offset_for_epoch,
        )  # fmt: skip
        log.info(
            "%s Truncating partition %s with %s due to leader epoch and offset EpochEndOffset(errorCode=0, "
            "partition=%s, leaderEpoch=%d, endOffset=%d)", self, tp, truncation, tp, pd.leader_epoch, pd.end_offset,
        )  # fmt: skip
        self._truncate(tp, state, truncation)

    def _build_request(self) -> tuple[dict[str, Any] | None, FetchRound]:
        now = time.monotonic()
        ready = [(tp, s) for tp, s in self._partitions.items() if s.ready(now)]
        quota = self.quota
        self._throttled = False
        if quota is not None and quota.any_throttled and ready and quota.is_quota_exceeded():
            # Kafka's shouldFollowerThrottle: lagging throttled partitions sit this fetch out.
            kept = [(tp, s) for tp, s in ready if s.lag == 0 or not quota.is_throttled(tp)]
            self._throttled, ready = len(kept) < len(ready), kept
        if not ready:
            return None, FetchRound({}, None)
        # Rotate the order so that every partition gets to be first (the one allowed to exceed
        # the size limits by a batch) now and then.
        self._rotation = (self._rotation + 1) % len(ready)
        ready = ready[self._rotation :] + ready[: self._rotation]
        offsets: dict[TopicPartition, int] = {}
        wanted: dict[TopicPartition, PartitionData] = {}
        part_max = self.config.partition_max_bytes
        for tp, s in ready:
            offsets[tp] = s.fetch_offset
            wanted[tp] = PartitionData(s.fetch_offset, s.log.log_start_offset, part_max, s.leader_epoch)
        if self._sessions_supported():
            data = self._session.build(wanted)
        else:
            data = FetchRequestData(wanted, [], INVALID_SESSION_ID, FINAL_EPOCH)
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, d in data.to_send.items():
            topics.setdefault(tp.topic, []).append({
                "partition": tp.partition,
                "current_leader_epoch": d.current_leader_epoch,
                "fetch_offset": d.fetch_offset,
                "log_start_offset": d.log_start_offset,
                "partition_max_bytes": d.max_bytes,
            })  # fmt: skip
        forgotten: dict[str, list[int]] = {}
        for tp in data.to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        c = self.config
        request = {
            "replica_id": self.broker_id,
            "replica_state": {"replica_id": self.broker_id, "replica_epoch": -1},
            "max_wait_ms": c.max_wait_ms,
            "min_bytes": c.min_bytes,
            "max_bytes": c.response_max_bytes,
            "isolation_level": 0,
            "session_id": data.session_id,
            "session_epoch": data.epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in forgotten.items()],
        }
        return request, FetchRound(offsets, data)

    def _sessions_supported(self) -> bool:
        """Fetch v7+ has sessions; before the first request the version is not known yet, and a
        full request at epoch 0 is what a sessionless leader gets anyway."""
        return self._version is None or self._version >= 7

    def _ensure_versions(self) -> None:
        if self._version is None or not self._conn.connected:
            self._conn.api_versions()
            self._version = self._conn.pick_version(ApiKey.FETCH, (MIN_FETCH_VERSION, MAX_FETCH_VERSION))

    def _fetch(self, request: dict[str, Any]) -> Any:
        self._ensure_versions()
        return self._conn.send(ApiKey.FETCH, self._version, request)

    def _delay(self, tps: Iterable[TopicPartition]) -> None:
        until = time.monotonic() + self.config.backoff_ms / 1000
        for tp in tps:
            state = self._partitions.get(tp)
            if state is not None:
                state.delayed_until = until

    # -- applying a response --------------------------------------------------------------------

    def _process(self, response: Any, fetched: FetchRound) -> None:
        requested = fetched.offsets
        if fetched.session is not None and self._sessions_supported():
            answered = (
                TopicPartition(t.topic, p.partition_index) for t in response.responses for p in t.partitions
            )
            if not self._session.handle_response(
                fetched.session, response.error_code, response.session_id, answered
            ):
                if not response.error_code:
                    return  # not an answer to what we asked: the next request starts a new session
                if response.error_code in _SESSION_ERRORS:
                    return  # the next request is a full one: no need to back off
        if response.error_code:
            log.warning("%s Fetch request to %s failed: %s", self, self.leader, for_code(response.error_code))
            self._delay(requested)
            return
        for topic in response.responses:
            for pd in topic.partitions:
                tp = TopicPartition(topic.topic, pd.partition_index)
                state = self._partitions.get(tp)
                # A partition removed, re-added or truncated meanwhile: this data is stale.
                if state is None or state.truncating or state.fetch_offset != requested.get(tp):
                    continue
                try:
                    if pd.error_code == 0:
                        self._append(tp, state, pd)
                    elif pd.error_code == OffsetOutOfRangeException.code:
                        self._handle_out_of_range(tp, state, pd)
                    else:
                        log.info("%s Error fetching %s from %s: %s; backing off",
                                 self, tp, self.leader, for_code(pd.error_code).name)  # fmt: skip
                        self._delay([tp])
                except (KafkaError, ProtocolError, OSError, ValueError) as e:
                    log.error("%s Error processing data for %s at offset %d: %s",
                              self, tp, state.fetch_offset, e)  # fmt: skip
                    self._delay([tp])

    def _append(self, tp: TopicPartition, state: PartitionFetchState, pd: Any) -> None:
        the_log = state.log
        records = follower_records(pd.records, state.fetch_offset)
        if records is not None:
            the_log.append_as_follower(records)
            REPLICATION_BYTES_IN.inc(len(records))
            state.fetch_offset = the_log.log_end_offset
            if self.quota is not None and self.quota.is_throttled(tp):
                self.quota.record(len(records))
        if pd.high_watermark >= 0:
            state.lag = max(0, pd.high_watermark - state.fetch_offset)
        if pd.high_watermark >= 0:
            the_log.high_watermark = follower_high_watermark(pd.high_watermark, the_log.log_end_offset)
        if pd.log_start_offset > the_log.log_start_offset:
            # Retention or DeleteRecords on the leader: follow it, never past our high watermark.
            the_log.maybe_increment_log_start_offset(min(pd.log_start_offset, the_log.high_watermark))

    def _handle_out_of_range(self, tp: TopicPartition, state: PartitionFetchState, pd: Any) -> None:
        action = out_of_range_action(state.fetch_offset, pd.log_start_offset, pd.high_watermark)
        the_log = state.log
        if action is None:
            self._delay([tp])
            return
        kind, offset = action
        log.warning(
            "%s Fetch offset %d of %s is out of range on leader %d (log start %d, high watermark %d): %s %d",
            self, state.fetch_offset, tp, self.leader.id, pd.log_start_offset, pd.high_watermark, kind, offset,
        )  # fmt: skip
        if kind == "truncate_fully":
            the_log.truncate_fully_and_start_at(offset)
            state.fetch_offset = the_log.log_end_offset
        elif the_log.latest_epoch is None:
            the_log.truncate_to(offset)  # no epochs to ask about: the leader's high watermark
            state.fetch_offset = the_log.log_end_offset
        else:
            state.truncating = True
