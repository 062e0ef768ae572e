"""The little Kafka client the data source needs: metadata, offsets, fetch, produce.

Kept in this one module on purpose: kafkapy's general network client, consumer and async
producer are being written alongside; when they land, this module is the one to swap. It
speaks plain Kafka protocol through `BrokerConnection` (one socket per broker), so the data
source works against any Kafka-compatible broker, not only kafkapy's.

Every call is blocking and bounded by the client's timeout. Errors a refreshed metadata view
can cure (leader moved, broker gone) are retried a few times; the rest become the typed
exceptions of `kafkapy.protocol.errors`, carrying the broker's error name.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkapy.client.admin import parse_bootstrap, raise_for_error
from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    BY_CODE,
    KafkaError,
    LeaderNotAvailableException,
    NetworkException,
    TimeoutException,
    UnknownServerException,
)

EARLIEST = -2
LATEST = -1
# Our caps: Fetch v13+ names topics by id and Metadata v10+ would need topic ids to use them;
# names are all we have and all any broker since 2.x accepts.
OUR_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.METADATA: (1, 9),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.FETCH: (4, 12),
    ApiKey.PRODUCE: (3, 9),
}
RETRIES = 5
RETRY_BACKOFF_S = 0.2

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """One partition of a Fetch answer: raw record batches plus the log's bounds."""

    records: memoryview
    high_watermark: int
    log_start_offset: int


