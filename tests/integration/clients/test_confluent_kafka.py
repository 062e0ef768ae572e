"""confluent-kafka (librdkafka) against the shared kafkapy broker: admin, produce/consume in every
codec and acks level with every field checked, keyed partitioning, a 900 KB message, an empty
value with a null key, and ListOffsets.

The producers use `partitioner=murmur2_random` (see confluent_io) so partitions compare with the
Java client's murmur2; the keyed-partitioning test also pins librdkafka's default.
"""

from __future__ import annotations

import os
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
    Message,
    check_round_trip,
    check_stable_partitioning,
    key_for,
    make_messages,
    now_ms,
    stored_codecs,
    wait_until,
)
from confluent_io import OP_TIMEOUT_S, admin, consume_all, create_topic, produce, producer
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import ConfigResource, NewTopic, OffsetSpec

pytestmark = pytest.mark.timeout(120)


# -- admin ------------------------------------------------------------------------------------


def test_admin_creates_lists_describes_and_deletes_topics(bootstrap: str, topic: str) -> None:
    a = admin(bootstrap)
    a.create_topics(
        [NewTopic(topic, PARTITIONS, 1, config={"retention.ms": "7200000", "max.message.bytes": "2000000"})],
        operation_timeout=OP_TIMEOUT_S,
    )[topic].result(OP_TIMEOUT_S)

    assert topic in a.list_topics(timeout=OP_TIMEOUT_S).topics
    md = a.list_topics(topic, timeout=OP_TIMEOUT_S).topics[topic]
    assert md.error is None
    assert sorted(md.partitions) == list(range(PARTITIONS))
    assert all((p.leader, p.replicas, p.isrs) == (0, [0], [0]) for p in md.partitions.values())

    description = a.describe_topics(TopicCollection([topic]))[topic].result(OP_TIMEOUT_S)
    assert description.name == topic
    assert not description.is_internal
    assert [p.id for p in description.partitions] == list(range(PARTITIONS))
    assert all(p.leader.id == 0 for p in description.partitions)
    assert all([r.id for r in p.replicas] == [0] == [r.id for r in p.isr] for p in description.partitions)

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = a.describe_configs([resource])[resource].result(OP_TIMEOUT_S)
    assert configs["retention.ms"].value == "7200000"
    assert configs["max.message.bytes"].value == "2000000"
    assert configs["cleanup.policy"].value == "delete"  # a default, listed too

    with pytest.raises(KafkaException) as again:
        a.create_topics([NewTopic(topic, 1, 1)], operation_timeout=OP_TIMEOUT_S)[topic].result(OP_TIMEOUT_S)
    assert again.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    a.delete_topics([topic], operation_timeout=OP_TIMEOUT_S)[topic].result(OP_TIMEOUT_S)
    wait_until(lambda: topic not in a.list_topics(timeout=OP_TIMEOUT_S).topics, f"{topic} to disappear")

    with pytest.raises(KafkaException) as gone:
        a.delete_topics([topic], operation_timeout=OP_TIMEOUT_S)[topic].result(OP_TIMEOUT_S)
    assert gone.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


# -- produce and consume ----------------------------------------------------------------------


@pytest.mark.parametrize("acks", ACKS)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_keeps_every_field(bootstrap: str, topic: str, codec: str, acks: str) -> None:
    create_topic(bootstrap, topic)
    sent = make_messages(f"ck-{codec}-{acks}")
    delivered = produce(producer(bootstrap, **{"acks": acks, "compression.type": codec}), topic, sent)
    check_round_trip(topic, sent, delivered, consume_all(bootstrap, topic, N_MESSAGES))
    # librdkafka silently sends a codec's batches uncompressed when it believes the broker cannot
    # read them: it enables lz4 only if the broker's ApiVersions answer lists FindCoordinator.
    assert stored_codecs(bootstrap, topic) == {CODEC_IDS[codec]}, "the batches were not sent in this codec"


