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

A fetch round costs what changed, not what is followed: while the leader holds a KIP-227
session, each request is incremental and carries only the partitions marked in `_changed`
since the last one (an append moved the fetch offset or the log start offset, a partition was
added, removed, re-added with a new leader epoch, went from truncating to fetching, was delayed
after an error or came back from the delay), found without a scan; delays wait in a heap, the
truncating partitions in their own set, lags above zero in their own dict, so nothing per round
walks every partition. The partition data a response answers is the session's (what the
leader holds), so processing walks the response only. A full request (no session yet, after a
session error, a sessionless leader) and a round under a replication throttle still go through
every partition. The one change made outside this thread, the follower's own retention moving
its log start offset, is picked up by a sweep every LOG_START_SWEEP_S.

Appends go straight to the Log, which has its own lock; this thread never touches Partition or
ReplicaManager state, which live on the event loop. `_lock` guards the partition map and is
held while a response is applied, so once `remove_partitions` returns, nothing more is written
to those logs (StopReplica may delete them next).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
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
# How often the partitions in the session are checked for a log start offset moved by the
# follower's own retention (the only change to what it sends made outside this thread; the
# leader only needs it for DeleteRecords, whose moves arrive through fetch responses anyway).
LOG_START_SWEEP_S = 5.0
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
    socket_receive_buffer_bytes: int = 65536  # replica.socket.receive.buffer.bytes

    @classmethod
    def from_config(cls, c: Any) -> FetcherConfig:
        return cls(
            c.replica_fetch_wait_max_ms,
            c.replica_fetch_min_bytes,
            c.replica_fetch_response_max_bytes,
            c.replica_fetch_max_bytes,
            c.replica_fetch_backoff_ms,
            c.replica_socket_timeout_ms,
            c.replica_socket_receive_buffer_bytes,
        )


@dataclass(frozen=True, slots=True)
class FetchRound:
    """One fetch in flight: what the leader fetches for each partition (what this request sent,
    or for an incremental one the session's live view, valid until the next request is built)
    and the session's view of the request (None for a sessionless leader)."""

    fetching: Mapping[TopicPartition, PartitionData]
    session: FetchRequestData | None


