"""kafka-python 3.0 against the shared kafkapy broker: admin, produce/consume in every codec and
acks level with every field checked, keyed partitioning, a 900 KB message, an empty value with a
null key, and ListOffsets (consumer and admin).

kafka-python 3 turns `enable_idempotence` on by default, which requires acks=all: the acks=all
runs keep it (so they go through InitProducerId and sequenced batches), the acks=1 runs turn it
off, as the client demands.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from client_helpers import (
    ACKS,
    CODEC_IDS,
    CODECS,
    LARGE_VALUE_SIZE,
    N_MESSAGES,
    PARTITIONS,
    WAIT_S,
    Consumed,
    Delivered,
    Message,
    check_round_trip,
    check_stable_partitioning,
    key_for,
    make_messages,
    now_ms,
    stored_codecs,
    wait_until,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetSpec, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

pytestmark = pytest.mark.timeout(120)

TIMEOUT_MS = 30_000


@contextmanager
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    try:
        yield a
    finally:
        a.close()


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    with admin(bootstrap) as a:
        a.create_topics(
            {topic: {"num_partitions": partitions, "replication_factor": 1}},
            timeout_ms=TIMEOUT_MS,
            wait_for_metadata=True,
        )


@contextmanager
def producer(bootstrap: str, **config: Any) -> Iterator[KafkaProducer]:
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=TIMEOUT_MS, **config)
    try:
        yield p
    finally:
        p.close(timeout=WAIT_S)


def produce(p: KafkaProducer, topic: str, messages: Sequence[Message]) -> list[Delivered]:
    futures = [
        (m.index, p.send(topic, key=m.key, value=m.value, headers=list(m.headers), timestamp_ms=m.timestamp))
        for m in messages
    ]
    p.flush(timeout=WAIT_S)
    out = []
    for index, future in futures:
        md = future.get(timeout=WAIT_S)
        out.append(Delivered(index, md.partition, md.offset))
    return out


def consume_all(bootstrap: str, topic: str, count: int, partitions: int = PARTITIONS) -> list[Consumed]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest", check_crcs=True
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        out: list[Consumed] = []
        deadline = time.monotonic() + WAIT_S
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500, max_records=5000).values():
                out.extend(
                    Consumed(
                        r.topic,
                        r.partition,
                        r.offset,
                        r.key,
                        r.value,
                        tuple(r.headers),
                        r.timestamp_type,
                        r.timestamp,
                    )
                    for r in records
                )
        # No duplicates hide past `count`: the logs' ends add up to exactly what was sent.
        assert set(consumer.beginning_offsets(tps).values()) == {0}
        assert sum(consumer.end_offsets(tps).values()) == count
        return out
    finally:
        consumer.close()


# -- admin ------------------------------------------------------------------------------------


def test_admin_creates_lists_describes_and_deletes_topics(bootstrap: str, topic: str) -> None:
    with admin(bootstrap) as a:
        created = a.create_topics(
            {
                topic: {
                    "num_partitions": PARTITIONS,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "7200000", "max.message.bytes": "2000000"},
                }
            },
            timeout_ms=TIMEOUT_MS,
            wait_for_metadata=True,
        )
        assert [(t["name"], t["error_code"], t["num_partitions"]) for t in created["topics"]] == [
            (topic, 0, PARTITIONS)
        ]
        assert topic in a.list_topics()

        [described] = a.describe_topics([topic])
        assert (described["name"], described["error_code"], described["is_internal"]) == (topic, 0, False)
        parts = sorted(described["partitions"], key=lambda p: p["partition_index"])
        assert [
            (p["partition_index"], p["error_code"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in parts
        ] == [(i, 0, 0, [0], [0]) for i in range(PARTITIONS)]

        configs = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        topic_configs = configs["topic"][topic]
        assert topic_configs["retention.ms"]["value"] == "7200000"
        assert topic_configs["max.message.bytes"]["value"] == "2000000"

        with pytest.raises(TopicAlreadyExistsError):
            a.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}}, timeout_ms=TIMEOUT_MS)

        deleted = a.delete_topics([topic], timeout_ms=TIMEOUT_MS)
        assert [(t["name"], t["error_code"]) for t in deleted["topics"]] == [(topic, 0)]
        wait_until(lambda: topic not in a.list_topics(), f"{topic} to disappear")
        with pytest.raises(UnknownTopicOrPartitionError):
            a.delete_topics([topic], timeout_ms=TIMEOUT_MS)


# -- produce and consume ----------------------------------------------------------------------


@pytest.mark.parametrize("acks", ACKS)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_keeps_every_field(bootstrap: str, topic: str, codec: str, acks: str) -> None:
    create_topic(bootstrap, topic)
    sent = make_messages(f"kp-{codec}-{acks}")
    config = {
        "acks": "all" if acks == "all" else 1,
        "compression_type": None if codec == "none" else codec,
        "enable_idempotence": acks == "all",
    }
    with producer(bootstrap, **config) as p:
        delivered = produce(p, topic, sent)
    check_round_trip(topic, sent, delivered, consume_all(bootstrap, topic, N_MESSAGES))
    assert stored_codecs(bootstrap, topic) == {CODEC_IDS[codec]}, "the batches were not sent in this codec"


def test_keyed_partitioning_is_stable_and_matches_murmur2(bootstrap: str, topic: str) -> None:
    """kafka-python's DefaultPartitioner is the Java client's murmur2: two producer instances
    agree with each other and with the reference hash."""
    create_topic(bootstrap, topic, partitions=7)
    keys = [key_for(i) for i in range(200)]

    def placement() -> dict[bytes, int]:
        with producer(bootstrap, acks=1, enable_idempotence=False) as p:
            futures = {k: p.send(topic, key=k, value=b"v") for k in keys}
            p.flush(timeout=WAIT_S)
            return {k: f.get(timeout=WAIT_S).partition for k, f in futures.items()}

    check_stable_partitioning(placement(), placement(), 7)


def test_large_message_and_empty_value_with_null_key(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, partitions=1)
    big = os.urandom(LARGE_VALUE_SIZE)  # incompressible: 900 KB on the wire too
    ts = now_ms() - 1000
    records = [
        (b"big", big, [("h", b"x")], ts),
        (None, b"", [], ts + 1),  # empty value, null key
        # kafka-python refuses a record with neither key nor value ("Need at least one: key
        # or value"), so its tombstone here carries a key.
        (b"gone", None, [], ts + 2),
        (b"after", b"small", [], ts + 3),
    ]
    with producer(bootstrap, acks="all") as p:
        futures = [p.send(topic, key=k, value=v, headers=h, timestamp_ms=t) for k, v, h, t in records]
        p.flush(timeout=WAIT_S)
        assert [f.get(timeout=WAIT_S).offset for f in futures] == [0, 1, 2, 3]

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got: list[Any] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < len(records) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(batch)
    finally:
        consumer.close()
    assert [r.offset for r in got] == [0, 1, 2, 3]
    assert [(r.key, r.value, list(r.headers), r.timestamp_type, r.timestamp) for r in got] == [
        (k, v, h, 0, t) for k, v, h, t in records
    ]
    assert len(got[0].value) == LARGE_VALUE_SIZE


# -- ListOffsets ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_list_offsets_earliest_latest_and_by_time(bootstrap: str, topic: str, codec: str) -> None:
    """KafkaConsumer.beginning_offsets/end_offsets/offsets_for_times and the admin client's
    list_partition_offsets (earliest, latest, max timestamp, a timestamp), on one partition
    whose messages are 10 ms apart, so a time between two messages names the later one."""
    create_topic(bootstrap, topic, partitions=1)
    count, step, base = 1000, 10, now_ms() - 600_000
    msgs = [Message(i, key_for(i), b"lo|%06d|" % i, (), base + step * i) for i in range(count)]
    with producer(bootstrap, acks="all", compression_type=None if codec == "none" else codec) as p:
        produce(p, topic, msgs)

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: count}
        cases = {0: 0, base + 1: 1, base + step * 500: 500, base + step * 500 - 3: 500}
        cases |= {base + step * (count - 1): count - 1}
        found = {ts: consumer.offsets_for_times({tp: ts}, timeout_ms=TIMEOUT_MS)[tp] for ts in cases}
        got = {ts: (f.offset, f.timestamp) if f else None for ts, f in found.items()}
        assert got == {ts: (k, base + step * k) for ts, k in cases.items()}
        assert consumer.offsets_for_times({tp: base + step * count}, timeout_ms=TIMEOUT_MS) == {tp: None}
    finally:
        consumer.close()

    with admin(bootstrap) as a:
        specs = {
            "earliest": (OffsetSpec.EARLIEST, 0),
            "latest": (OffsetSpec.LATEST, count),
            "max": (OffsetSpec.MAX_TIMESTAMP, count - 1),
            "k=700": (base + step * 700, 700),
        }
        got = {
            name: a.list_partition_offsets({tp: spec}, timeout_ms=TIMEOUT_MS)[tp].offset
            for name, (spec, _) in specs.items()
        }
        assert got == {name: want for name, (_, want) in specs.items()}
