"""kafkapy's producer against a real ZooKeeper and kafkapy broker: every codec read back by
confluent-kafka and kafka-python, keys placed as librdkafka's murmur2_random places them,
idempotence, callbacks, and a full buffer that blocks then fails with a clear error."""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.producer import BufferExhaustedError, KafkaProducer
from kafkapy.testing import KafkapyCluster

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    name = f"producer-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(bootstrap)
    try:
        admin.create_topic(NewTopic(name, partitions, 1))
    finally:
        admin.close()
    return name


def read_confluent(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                assert m.error() is None, m.error()
                out.append((m.partition(), m.key(), m.value()))
    finally:
        consumer.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_through_confluent_kafka_and_kafka_python(
    kafkapy_shared_cluster: KafkapyCluster, codec: str
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap)
    sent = [(b"key-%d" % (i % 17), b"value-%d-" % i + b"x" * (i % 300)) for i in range(3000)]
    with KafkaProducer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5}) as p:
        futures = [p.send(topic, v, key=k) for k, v in sent]
        p.flush(30)
    metadata = [f.get(0) for f in futures]
    assert all(m.offset >= 0 for m in metadata)
    got = read_confluent(bootstrap, topic, 3, len(sent))
    assert sorted((k, v) for _, k, v in got) == sorted(sent)
    by_partition = {(md.partition, k, v) for md, (k, v) in zip(metadata, sent, strict=True)}
    assert set(got) == by_partition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.assign([KpTopicPartition(topic, p) for p in range(3)])
    consumer.seek_to_beginning()
    read = [(m.key, m.value) for m in consumer]
    consumer.close()
    assert sorted(read) == sorted(sent)


def test_keys_land_on_the_partitions_librdkafka_murmur2_random_chooses(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, partitions=7)
    keys = [b"user-%d" % i for i in range(200)] + [b"", b"\xff\xfe\x00", "ключ".encode()]
    ours: dict[bytes, int] = {}
    with KafkaProducer({"bootstrap.servers": bootstrap}) as p:
        for k in keys:
            ours[k] = p.send(topic, b"ours", key=k).get(30).partition
    theirs: dict[bytes, int] = {}

    def record(err: object, msg: object) -> None:
        assert err is None
        theirs[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    rd = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for k in keys:
        rd.produce(topic, b"theirs", key=k, on_delivery=record)
    assert rd.flush(30) == 0
    assert ours == theirs


def test_idempotent_producer_numbers_batches_and_callbacks_report_offsets(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, partitions=1)
    seen: list[tuple[int, int]] = []
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "batch.size": 1024}
    with KafkaProducer(config) as p:
        for i in range(500):
            p.send(topic, b"%d" % i, callback=lambda md, exc: seen.append((md.partition, md.offset)))
        p.flush(30)
    assert sorted(o for _, o in seen) == list(range(500))
    assert [v for _, _, v in read_confluent(bootstrap, topic, 1, 500)] == [b"%d" % i for i in range(500)]


def test_old_producer_properties_are_accepted(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, partitions=1)
    legacy = {
        "metadata.broker.list": bootstrap,
        "producer.type": "sync",
        "request.required.acks": "-1",
        "compression.codec": "snappy",
        "queue.buffering.max.ms": "10",
        "batch.num.messages": "50",
        "queue.buffering.max.messages": "1000",
        "queue.enqueue.timeout.ms": "-1",
        "message.send.max.retries": "3",
    }
    with KafkaProducer(legacy) as p:
        future = p.send(topic, b"sync")
        assert future.done()  # producer.type=sync waited for the acknowledgement
    assert read_confluent(bootstrap, topic, 1, 1)[0][2] == b"sync"


@pytest.mark.kafkapy_cluster(brokers=1)
@pytest.mark.timeout(150)
def test_full_buffer_blocks_for_max_block_ms_then_fails_clearly(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    topic = new_topic(bootstrap, partitions=1)
    config = {"bootstrap.servers": bootstrap, "buffer.memory": 65536, "batch.size": 16384, "max.block.ms": 500,
              "request.timeout.ms": 60000, "delivery.timeout.ms": 120000}  # fmt: skip
    p = KafkaProducer(config)
    p.send(topic, b"warm-up").get(30)
    broker = kafkapy_cluster.brokers[0].process
    assert broker is not None
    os.kill(broker.pid, signal.SIGSTOP)  # the broker stops reading: nothing gets acknowledged
    try:
        value = b"x" * 1000
        with pytest.raises(
            BufferExhaustedError,
            match="Failed to allocate memory within the configured max blocking time 500 ms",
        ):  # noqa: E501
            for _ in range(1000):
                p.send(topic, value)
        started = time.monotonic()
        with pytest.raises(BufferExhaustedError):
            p.send(topic, value)
        assert 0.45 <= time.monotonic() - started < 5
    finally:
        os.kill(broker.pid, signal.SIGCONT)
    p.flush(60)  # once the broker reads again, everything queued goes out
    p.close(30)
