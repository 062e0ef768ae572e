"""ProducerConfig: Kafka's defaults, the old producer's names, and Kafka's checks."""

from __future__ import annotations

import pytest

from kafkapy.producer.config import INT32_MAX, ProducerConfig
from kafkapy.protocol.record_batch import CompressionType


def test_defaults_are_kafka_2_8s() -> None:
    c = ProducerConfig.parse({"bootstrap.servers": "h:1"})
    assert (c.acks, c.batch_size, c.linger_ms, c.buffer_memory, c.max_block_ms) == (
        1,
        16384,
        0,
        33554432,
        60000,
    )
    assert (c.retries, c.max_in_flight_requests_per_connection, c.delivery_timeout_ms) == (
        INT32_MAX,
        5,
        120000,
    )


def test_old_producer_names_are_aliases() -> None:
    c = ProducerConfig.parse({
        "metadata.broker.list": "h:1", "request.required.acks": "-1", "queue.buffering.max.ms": "25",
        "compression.codec": "2", "queue.enqueue.timeout.ms": "-1", "batch.num.messages": "200",
        "queue.buffering.max.messages": "10000", "producer.type": "sync", "serializer.class": "kafka.serializer.DefaultEncoder",
    })  # fmt: skip
    assert c.bootstrap_servers == "h:1" and c.acks == -1 and c.linger_ms == 25
    assert c.compression_type == CompressionType.SNAPPY and c.max_block_ms == INT32_MAX
    assert (c.batch_num_messages, c.queue_buffering_max_messages, c.sync) == (200, 10000, True)


def test_python_keyword_spelling_and_validation() -> None:
    assert ProducerConfig.parse(bootstrap_servers=["a:1", "b:2"], acks="all").acks == -1
    with pytest.raises(ValueError, match="Unknown producer config: bogus.name"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "bogus.name": "1"})
    with pytest.raises(ValueError, match="Must set acks to all"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "enable.idempotence": "true"})
    with pytest.raises(ValueError, match="bootstrap.servers"):
        ProducerConfig.parse({})
    with pytest.raises(ValueError, match="Invalid compression type"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "compression.type": "brotli"})
