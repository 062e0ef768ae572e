"""confluent-kafka (librdkafka) plumbing shared by the suites that drive it: create a topic,
produce `Message`s with delivery reports, read a whole topic back as `Consumed` records.

librdkafka numbers CreateTime 1 (TIMESTAMP_CREATE_TIME); it is mapped to Kafka's 0 here. Its
default partitioner is consistent_random (CRC32); `producer()` sets murmur2_random, the Java
client's choice, so partitions compare with kafka-python's murmur2 and with aiokafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from client_helpers import PARTITIONS, WAIT_S, Consumed, Delivered, Message, index_of, now_ms
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

OP_TIMEOUT_S = 30.0
CREATE_TIME = 0


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS, **config: str) -> None:
    a = admin(bootstrap)  # must outlive the future: a destroyed handle fails it with _DESTROY
    futures = a.create_topics([NewTopic(topic, partitions, 1, config=config)], operation_timeout=OP_TIMEOUT_S)
    futures[topic].result(OP_TIMEOUT_S)


def producer(bootstrap: str, **config: Any) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "partitioner": "murmur2_random",
            "linger.ms": 5,
            "message.timeout.ms": int(WAIT_S * 1000),
            **config,
        }
    )


def produce(p: Producer, topic: str, messages: Sequence[Message]) -> list[Delivered]:
    delivered: list[Delivered] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append(Delivered(index_of(msg.value()), msg.partition(), msg.offset()))

    for m in messages:
        p.produce(
            topic,
            key=m.key,
            value=m.value,
            headers=list(m.headers),
            timestamp=m.timestamp,
            on_delivery=on_delivery,
        )
        p.poll(0)
    assert p.flush(WAIT_S) == 0, "messages still queued after flush"
    assert not errors, errors[:5]
    return delivered


def to_consumed(msg: Any) -> Consumed:
    ts_type, ts = msg.timestamp()
    return Consumed(
        msg.topic(),
        msg.partition(),
        msg.offset(),
        msg.key(),
        msg.value(),
        tuple(msg.headers() or ()),
        CREATE_TIME if ts_type == TIMESTAMP_CREATE_TIME else -ts_type,
        ts,
    )


def consume_all(bootstrap: str, topic: str, count: int, partitions: int = PARTITIONS) -> list[Consumed]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "check.crcs": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: list[Consumed] = []
        deadline = now_ms() + WAIT_S * 1000
        while len(out) < count and now_ms() < deadline:
            for msg in consumer.consume(num_messages=5000, timeout=0.5):
                assert msg.error() is None, msg.error()
                out.append(to_consumed(msg))
        # No duplicates hide past `count`: the logs' ends add up to exactly what was sent.
        ends = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), OP_TIMEOUT_S) for p in range(partitions)
        ]
        assert [low for low, _ in ends] == [0] * partitions
        assert sum(high for _, high in ends) == count
        return out
    finally:
        consumer.close()
