"""ReplicaFetcherThread: a follower's loop fetching its partitions from one leader broker.

Kafka's AbstractFetcherThread + ReplicaFetcherThread, on a plain thread with one blocking
BrokerConnection (the fetch is a long poll of up to replica.fetch.wait.max.ms, so a thread
that blocks in recv costs nothing while the event loop serves clients). Each partition goes:

  truncating -> fetching (-> delayed for replica.fetch.backoff.ms after an error -> fetching)

Truncation is the pre-KIP-101 rule: cut the log to its high watermark, because anything past
it may never have been committed by the old leader; the records are fetched again from the new
leader. (OffsetsForLeaderEpoch truncation would keep them; kafkapy has no leader epoch cache
yet. The known cost is KIP-101's corner case: a follower that truncated and becomes leader
before refetching can lose records a second failure would have exposed.)

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
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, OffsetOutOfRangeException, ProtocolError, for_code
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.server.log.topic_partition import TopicPartition

log = logging.getLogger("kafkapy.server.ReplicaFetcherThread")

# The newest Fetch version that names topics (v13+ uses topic ids only).
MAX_FETCH_VERSION = 12
MIN_FETCH_VERSION = 4


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

    def ready(self, now: float) -> bool:
        return not self.truncating and self.delayed_until <= now


# -- pure pieces ------------------------------------------------------------------------------


def follower_records(records: Any, fetch_offset: int) -> memoryview | None:
    """The whole batches of a fetched record set that end at or after `fetch_offset`.

    A leader's response may stop mid-batch (the size limit cuts file bytes, not batches), and
    may start with a batch holding offsets below the fetch offset; both ends are trimmed.
    """
    if records is None:
        return None
    view = memoryview(records).cast("B") if not isinstance(records, memoryview) else records
    start = end = None
    for position, header in iter_batches(view):
        if header.next_offset <= fetch_offset:
            continue
        if start is None:
            start = position
        end = position + header.size
    if start is None or end is None:
        return None
    return view[start:end]


def out_of_range_action(fetch_offset: int, leader_log_start: int, leader_hw: int) -> tuple[str, int] | None:
    """What a follower does when the leader says its fetch offset is out of range.

    Below the leader's log start offset: start over empty at the leader's log start offset.
    Above: the leader's log is shorter than ours (an unclean election), so cut ours back. Kafka
    asks the leader for its log end offset; the fetch response carries the high watermark, a
    lower bound of it, so we cut to that and fetch the rest again.
    """
    if leader_log_start >= 0 and fetch_offset < leader_log_start:
        return "truncate_fully", leader_log_start
    if 0 <= leader_hw < fetch_offset:
        return "truncate_to", leader_hw
    return None


def follower_high_watermark(leader_hw: int, follower_log_end_offset: int) -> int:
    return min(leader_hw, follower_log_end_offset)


# -- the thread -------------------------------------------------------------------------------


class ReplicaFetcherThread(threading.Thread):
    def __init__(
        self,
        broker_id: int,
        fetcher_id: int,
        leader: BrokerEndPoint,
        config: FetcherConfig,
        connect: Callable[..., Any] = BrokerConnection,
    ) -> None:
        name = f"ReplicaFetcherThread-{fetcher_id}-{leader.id}"
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

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        with self._lock:
            return self._partitions.get(tp)

    def initiate_shutdown(self) -> None:
        self._stopping.set()
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
            self._truncate_pending()
            request, offsets = self._build_request()
            if request is None:
                self._lock.wait(self._idle_wait())
                return
        try:
            response = self._fetch(request)
        except (KafkaError, OSError) as e:
            if self._stopping.is_set():
                return
            log.warning("%s Error sending fetch request to broker %s: %s", self, self.leader, e)
            self._conn.close()
            with self._lock:
                self._delay(offsets)
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
        return max(min(delays), 0.001) if delays else 1.0

    def _truncate_pending(self) -> None:
        for tp, state in self._partitions.items():
            if not state.truncating:
                continue
            the_log = state.log
            try:
                hw = the_log.high_watermark
                log.info("%s Truncating partition %s to local high watermark %d", self, tp, hw)
                the_log.truncate_to(hw)
                state.fetch_offset = the_log.log_end_offset
                state.truncating = False
            except Exception:
                log.exception("%s Error truncating %s", self, tp)
                state.delayed_until = time.monotonic() + self.config.backoff_ms / 1000

    def _build_request(self) -> tuple[dict[str, Any] | None, dict[TopicPartition, int]]:
        now = time.monotonic()
        ready = [(tp, s) for tp, s in self._partitions.items() if s.ready(now)]
        if not ready:
            return None, {}
        # Rotate the order so that every partition gets to be first (the one allowed to exceed
        # the size limits by a batch) now and then.
        self._rotation = (self._rotation + 1) % len(ready)
        ready = ready[self._rotation :] + ready[: self._rotation]
        topics: dict[str, list[dict[str, Any]]] = {}
        offsets: dict[TopicPartition, int] = {}
        for tp, s in ready:
            offsets[tp] = s.fetch_offset
            topics.setdefault(tp.topic, []).append({
                "partition": tp.partition,
                "current_leader_epoch": s.leader_epoch,
                "fetch_offset": s.fetch_offset,
                "log_start_offset": s.log.log_start_offset,
                "partition_max_bytes": self.config.partition_max_bytes,
            })  # fmt: skip
        c = self.config
        request = {
            "replica_id": self.broker_id,
            "replica_state": {"replica_id": self.broker_id, "replica_epoch": -1},
            "max_wait_ms": c.max_wait_ms,
            "min_bytes": c.min_bytes,
            "max_bytes": c.response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,  # a full fetch outside any fetch session
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        }
        return request, offsets

    def _fetch(self, request: dict[str, Any]) -> Any:
        if self._version is None or not self._conn.connected:
            self._conn.api_versions()
            self._version = self._conn.pick_version(ApiKey.FETCH, (MIN_FETCH_VERSION, MAX_FETCH_VERSION))
        return self._conn.send(ApiKey.FETCH, self._version, request)

    def _delay(self, tps: Iterable[TopicPartition]) -> None:
        until = time.monotonic() + self.config.backoff_ms / 1000
        for tp in tps:
            state = self._partitions.get(tp)
            if state is not None:
                state.delayed_until = until

    # -- applying a response --------------------------------------------------------------------

    def _process(self, response: Any, requested: dict[TopicPartition, int]) -> None:
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
            state.fetch_offset = the_log.log_end_offset
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
        else:
            the_log.truncate_to(offset)
        state.fetch_offset = the_log.log_end_offset