class KafkaWire:
    """Connections to the brokers of one cluster, found from `bootstrap_servers`."""

    def __init__(self, bootstrap_servers: str, client_id: str = "kafkapy-spark", timeout_s: float = 30.0):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._conns: dict[tuple[str, int], BrokerConnection] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[TopicPartition, int] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            with contextlib.suppress(Exception):
                conn.close()
        self._conns.clear()

    def __enter__(self) -> KafkaWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections ------------------------------------------------------------------------

    def _conn(self, address: tuple[str, int]) -> BrokerConnection:
        conn = self._conns.get(address)
        if conn is None:
            # Fetch long-polls up to its max wait on top of the transfer: give the socket room.
            conn = BrokerConnection(address[0], address[1], self.client_id, self.timeout_s + 5)
            conn.api_versions()
            self._conns[address] = conn
        return conn

    def _send(self, address: tuple[str, int], api_key: ApiKey, body: Any) -> tuple[int, Any]:
        try:
            conn = self._conn(address)
            version = conn.pick_version(api_key, OUR_VERSIONS[api_key])
            return version, conn.send(api_key, version, body)
        except NetworkException:
            conn = self._conns.pop(address, None)
            if conn is not None:
                conn.close()
            raise

    # -- metadata ---------------------------------------------------------------------------

    def metadata(self, topics: Sequence[str] | None) -> dict[str, list[int]]:
        """{topic: sorted partition ids} for `topics` (None: every topic), refreshing leaders.

        Topics the cluster does not know are left out; Spark's source ignores them the same way.
        """
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        last: Exception | None = None
        for address in dict.fromkeys([*self.brokers.values(), *self.bootstrap]):
            try:
                _, md = self._send(address, ApiKey.METADATA, body)
            except KafkaError as e:  # that broker is unreachable: ask the next one
                last = e
                continue
            self.brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
            result: dict[str, list[int]] = {}
            for t in md.topics:
                if t.error_code != 0 or t.is_internal:
                    continue
                result[t.name] = sorted(p.partition_index for p in t.partitions)
                for p in t.partitions:
                    self.leaders[(t.name, p.partition_index)] = p.leader_id
            return result
        raise NetworkException(f"no broker of {self.bootstrap} answered Metadata: {last}")

    def _leader(self, tp: TopicPartition) -> tuple[str, int]:
        leader = self.leaders.get(tp, -1)
        if leader < 0 or leader not in self.brokers:
            self.metadata([tp[0]])
            leader = self.leaders.get(tp, -1)
        if leader < 0 or leader not in self.brokers:
            raise LeaderNotAvailableException(f"{tp[0]}-{tp[1]} has no leader")
        return self.brokers[leader]

    def _by_leader(self, tps: Iterable[TopicPartition]) -> dict[tuple[str, int], list[TopicPartition]]:
        groups: dict[tuple[str, int], list[TopicPartition]] = {}
        for tp in tps:
            groups.setdefault(self._leader(tp), []).append(tp)
        return groups

    def _retrying(self, what: str, call: Any) -> Any:
        """Run call() again after a metadata refresh when the error says the view is stale."""
        for attempt in range(RETRIES):
            try:
                return call()
            except KafkaError as e:
                if not (getattr(e, "retriable", False) or isinstance(e, NetworkException)):
                    raise
                if attempt == RETRIES - 1:
                    raise type(e)(f"{what}: {e} (after {RETRIES} attempts)") from e
                self.leaders.clear()
                time.sleep(RETRY_BACKOFF_S * (attempt + 1))
        raise AssertionError("unreachable")

    # -- offsets ----------------------------------------------------------------------------

    def list_offsets(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """{tp: offset} for {tp: timestamp}: -2 earliest, -1 latest (the high watermark), or the
        first offset whose timestamp is >= the given one (-1 when there is none)."""
        return self._retrying("ListOffsets", lambda: self._list_offsets(query))

    def _list_offsets(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for address, tps in self._by_leader(query).items():
            topics: dict[str, list[dict[str, int]]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(
                    {"partition_index": p, "timestamp": query[(t, p)], "current_leader_epoch": -1}
                )
            body = {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
            _, answer = self._send(address, ApiKey.LIST_OFFSETS, body)
            for t in answer.topics:
                for p in t.partitions:
                    raise_error(p.error_code, f"ListOffsets {t.name}-{p.partition_index}")
                    out[(t.name, p.partition_index)] = p.offset
        return out

    # -- fetch ------------------------------------------------------------------------------

    def fetch(
        self, tp: TopicPartition, offset: int, max_bytes: int = 8 << 20, max_wait_ms: int = 100
    ) -> FetchedPartition:
        """Record batches of one partition from `offset`, read from its leader.

        Raises OffsetOutOfRangeException (log start moved past `offset`) as the broker says.
        """
        return self._retrying(
            f"Fetch {tp[0]}-{tp[1]}", lambda: self._fetch(tp, offset, max_bytes, max_wait_ms)
        )

    def _fetch(self, tp: TopicPartition, offset: int, max_bytes: int, max_wait_ms: int) -> FetchedPartition:
        body = {
            "replica_id": -1,
            "max_wait_ms": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,  # FINAL_EPOCH: a sessionless full fetch
            "topics": [
                {
                    "topic": tp[0],
                    "partitions": [
                        {
                            "partition": tp[1],
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": max_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        _, answer = self._send(self._leader(tp), ApiKey.FETCH, body)
        raise_error(answer.error_code, f"Fetch {tp[0]}-{tp[1]}")
        for t in answer.responses:
            for p in t.partitions:
                if p.partition_index == tp[1]:
                    raise_error(p.error_code, f"Fetch {tp[0]}-{tp[1]} at offset {offset}")
                    records = p.records if p.records is not None else memoryview(b"")
                    return FetchedPartition(memoryview(records), p.high_watermark, p.log_start_offset)
        raise UnknownServerException(f"Fetch {tp[0]}-{tp[1]}: the answer did not include the partition")

    # -- produce ----------------------------------------------------------------------------

    def produce(
        self, batches: Mapping[TopicPartition, bytes], acks: int = -1, timeout_ms: int = 30_000
    ) -> None:
        """Send one record batch per partition to the leaders; raise the first broker error."""
        pending = dict(batches)

        def attempt() -> None:
            for address, tps in self._by_leader(list(pending)).items():
                topics: dict[str, list[dict[str, Any]]] = {}
                for t, p in tps:
                    topics.setdefault(t, []).append({"index": p, "records": pending[(t, p)]})
                body = {
                    "transactional_id": None,
                    "acks": acks,
                    "timeout_ms": timeout_ms,
                    "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()],
                }
                _, answer = self._send(address, ApiKey.PRODUCE, body)
                for t in answer.responses:
                    for p in t.partition_responses:
                        message = getattr(p, "error_message", None)
                        raise_error(p.error_code, f"Produce {t.name}-{p.index}", message)
                        pending.pop((t.name, p.index), None)

        self._retrying("Produce", attempt)


def raise_error(code: int, context: str, message: str | None = None) -> None:
    """A non-zero error code as its typed exception, the call and Kafka's error name in the text."""
    if code == 0:
        return
    name = BY_CODE.get(code, UnknownServerException).name
    try:
        raise_for_error(code, message)
    except KafkaError as e:
        raise type(e)(f"{context}: {name}: {e}") from None


__all__ = ["EARLIEST", "LATEST", "FetchedPartition", "KafkaWire", "TimeoutException", "raise_error"]


# -- a minimal producer (the async kafkapy producer replaces it once it exists) ----------------


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2, so keyed rows land where a Java producer would put them."""
    length = len(data)
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length % 4
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def default_partition(key: bytes | None, num_partitions: int, sticky: int) -> int:
    """Kafka's default partitioner: murmur2 of the key, or the current sticky partition."""
    if key is None:
        return sticky % num_partitions
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class SimpleProducer:
    """Batches records per partition and sends them synchronously when a batch fills or on
    flush(); any broker error raises. Enough for Spark's at-least-once sink semantics."""

    def __init__(self, wire: KafkaWire, acks: int = -1, batch_bytes: int = 1 << 20) -> None:
        self.wire = wire
        self.acks = acks
        self.batch_bytes = batch_bytes
        self._partitions: dict[str, int] = {}
        self._sticky = 0
        self._pending: dict[TopicPartition, list[tuple[bytes | None, bytes | None, list[Any], int]]] = {}
        self._size = 0

    def _num_partitions(self, topic: str) -> int:
        n = self._partitions.get(topic)
        if n is None:
            found = self.wire.metadata([topic]).get(topic)
            if not found:
                from kafkapy.protocol.errors import UnknownTopicOrPartitionException

                raise UnknownTopicOrPartitionException(f"Topic {topic} not present in metadata")
            n = self._partitions[topic] = len(found)
        return n

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        if partition is None:
            partition = default_partition(key, self._num_partitions(topic), self._sticky)
        ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        self._pending.setdefault((topic, partition), []).append((key, value, headers or [], ts))
        self._size += len(value or b"") + len(key or b"") + 16
        if self._size >= self.batch_bytes:
            self.flush()

    def flush(self) -> None:
        from kafkapy.protocol.record_batch import build_batch

        if not self._pending:
            return
        batches = {tp: bytes(build_batch(records)) for tp, records in self._pending.items()}
        self.wire.produce(batches, self.acks)
        self._pending.clear()
        self._size = 0
        self._sticky += 1  # a new sticky partition for keyless records after each batch
