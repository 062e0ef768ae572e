"""Produce throughput with confluent-kafka (librdkafka): N records of one size, timed to the last ack.

librdkafka's defaults otherwise (linger.ms=5, batch.size=1,000,000, no compression, no
idempotence): it sends ~0.9 MB produce requests here. Values are random bytes, so nothing
compresses. Delivery reports are asked for failures only (`delivery.report.only.error`), so the
Python callback does not run per record; a run with any failed record is an error, not a figure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from confluent_kafka import Producer

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window, throughput


@dataclass(frozen=True)
class ProduceSpec:
    record_size: int
    acks: str  # "1" | "all"
    partitions: int
    records: int

    @property
    def key(self) -> str:
        return f"produce/{self.record_size}B/acks={self.acks}/p={self.partitions}"

    @property
    def topic(self) -> str:
        return f"bench-{self.record_size}b-acks{self.acks}-p{self.partitions}"


def producer_config(bootstrap: str, acks: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "delivery.report.only.error": True,
    }


def produce(bootstrap: str, topic: str, record_size: int, records: int, acks: str, window: Window) -> int:
    """Send `records` values of `record_size` bytes; returns how many failed. `window` times it."""
    failed = 0

    def on_failure(err: object, _msg: object) -> None:
        nonlocal failed
        failed += 1

    producer = Producer({**producer_config(bootstrap, acks), "on_delivery": on_failure})
    producer.list_topics(topic, timeout=30)  # metadata and connections before the clock starts
    value = os.urandom(record_size)
    send, poll = producer.produce, producer.poll
    window.start()
    for _ in range(records):
        try:
            send(topic, value)
        except BufferError:
            poll(0.005)
            send(topic, value)
    remaining = producer.flush(120)
    window.stop()
    return failed + remaining


def run(broker: RunningBroker, spec: ProduceSpec) -> dict[str, object]:
    window = Window(broker)
    failed = produce(broker.bootstrap, spec.topic, spec.record_size, spec.records, spec.acks, window)
    if failed:
        raise RuntimeError(f"{spec.key} on {broker.name}: {failed} of {spec.records} records failed")
    return throughput(spec.records, spec.record_size, window)