@dataclass(slots=True)
class InitialFetchState:
    leader: BrokerEndPoint
    leader_epoch: int
    log: Any  # kafkapy.server.log.log.Log
    # The same leader one epoch on (the controller shrank or grew the ISR): a fetch already
    # going carries on at the new epoch instead of starting over with a truncation round.
    resume: bool = False


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
        # Answers are read into one buffer reused from fetch to fetch: a response's records are
        # views into it, appended (copied to the log) by `_process` before the next request.
        self._conn = connect(
            leader.host, leader.port, client_id=f"broker-{broker_id}-fetcher-{fetcher_id}",
            timeout=max(config.socket_timeout_ms, config.max_wait_ms + 1000) / 1000,
            reuse_response_buffer=True, receive_buffer_bytes=config.socket_receive_buffer_bytes,
        )  # fmt: skip
        self._version: int | None = None
        self._lock = threading.Condition()
        self._partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._stopping = threading.Event()
        self._rotation = 0
        self._throttled = False  # the last request left partitions out for the quota
        # Partitions whose request data may differ from what the session holds (see above).
        self._changed: set[TopicPartition] = set()
        self._truncating: set[TopicPartition] = set()
        self._delays: list[tuple[float, int, TopicPartition]] = []  # heap: (until, seq, tp)
        self._delay_seq = itertools.count()
        self._lags: dict[TopicPartition, int] = {}  # only lags above zero: max_lag reads these
        self._left_out: set[TopicPartition] = set()  # sat the last request out for the quota
        self._next_sweep = time.monotonic() + LOG_START_SWEEP_S
        # The fetch session with the leader: only this thread builds requests and reads answers.
        self._session = FetchSessionHandler(leader.id, f"[{name}] ")

    def __repr__(self) -> str:
        return f"[{self.name} broker={self.broker_id} leader={self.leader.id}]"

    # -- called from the event loop -------------------------------------------------------------

    def add_partitions(self, states: dict[TopicPartition, InitialFetchState]) -> None:
        with self._lock:
            for tp, s in states.items():
                current = self._partitions.get(tp)
                if current is not None and current.log is s.log:
                    if current.leader_epoch == s.leader_epoch:
                        continue
                    if s.resume:
                        # A leader that only moved on one epoch has truncated nothing since our
                        # last truncation against it (Kafka's makeFollower left such a fetcher
                        # running): what we fetched is still a prefix of its log.
                        current.leader_epoch = s.leader_epoch
                        self._changed.add(tp)
                        continue
                self._partitions[tp] = PartitionFetchState(s.log, s.leader_epoch)
                self._truncating.add(tp)
                self._changed.add(tp)
                self._lags.pop(tp, None)
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
                    self._changed.add(tp)  # forgotten by the next incremental request
                    self._truncating.discard(tp)
                    self._lags.pop(tp, None)
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
        return max(list(self._lags.values()), default=0)

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
                self._delay(offsets.fetching)
            return
        with self._lock:
            self._process(response, offsets)

    def _sleep(self, seconds: float) -> None:
        with self._lock:
            if not self._stopping.is_set():
                self._lock.wait(seconds)

    def _idle_wait(self) -> float:
        now = time.monotonic()
        self._expire_delays(now)
        delays = [self._delays[0][0] - now] if self._delays else []
        if self._throttled:  # Kafka backs off replica.fetch.backoff.ms when the quota empties a fetch
            delays.append(self.config.backoff_ms / 1000)
        return max(min(delays), 0.001) if delays else 1.0

    # -- truncation (KIP-101, KIP-279) ------------------------------------------------------------

    def _epoch_queries(self) -> dict[TopicPartition, tuple[PartitionFetchState, EpochQuery]]:
        """The partitions to ask the leader about; a log without epochs is cut at once."""
        now = time.monotonic()
        queries = {}
        for tp in list(self._truncating):
            state = self._partitions.get(tp)
            if state is None:
                self._truncating.discard(tp)
                continue
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
            self._truncating.discard(tp)
            self._changed.add(tp)

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
        self._expire_delays(now)
        quota = self.quota
        self._throttled = False
        exceeded = quota is not None and quota.any_throttled and quota.is_quota_exceeded()
        session = self._session if self._sessions_supported() else None
        if session is None or session.needs_full_request:
            data = self._full_request(session, now, exceeded)
        else:
            data = self._incremental_request(session, now, exceeded)
        if data is None:
            return None, FetchRound({}, None)
        fetching = data.to_send if session is None or data.is_full else session.session_partitions
        return self._request_body(data), FetchRound(fetching, data if session is not None else None)

    def _full_request(
        self, session: FetchSessionHandler | None, now: float, exceeded: bool
    ) -> FetchRequestData | None:
        """Every partition ready to fetch (a new session, or a sessionless leader)."""
        self._changed.clear()
        self._left_out.clear()
        self._next_sweep = now + LOG_START_SWEEP_S
        ready: list[tuple[TopicPartition, PartitionData]] = []
        for tp, s in self._partitions.items():
            d = self._wanted(tp, s, now, exceeded)
            if d is not None:
                ready.append((tp, d))
        if not ready:
            return None
        # Rotate the order so that every partition gets to be first (the one allowed to exceed
        # the size limits by a batch) now and then.
        self._rotation = (self._rotation + 1) % len(ready)
        wanted = dict(ready[self._rotation :] + ready[: self._rotation])
        if session is None:
            return FetchRequestData(wanted, [], INVALID_SESSION_ID, FINAL_EPOCH)
        return session.build(wanted)

    def _incremental_request(
        self, session: FetchSessionHandler, now: float, exceeded: bool
    ) -> FetchRequestData | None:
        """Only what changed since the last request; the session keeps the rest."""
        if now >= self._next_sweep:
            self._sweep_log_start_offsets(session)
            self._next_sweep = now + LOG_START_SWEEP_S
        # Under a replication throttle which partitions sit a fetch out moves with the quota:
        # look at them all while it is exceeded (only while a reassignment is throttled), and
        # at those left out last time once it is not.
        if exceeded:
            candidates = self._changed | self._partitions.keys()
        elif self._left_out:
            candidates = self._changed | self._left_out
        else:
            candidates = self._changed
        self._changed, self._left_out = set(), set()
        get = self._partitions.get
        changed = {tp: self._wanted(tp, get(tp), now, exceeded) for tp in candidates}
        if not changed and not session.session_partitions:
            return None
        return session.build_incremental(changed)

    def _wanted(
        self, tp: TopicPartition, state: PartitionFetchState | None, now: float, exceeded: bool
    ) -> PartitionData | None:
        """What to ask the leader for `tp` now; None leaves it out (or forgets it)."""
        if state is None or not state.ready(now):
            return None
        if exceeded and state.lag != 0 and self.quota is not None and self.quota.is_throttled(tp):
            # Kafka's shouldFollowerThrottle: lagging throttled partitions sit this fetch out.
            self._throttled = True
            self._left_out.add(tp)
            return None
        return PartitionData(
            state.fetch_offset,
            state.log.log_start_offset,
            self.config.partition_max_bytes,
            state.leader_epoch,
        )

    def _sweep_log_start_offsets(self, session: FetchSessionHandler) -> None:
        for tp, d in session.session_partitions.items():
            state = self._partitions.get(tp)
            if state is not None and state.log.log_start_offset != d.log_start_offset:
                self._changed.add(tp)

    def _expire_delays(self, now: float) -> None:
        delays = self._delays
        while delays and delays[0][0] <= now:
            self._changed.add(heapq.heappop(delays)[2])

    def _request_body(self, data: FetchRequestData) -> dict[str, Any]:
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
        return {
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
        """Back `tps` off for replica.fetch.backoff.ms: out of the session meanwhile."""
        until = time.monotonic() + self.config.backoff_ms / 1000
        seq = next(self._delay_seq)
        for tp in list(tps):
            state = self._partitions.get(tp)
            if state is not None:
                state.delayed_until = until
                self._changed.add(tp)
                heapq.heappush(self._delays, (until, seq, tp))

    # -- applying a response --------------------------------------------------------------------

    def _process(self, response: Any, fetched: FetchRound) -> None:
        fetching = fetched.fetching
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
            self._delay(fetching)
            return
        for topic in response.responses:
            for pd in topic.partitions:
                tp = TopicPartition(topic.topic, pd.partition_index)
                state = self._partitions.get(tp)
                asked = fetching.get(tp)
                # A partition removed, re-added, truncated or moved to another epoch meanwhile:
                # this answer is stale (a FENCED_LEADER_EPOCH to the old epoch among them).
                if (
                    state is None
                    or state.truncating
                    or asked is None
                    or state.fetch_offset != asked.fetch_offset
                    or state.leader_epoch != asked.current_leader_epoch
                ):
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
        before = (state.fetch_offset, the_log.log_start_offset)
        records = follower_records(pd.records, state.fetch_offset)
        if records is not None:
            the_log.append_as_follower(records)
            REPLICATION_BYTES_IN.inc(len(records))
            state.fetch_offset = the_log.log_end_offset
            if self.quota is not None and self.quota.is_throttled(tp):
                self.quota.record(len(records))
        if pd.high_watermark >= 0:
            lag = state.lag = max(0, pd.high_watermark - state.fetch_offset)
            if lag:
                self._lags[tp] = lag
            else:
                self._lags.pop(tp, None)
            the_log.high_watermark = follower_high_watermark(pd.high_watermark, the_log.log_end_offset)
        if pd.log_start_offset > the_log.log_start_offset:
            # Retention or DeleteRecords on the leader: follow it, never past our high watermark.
            the_log.maybe_increment_log_start_offset(min(pd.log_start_offset, the_log.high_watermark))
        if (state.fetch_offset, the_log.log_start_offset) != before:
            self._changed.add(tp)  # the next request moves the session on (and tells DeleteRecords)

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
        self._changed.add(tp)
        if kind == "truncate_fully":
            the_log.truncate_fully_and_start_at(offset)
            state.fetch_offset = the_log.log_end_offset
        elif the_log.latest_epoch is None:
            the_log.truncate_to(offset)  # no epochs to ask about: the leader's high watermark
            state.fetch_offset = the_log.log_end_offset
        else:
            state.truncating = True
            self._truncating.add(tp)
