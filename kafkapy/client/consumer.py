"""SimpleConsumer: assign partitions (or subscribe as a group member), seek, poll records.

    consumer = SimpleConsumer("127.0.0.1:9092", auto_offset_reset="earliest")
    consumer.assign([TopicPartition("events", p) for p in consumer.partitions_for("events")])
    for record in consumer.poll(timeout_ms=1000): ...

    consumer = SimpleConsumer("127.0.0.1:9092", group_id="g")
    consumer.subscribe(["events"])  # the group's members share the partitions

What the console consumer, the consumer perf test and (later) the Spark source need: Fetch
from each partition's leader, one fetch in flight per broker, batches decoded (compressed ones
included) into `ConsumerRecord`s in offset order per partition. Positions start from a seek,
a committed group offset (`group_id`, via OffsetFetch), or auto.offset.reset (ListOffsets).
`commit()` stores what poll() has returned so far with OffsetCommit: as a "simple"
(generation -1) member after assign(), as this generation's member after subscribe() (see
consumer_coordinator.py; its heartbeats run on a thread of their own). Otherwise
single-threaded: every call polls the NetworkClient on the caller's thread. Fetches run in a
fetch session per broker (KIP-227, fetch_session_handler.py), as the Java consumer's do: after
the first, a request names only partitions whose position moved.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kafkapy.client.client_metrics import ConsumerMetrics
from kafkapy.client.consumer_coordinator import ConsumerCoordinator, RebalanceListener
from kafkapy.client.fetch_session_handler import FetchRequestData, FetchSessionHandler, PartitionData
from kafkapy.client.group_offsets import GroupOffsets
from kafkapy.client.network_client import NetworkClient
from kafkapy.client.network_client_utils import await_metadata, send_and_receive
from kafkapy.client.records import ConsumerRecord, decode_record_set
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    FetchSessionTopicIdException,
    InvalidFetchSessionEpochException,
    NotLeaderOrFollowerException,
    OffsetOutOfRangeException,
    TimeoutException,
    for_code,
)
from kafkapy.protocol.generated.fetch_request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kafkapy.protocol.generated.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)

FETCH_MAX_VERSION: Final = 12  # v13+ names topics by id
_SESSION_ERRORS: Final = frozenset(
    (
        FetchSessionIdNotFoundException.code,
        InvalidFetchSessionEpochException.code,
        FetchSessionTopicIdException.code,
    )
)
LIST_OFFSETS_MAX_VERSION: Final = 7
# ListOffsets' special timestamps under the short names callers (the Spark source) use.
EARLIEST: Final = EARLIEST_TIMESTAMP
LATEST: Final = LATEST_TIMESTAMP

__all__ = ["ConsumerRecord", "SimpleConsumer", "TopicPartition"]


class NoOffsetForPartitionError(OffsetOutOfRangeException):
    """auto.offset.reset=none and no position for a partition."""


class SimpleConsumer:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "kafkapy-consumer",
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52_428_800,
        max_partition_fetch_bytes: int = 1_048_576,
        request_timeout_ms: int = 30_000,
        check_crcs: bool = True,
        isolation_level: str = "read_uncommitted",
        metadata_max_age_ms: int = 300_000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        enable_auto_commit: bool = True,  # only after subscribe(), as assign() users commit themselves
        auto_commit_interval_ms: int = 5_000,
        partition_assignment_strategy: tuple[str, ...] = ("range", "roundrobin"),
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(f"auto.offset.reset must be earliest, latest or none, not {auto_offset_reset!r}")
        self.client = NetworkClient(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            max_in_flight=1,
            allow_auto_topic_creation=False,
        )
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.check_crcs = check_crcs
        self.isolation_level = 1 if isolation_level == "read_committed" else 0
        self.timeout = request_timeout_ms / 1000
        self._positions: dict[TopicPartition, int | None] = {}
        self._pending_resets: dict[TopicPartition, int] = {}  # tp -> EARLIEST/LATEST
        self._fetching: set[int] = set()  # nodes with a fetch in flight
        self._sessions: dict[int, FetchSessionHandler] = {}  # a fetch session per broker
        self._ready: list[ConsumerRecord] = []
        self._group = GroupOffsets(self.client, group_id, self.timeout) if group_id else None
        self._coordinator: ConsumerCoordinator | None = None
        self._bootstrap = bootstrap_servers
        self._group_config = {
            "client_id": client_id, "assignors": partition_assignment_strategy,
            "session_timeout_ms": session_timeout_ms, "heartbeat_interval_ms": heartbeat_interval_ms,
            "max_poll_interval_ms": max_poll_interval_ms, "enable_auto_commit": enable_auto_commit,
            "auto_commit_interval_ms": auto_commit_interval_ms, "request_timeout_ms": request_timeout_ms,
        }  # fmt: skip
        self.high_watermarks: dict[TopicPartition, int] = {}
        # Kafka's consumer-fetch-manager-metrics, recorded once per fetch response.
        self._metrics = ConsumerMetrics()
        # An error found in a fetch callback (which runs inside client.poll) is raised by poll().
        self._error: BaseException | None = None

    def __enter__(self) -> SimpleConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metadata and assignment ----------------------------------------------------------------

    def topics(self) -> list[str]:
        """Every topic in the cluster, from a metadata response asked for now."""
        self.client.set_all_topics(True)
        await_metadata(self.client, [], self.timeout)
        # The metadata we already hold may predate the all-topics switch: ask for a fresh one
        # and wait for it, rather than for an update that may never be due.
        start = self.client.cluster.updated_at
        self.client.request_metadata_update()
        deadline = time.monotonic() + self.timeout
        while self.client.cluster.updated_at == start and time.monotonic() < deadline:
            self.client.poll(0.1)
        return sorted(self.client.cluster.topics)

    def partitions_for(self, topic: str) -> list[int]:
        """The topic's partitions (empty when it does not exist)."""
        cluster = await_metadata(self.client, [topic], self.timeout)
        return [p.partition for p in cluster.partitions_for(topic) or ()]

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions (replacing any previous assignment)."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        self._positions = {tp: self._positions.get(tp) for tp in wanted}
        self._ready = [r for r in self._ready if (r.topic, r.partition) in self._positions]
        self.client.add_topics({tp.topic for tp in wanted})

    def assignment(self) -> set[TopicPartition]:
        return set(self._positions)

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: RebalanceListener | None = None) -> None:  # fmt: skip
        """Consume `topics` (or every topic matching `pattern`) as a member of group_id: the
        partitions come from the group's leader on poll() and change with each rebalance."""
        if self.group_id is None:
            raise ValueError("subscribe needs a group_id (use assign() without one)")
        if self._coordinator is None:
            self.assign([])
            self._coordinator = ConsumerCoordinator(
                self,
                self._bootstrap,
                self.group_id,
                **self._group_config,  # type: ignore[arg-type]  # the group keys the constructor validated
            )
        self._coordinator.subscribe(topics, pattern, listener)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_assigned(tp)
        self._positions[tp] = offset
        self._pending_resets.pop(tp, None)
        self._drop_buffered(tp)

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self._seek_to(tps or tuple(self._positions), EARLIEST)

    def seek_to_end(self, *tps: TopicPartition) -> None:
        self._seek_to(tps or tuple(self._positions), LATEST)

    def _seek_to(self, tps: Iterable[TopicPartition], where: int) -> None:
        for tp in tps:
            self._check_assigned(tp)
            self._positions[tp] = None
            self._pending_resets[tp] = where
            self._drop_buffered(tp)

    def position(self, tp: TopicPartition) -> int:
        self._check_assigned(tp)
        self._resolve_positions()
        position = self._positions[tp]
        assert position is not None
        return position

    def _check_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._positions:
            raise ValueError(f"No current assignment for partition {tp.topic}-{tp.partition}")

    def _drop_buffered(self, tp: TopicPartition) -> None:
        self._ready = [r for r in self._ready if (r.topic, r.partition) != tp]

    # -- offsets ----------------------------------------------------------------------------

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets(dict.fromkeys(tps, EARLIEST))

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets(dict.fromkeys(tps, LATEST))

    def _list_offsets(self, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """ListOffsets to each leader, retrying on stale leadership until the timeout."""
        result: dict[TopicPartition, int] = {}
        left = dict(wanted)
        deadline = time.monotonic() + self.timeout
        while left:
            cluster = await_metadata(self.client, {tp.topic for tp in left}, self.timeout)
            by_node: dict[int, list[TopicPartition]] = {}
            for tp in left:
                leader = cluster.leader_for(tp.topic, tp.partition)
                if leader is not None:
                    by_node.setdefault(leader, []).append(tp)
            for node, tps in by_node.items():
                body = _list_offsets_body(tps, left, self.isolation_level)
                resp = send_and_receive(
                    self.client, node, ApiKey.LIST_OFFSETS, body, max_version=LIST_OFFSETS_MAX_VERSION
                )
                for t in resp.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if p.error_code == 0:
                            result[tp] = p.offset
                            left.pop(tp, None)
                        elif not for_code(p.error_code).retriable:
                            raise for_code(p.error_code, f"ListOffsets for {tp.topic}-{tp.partition}")
            if left:
                if time.monotonic() > deadline:
                    raise TimeoutException(f"Failed to get offsets by times in {self.timeout * 1000:.0f}ms")
                self.client.request_metadata_update()
                self.client.poll(0.1)
        return result

    def _resolve_positions(self) -> None:
        missing = [tp for tp, pos in self._positions.items() if pos is None]
        if not missing:
            return
        if self._group is not None:
            committed = self._group.fetch([tp for tp in missing if tp not in self._pending_resets])
            for tp, offset in committed.items():
                if offset is not None and offset >= 0:
                    self._positions[tp] = offset
            missing = [tp for tp in missing if self._positions[tp] is None]
        resets: dict[TopicPartition, int] = {}
        for tp in missing:
            where = self._pending_resets.get(tp)
            if where is None:
                if self.auto_offset_reset == "none":
                    raise NoOffsetForPartitionError(
                        f"Undefined offset with no reset policy for partitions: {tp}"
                    )
                where = EARLIEST if self.auto_offset_reset == "earliest" else LATEST
            resets[tp] = where
        for tp, offset in self._list_offsets(resets).items():
            self._positions[tp] = offset
            self._pending_resets.pop(tp, None)

    def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        if self._group is None:
            raise ValueError("committed offsets need a group_id")
        return self._group.fetch(list(tps))

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, the offset after the last record poll() returned: fetched records
        still buffered here are not consumed yet."""
        out = {tp: pos for tp, pos in self._positions.items() if pos is not None}
        for r in reversed(self._ready):  # the earliest buffered record of a partition wins
            out[TopicPartition(r.topic, r.partition)] = r.offset
        return out

    def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Store `offsets` (default: what poll() has returned so far) for the group."""
        if self._group is None:
            raise ValueError("commit needs a group_id")
        offsets = self.consumed_offsets() if offsets is None else offsets
        if self._coordinator is not None:
            self._coordinator.commit(offsets)
        else:
            self._group.commit(offsets)

    # -- fetching ---------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched since the last poll, waiting up to `timeout_ms` for some."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self._coordinator is not None:
                self._coordinator.poll(deadline)  # may rebalance: the assignment can change here
            self._resolve_positions()
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            if self._ready:
                if max_records is None or len(self._ready) <= max_records:
                    out, self._ready = self._ready, []
                else:
                    out, self._ready = self._ready[:max_records], self._ready[max_records:]
                return out
            self._send_fetches()
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            self.client.poll(min(left, self.fetch_max_wait_ms / 1000 + 0.1))

    def _send_fetches(self) -> None:
        cluster = self.client.cluster
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, position in self._positions.items():
            if position is None:
                continue
            leader = cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.client.request_metadata_update()
                continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            if node in self._fetching or not self.client.ready(node):
                continue
            fetched = {tp: self._positions[tp] for tp in tps}
            session = self._sessions.get(node)
            if session is None:
                session = self._sessions[node] = FetchSessionHandler(node)
            data = session.build(
                {
                    tp: PartitionData(offset, -1, self.max_partition_fetch_bytes, -1)
                    for tp, offset in fetched.items()
                    if offset is not None
                }
            )
            self._fetching.add(node)
            sent = time.monotonic()
            self.client.send(node, ApiKey.FETCH, self._fetch_body(data),
                             lambda r, e, n=node, f=fetched, d=data, s=sent: self._on_fetch(n, f, d, r, e, s),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
                             max_version=FETCH_MAX_VERSION)  # fmt: skip

    def _fetch_body(self, data: FetchRequestData) -> FetchRequest:
        topics: dict[str, list[FetchPartition]] = {}
        for tp, d in data.to_send.items():
            topics.setdefault(tp.topic, []).append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=d.current_leader_epoch,
                    fetch_offset=d.fetch_offset,
                    last_fetched_epoch=-1,
                    log_start_offset=d.log_start_offset,
                    partition_max_bytes=d.max_bytes,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for tp in data.to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=self.fetch_max_wait_ms,
            min_bytes=self.fetch_min_bytes,
            max_bytes=self.fetch_max_bytes,
            isolation_level=self.isolation_level,
            session_id=data.session_id,
            session_epoch=data.epoch,
            topics=[FetchTopic(topic=t, partitions=parts) for t, parts in topics.items()],
            forgotten_topics_data=[ForgottenTopic(topic=t, partitions=ps) for t, ps in forgotten.items()],
            rack_id="",
        )

    def _on_fetch(self, node: int, fetched: Mapping[TopicPartition, int | None], data: FetchRequestData,
                  resp: Any, exc: BaseException | None, sent: float = 0.0) -> None:  # fmt: skip
        self._fetching.discard(node)
        session = self._sessions[node]
        if exc is not None:
            session.handle_error()
            self.client.request_metadata_update()
            return
        answered = (TopicPartition(t.topic, p.partition_index) for t in resp.responses for p in t.partitions)
        if not session.handle_response(data, resp.error_code, resp.session_id, answered):
            if not resp.error_code or resp.error_code in _SESSION_ERRORS:
                return  # the next fetch is a full one
        self._metrics.fetch_latency_ms.record((time.monotonic() - sent) * 1000)
        ready_before = len(self._ready)
        fetched_bytes = 0
        try:
            if resp.error_code:
                raise for_code(resp.error_code, "Fetch")
            for t in resp.responses:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition_index)
                    if tp not in fetched or self._positions.get(tp) != fetched[tp]:
                        continue  # seeked or unassigned meanwhile: this data is stale
                    fetched_bytes += len(p.records) if p.records else 0
                    self._on_partition_data(tp, fetched[tp], p)
        except Exception as e:  # noqa: BLE001 - handed to the caller of poll()
            self._error = e
        self._record_fetch(len(self._ready) - ready_before, fetched_bytes, fetched)

    def _record_fetch(self, records: int, nbytes: int, fetched: Mapping[TopicPartition, int | None]) -> None:
        m = self._metrics
        m.records_consumed.record(records)
        m.bytes_consumed.record(nbytes)
        # records-lag-max: the high watermark minus the position, over the partitions fetched.
        lags = [
            hw - pos
            for tp in fetched
            if (hw := self.high_watermarks.get(tp)) is not None
            and (pos := self._positions.get(tp)) is not None
        ]
        if lags:
            m.records_lag.record(max(lags))

    def metrics(self) -> dict[str, dict[str, float]]:
        """Kafka's consumer fetch metrics by group and name, as kafka-python returns them
        ({"consumer-fetch-manager-metrics": {"records-lag-max": ..., ...}}); rates, averages and
        maxima cover the last 30-60 s, totals everything since the consumer started."""
        return self._metrics.snapshot()

    def _on_partition_data(self, tp: TopicPartition, position: Any, p: Any) -> None:
        code = p.error_code
        if code == OffsetOutOfRangeException.code:
            if self.auto_offset_reset == "none":
                raise OffsetOutOfRangeException(
                    f"Fetch position {position} is out of range for partition {tp}"
                )
            self._positions[tp] = None  # reset by policy on the next poll
            self._pending_resets[tp] = EARLIEST if self.auto_offset_reset == "earliest" else LATEST
            return
        if code:
            error = for_code(code)
            if error.retriable or isinstance(error, NotLeaderOrFollowerException):
                self.client.request_metadata_update()
                return
            raise for_code(code, f"Fetch for {tp.topic}-{tp.partition}")
        self.high_watermarks[tp] = p.high_watermark
        aborted = (
            [(t.producer_id, t.first_offset) for t in p.aborted_transactions]
            if self.isolation_level == 1 and p.aborted_transactions
            else None
        )
        records, next_offset = decode_record_set(
            tp.topic, tp.partition, p.records, position, self.check_crcs, aborted
        )
        if next_offset is not None and next_offset > position:
            self._positions[tp] = next_offset
        self._ready.extend(records)

    def close(self) -> None:
        try:
            if self._coordinator is not None:
                self._coordinator.close()  # commits (enable.auto.commit) and leaves the group
        finally:
            self.client.close()


def _list_offsets_body(
    tps: list[TopicPartition], where: Mapping[TopicPartition, int], isolation: int
) -> ListOffsetsRequest:
    topics: dict[str, list[ListOffsetsPartition]] = {}
    for tp in tps:
        topics.setdefault(tp.topic, []).append(
            ListOffsetsPartition(partition_index=tp.partition, current_leader_epoch=-1, timestamp=where[tp])
        )
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=[ListOffsetsTopic(name=t, partitions=parts) for t, parts in topics.items()],
    )