def test_keyed_partitioning_is_stable_and_matches_murmur2(bootstrap: str, topic: str) -> None:
    """Two producer instances put every key on the same partition, and with
    partitioner=murmur2_random that partition is the Java client's (kafka-python's) murmur2 one.
    librdkafka's default consistent_random is stable too, but on its own CRC32 mapping."""
    create_topic(bootstrap, topic, partitions=7)
    keys = [key_for(i) for i in range(200)]

    def placement_by_key(**config: Any) -> dict[bytes, int]:
        placed: dict[bytes, int] = {}
        errors: list[Any] = []
        p = producer(bootstrap, **config)
        for k in keys:

            def on_delivery(err: Any, msg: Any, k: bytes = k) -> None:
                if err is not None:
                    errors.append(err)
                placed[k] = msg.partition()

            p.produce(topic, key=k, value=b"v", on_delivery=on_delivery)
        assert p.flush(WAIT_S) == 0
        assert not errors
        return placed

    check_stable_partitioning(placement_by_key(), placement_by_key(), 7)
    default_a = placement_by_key(partitioner="consistent_random")
    default_b = placement_by_key(partitioner="consistent_random")
    assert default_a == default_b


def test_large_message_and_empty_value_with_null_key(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, partitions=1)
    big = os.urandom(LARGE_VALUE_SIZE)  # incompressible: 900 KB on the wire too
    ts = now_ms() - 1000
    records = [
        (b"big", big, [("h", b"x")], ts),
        (None, b"", None, ts + 1),  # empty value, null key
        (None, None, [("null-header", None)], ts + 2),  # null value (a tombstone), null header value
        (b"after", b"small", None, ts + 3),
    ]
    p = producer(bootstrap, acks="all", **{"message.max.bytes": 1_000_000})
    delivered: list[tuple[int, int]] = []
    for key, value, headers, t in records:
        p.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            timestamp=t,
            on_delivery=lambda err, msg: delivered.append((err, msg.offset())),
        )
    assert p.flush(WAIT_S) == 0
    assert delivered == [(None, 0), (None, 1), (None, 2), (None, 3)]

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[Any] = []
        deadline = now_ms() + WAIT_S * 1000
        while len(got) < len(records) and now_ms() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg)
    finally:
        consumer.close()
    assert [m.offset() for m in got] == [0, 1, 2, 3]
    assert [(m.key(), m.value(), m.timestamp()) for m in got] == [
        (key, value, (TIMESTAMP_CREATE_TIME, t)) for key, value, _, t in records
    ]
    assert [m.headers() for m in got] == [[("h", b"x")], None, [("null-header", None)], None]
    assert len(got[0].value()) == LARGE_VALUE_SIZE


# -- ListOffsets ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_list_offsets_earliest_latest_and_by_time(bootstrap: str, topic: str, codec: str) -> None:
    """Consumer.get_watermark_offsets and offsets_for_times, and the admin client's
    list_offsets (earliest, latest, max timestamp, for timestamp), on one partition whose
    messages are 10 ms apart, so a time between two messages names the later one."""
    create_topic(bootstrap, topic, partitions=1)
    count, step, base = 1000, 10, now_ms() - 600_000
    msgs = [Message(i, key_for(i), b"lo|%06d|" % i, (), base + step * i) for i in range(count)]
    produce(producer(bootstrap, acks="all", **{"compression.type": codec}), topic, msgs)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader"})
    try:
        tp = TopicPartition(topic, 0)
        assert consumer.get_watermark_offsets(tp, OP_TIMEOUT_S, cached=False) == (0, count)
        cases = {0: 0, base + 1: 1, base + step * 500: 500, base + step * 500 - 3: 500}
        cases |= {base + step * (count - 1): count - 1, base + step * count: -1}
        found = {
            ts: consumer.offsets_for_times([TopicPartition(topic, 0, ts)], OP_TIMEOUT_S)[0] for ts in cases
        }
        assert {ts: (f.error, f.offset) for ts, f in found.items()} == {
            ts: (None, k) for ts, k in cases.items()
        }
    finally:
        consumer.close()

    a = admin(bootstrap)
    specs = {
        "earliest": (OffsetSpec.earliest(), 0),
        "latest": (OffsetSpec.latest(), count),
        "max": (OffsetSpec.max_timestamp(), count - 1),
        "k=700": (OffsetSpec.for_timestamp(base + step * 700), 700),
    }
    tp = TopicPartition(topic, 0)
    got = {name: a.list_offsets({tp: spec})[tp].result(OP_TIMEOUT_S) for name, (spec, _) in specs.items()}
    assert {name: r.offset for name, r in got.items()} == {name: want for name, (_, want) in specs.items()}
    by_time = got["k=700"]
    assert by_time.timestamp == base + step * 700
