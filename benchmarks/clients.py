"""Python clients against the same kafkapy broker: kafka-python's next to kafkapy's own.

Same workload for every client: N records of 1 KB to a 1-partition topic with acks=1,
linger 5 ms and 256 KB batches, timed to the last ack; then the same records read from the
start. kafkapy's producer (`kafkapy.producer.KafkaProducer`) and its legacy consumer
(`kafkapy.consumer_legacy.ZookeeperConsumerConnector`, which registers in ZooKeeper and
rebalances first: that is inside its timing) are measured when they import; otherwise the
result says "not available" and the hook stays in place. kafka-python's consumer is assigned
the partition (no group).
"""

from __future__ import annotations

import importlib
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window, throughput

RECORD_SIZE = 1024
PRODUCER_SETTINGS = {"acks": 1, "linger_ms": 5, "batch_size": 262_144}


def _python_produce(
    factory: Callable[..., Any], broker: RunningBroker, topic: str, records: int
) -> dict[str, Any]:
    producer = factory(bootstrap_servers=broker.bootstrap, **PRODUCER_SETTINGS)
    try:
        producer.send(topic, value=b"warm-up").get(30)  # metadata and connection first
        value = os.urandom(RECORD_SIZE)
        send = producer.send
        window = Window(broker).start()
        futures = [send(topic, value=value) for _ in range(records)]
        producer.flush(120)
        window.stop()
        failed = sum(1 for f in futures if _failed(f))
    finally:
        producer.close()
    if failed:
        raise RuntimeError(f"{failed} of {records} records failed")
    return throughput(records, RECORD_SIZE, window)


def _failed(future: Any) -> bool:
    if hasattr(future, "failed"):  # kafka-python
        return bool(future.failed())
    return future.exception(0) is not None  # kafkapy: concurrent.futures' spelling


def kafka_python_produce(broker: RunningBroker, topic: str, records: int) -> dict[str, Any]:
    from kafka import KafkaProducer

    return _python_produce(KafkaProducer, broker, topic, records)


def kafka_python_consume(broker: RunningBroker, topic: str, records: int) -> dict[str, Any]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = 0
        window = Window(broker).start()
        deadline = time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000, max_records=10_000).values():
                got += len(batch)
        window.stop()
    finally:
        consumer.close()
    if got < records:
        raise RuntimeError(f"{got} of {records} records in time")
    return throughput(records, RECORD_SIZE, window)


def kafkapy_produce(broker: RunningBroker, topic: str, records: int) -> dict[str, Any]:
    try:
        factory = importlib.import_module("kafkapy.producer").KafkaProducer
    except (ImportError, AttributeError):
        return {"available": False, "note": "kafkapy.producer.KafkaProducer does not exist yet"}
    return _python_produce(factory, broker, topic, records)


def kafkapy_consume(broker: RunningBroker, topic: str, records: int) -> dict[str, Any]:
    try:
        module = importlib.import_module("kafkapy.consumer_legacy")
        connector_class, config_class = module.ZookeeperConsumerConnector, module.ConsumerConfig
    except (ImportError, AttributeError):
        return {"available": False, "note": "kafkapy.consumer_legacy has no ZookeeperConsumerConnector yet"}
    props = {
        "group.id": f"bench-{uuid.uuid4().hex[:8]}",
        "zookeeper.connect": broker.zookeeper_connect,
        "auto.offset.reset": "smallest",
        "auto.commit.enable": "false",
    }
    window = Window(broker).start()  # group registration and rebalance are part of its cost
    connector = connector_class(config_class.from_props(props))
    try:
        (stream,) = connector.create_message_streams({topic: 1})[topic]
        got = 0
        for _ in stream:
            got += 1
            if got >= records:
                break
        window.stop()
    finally:
        connector.shutdown()
    return throughput(records, RECORD_SIZE, window)


CLIENTS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[..., dict[str, Any]]]] = {
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "kafkapy": (kafkapy_produce, kafkapy_consume),
}


def run(broker: RunningBroker, records: int, create_topic: Callable[[str], None]) -> dict[str, Any]:
    """Each client's produce then consume figures, each on its own fresh topic."""
    out: dict[str, Any] = {}
    for name, (produce, consume) in CLIENTS.items():
        topic = f"clients-{name}"
        create_topic(topic)
        result: dict[str, Any] = {}
        try:
            result["produce"] = produce(broker, topic, records)
            if result["produce"].get("available", True):
                # +1: the warm-up record sent before the clock started
                result["consume"] = consume(broker, topic, records + 1)
        except Exception as e:  # a client being written must not sink the whole run
            result["error"] = f"{type(e).__name__}: {e}"
        out[name] = result
    return out
