"""Helpers of the Spark suite: topics, test data produced by an independent client, reading back."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import for_code

# Timestamps of produced test records: fixed, so tests can compare them exactly.
BASE_TS = 1_700_000_000_000


def unique_topic(name: str) -> str:
    return f"spark-{re.sub(r'[^A-Za-z0-9]', '-', name)[:60]}-{time.monotonic_ns() % 10**8}"


# The records carry fixed timestamps (BASE_TS, in 2023): past the broker's default 7-day retention,
# so its retention check (every 5 minutes on the session's shared broker) would delete them between
# a test's produce and its read. Each topic keeps its records for good instead.
KEEP_FOREVER = {"retention.ms": "-1"}


def create_topic(bootstrap: str, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient(bootstrap)
    try:
        admin.create_topic(NewTopic(topic, partitions, 1, configs={**KEEP_FOREVER, **(configs or {})}))
        deadline = time.monotonic() + 30
        while True:  # wait until every partition has a leader
            info = admin.describe_topics([topic])[topic]
            if len(info.partitions) == partitions and all(p.leader is not None for p in info.partitions):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} has no leaders yet")
            time.sleep(0.1)
    finally:
        admin.close()


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    admin = AdminClient(bootstrap)
    try:
        admin.create_partitions({topic: (total, None)})
    finally:
        admin.close()


def produce(
    bootstrap: str, topic: str, records: Iterable[tuple[int, bytes | None, bytes, int]], headers: bool = False
) -> None:
    """Produce (partition, key, value, timestamp) with confluent-kafka: an independent client,
    so the data source is not checked against kafkapy's own producer."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, key, value, ts in records:
        extra = {"headers": [("h", value[:2]), ("n", None)]} if headers else {}
        p.produce(topic, value=value, key=key, partition=partition, timestamp=ts, **extra)
    assert p.flush(30) == 0


def numbered(n: int, partitions: int, start: int = 0) -> list[tuple[int, bytes, bytes, int]]:
    """n records spread round-robin over the partitions, with distinct keys and timestamps."""
    return [
        (i % partitions, f"k{i}".encode(), f"v{i}".encode(), BASE_TS + i) for i in range(start, start + n)
    ]


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int, bytes | None, bytes]]:
    """Every record of the topic as (partition, offset, key, value), read with confluent-kafka."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "enable.auto.commit": False})  # fmt: skip
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        ends = {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)
        }
        out: list[tuple[int, int, bytes | None, bytes]] = []
        deadline = time.monotonic() + 30
        while sum(1 for _ in out) < sum(ends.values()) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append((m.partition(), m.offset(), m.key(), m.value()))
        return sorted(out)
    finally:
        c.close()


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """DeleteRecords: move the log start offset of partitions (as retention would)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with BrokerConnection(host, int(port)) as conn:
        conn.api_versions()
        version = conn.pick_version(ApiKey.DELETE_RECORDS)
        body = {
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": p, "offset": o} for p, o in before.items()],
                }
            ],
            "timeout_ms": 10_000,
        }
        resp = conn.send(ApiKey.DELETE_RECORDS, version, body)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    raise for_code(p.error_code, f"DeleteRecords {topic}-{p.partition_index}")


def rows_of(df: object, columns: Sequence[str] = ("partition", "offset", "key", "value")) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in df.collect())  # type: ignore[attr-defined]
