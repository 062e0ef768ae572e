"""The one module through which the data source talks to Kafka: kafkapy's own clients.

Driver side: `SourceClient` (metadata, ListOffsets) over `kafkapy.client.consumer.SimpleConsumer`.
Executor side: `read_records` (a SimpleConsumer assigned to one partition and seeked to the
range's start) and `make_producer` (kafkapy's async `KafkaProducer`). Both speak plain Kafka
protocol, so the data source works against any Kafka-compatible broker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kafkapy.client.consumer import EARLIEST, LATEST, ConsumerRecord, SimpleConsumer
from kafkapy.client.network_client_utils import await_metadata
from kafkapy.common.topic_partition import TopicPartition as ClientTP
from kafkapy.producer import KafkaProducer
from kafkapy.protocol.errors import TimeoutException

__all__ = [
    "EARLIEST",
    "LATEST",
    "ConsumerRecord",
    "SourceClient",
    "TopicPartition",
    "make_producer",
    "read_records",
]

TopicPartition = tuple[str, int]
log = logging.getLogger("kafkapy.spark")
# Kafka consumers leave these out of pattern subscriptions (exclude.internal.topics=true).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# Per-partition bytes per Fetch: large enough that a read is not bound by round trips.
PARTITION_FETCH_BYTES = 8 << 20


class SourceClient:
    """Metadata and offsets for planning, on the driver. Not picklable: make one where used."""

    def __init__(self, bootstrap_servers: str, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self.consumer = SimpleConsumer(
            bootstrap_servers, client_id="kafkapy-spark-driver", request_timeout_ms=int(timeout_s * 1000)
        )

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> SourceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fresh_metadata(self, topics: Iterable[str]) -> Any:
        """Metadata newer than this call, so partitions added since the last look are seen."""
        client = self.consumer.client
        cluster = await_metadata(client, topics, self.timeout_s)
        before = cluster.updated_at
        client.request_metadata_update()
        deadline = time.monotonic() + self.timeout_s
        while client.cluster.updated_at == before:
            if time.monotonic() > deadline:
                raise TimeoutException(f"no metadata refresh within {self.timeout_s}s")
            client.poll(0.05)
        return client.cluster

    def partitions(self, topics: list[str] | None) -> dict[str, list[int]]:
        """{topic: partition ids} for `topics` (None: every non-internal topic); unknown topics
        are left out, as Spark's source leaves them."""
        if topics is None:
            # Not SimpleConsumer.topics(): its first call waits out the whole timeout for a
            # second metadata answer nobody requests.
            self.consumer.client.set_all_topics(True)
            cluster = self._fresh_metadata([])
            names = sorted(t for t in cluster.topics if t not in INTERNAL_TOPICS)
        else:
            names = topics
            cluster = self._fresh_metadata(names)
        out = {}
        for t in names:
            found = cluster.partitions_for(t)
            if found:
                out[t] = sorted(p.partition for p in found)
        return out

    def list_offsets(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """{tp: offset} for {tp: timestamp}: -2 earliest, -1 latest (the high watermark), else the
        first offset whose timestamp is >= it (-1 when none is)."""
        if not query:
            return {}
        # SimpleConsumer's public calls cover earliest/latest only; timestamps go through the
        # same ListOffsets path.
        found = self.consumer._list_offsets({ClientTP(t, p): o for (t, p), o in query.items()})
        return {(tp[0], tp[1]): o for tp, o in found.items()}


def read_records(
    bootstrap_servers: str,
    tp: TopicPartition,
    start: int,
    end: int,
    poll_timeout_s: float,
    on_gap: Any,
) -> Iterator[list[ConsumerRecord]]:
    """The records of [start, end) of one partition, a fetch at a time.

    `on_gap(wanted, earliest)` is called when records below the log start offset are gone
    (before the read, or when the log start moves past us while we read); it raises or
    returns to skip them. When the log ends before `end` (truncation, a recreated topic) it
    is called with earliest=None.
    """
    with SimpleConsumer(
        bootstrap_servers,
        client_id="kafkapy-spark-executor",
        # Only reached if retention removes records while we read: detected below as a gap.
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
        fetch_max_wait_ms=100,
        request_timeout_ms=int(poll_timeout_s * 1000),
    ) as consumer:
        tpk = ClientTP(tp[0], tp[1])
        consumer.assign([tpk])
        earliest = consumer.beginning_offsets([tpk])[tpk]
        position = start
        if earliest > start:
            on_gap(start, earliest)
            position = earliest
        consumer.seek(tpk, position)
        idle_deadline = time.monotonic() + poll_timeout_s
        while position < end:
            records = consumer.poll(timeout_ms=500)
            if records and records[0].offset > position:
                earliest = consumer.beginning_offsets([tpk])[tpk]
                if earliest > position:  # retention moved the log start past us mid-read
                    on_gap(position, earliest)
            new_position = consumer.position(tpk)
            wanted = (
                [r for r in records if r.offset < end] if records and records[-1].offset >= end else records
            )
            if wanted:
                yield wanted
            if new_position > position:
                position, idle_deadline = new_position, time.monotonic() + poll_timeout_s
                continue
            high = consumer.high_watermarks.get(tpk)
            if high is not None and high <= position:
                on_gap(position, None)
                return
            if time.monotonic() > idle_deadline:
                raise TimeoutException(
                    f"Cannot fetch record for offset {position} of {tp[0]}-{tp[1]} in "
                    f"{poll_timeout_s * 1000:.0f} milliseconds (kafkaConsumer.pollTimeoutMs)"
                )


def make_producer(bootstrap_servers: str, kafka_options: Mapping[str, str]) -> KafkaProducer:
    """kafkapy's producer, configured like Spark's sink: `kafka.*` options (prefix removed) go to
    the producer; names it does not know are logged and dropped, as Java's producer warns
    about unused configs instead of failing. acks defaults to all (Kafka 3's default)."""
    from kafkapy.producer.config import ALIASES, CONVERTERS, IGNORED

    config: dict[str, Any] = {"acks": "all", "client.id": "kafkapy-spark-writer"}
    for name, value in kafka_options.items():
        known = name in ALIASES or name in IGNORED or name.replace(".", "_") in CONVERTERS
        if not known or name in ("key.serializer", "value.serializer"):
            log.warning("The configuration 'kafka.%s' was supplied but isn't a known producer config.", name)
            continue
        config[name] = value
    config["bootstrap.servers"] = bootstrap_servers
    return KafkaProducer(config)
