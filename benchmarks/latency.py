"""End-to-end latency at a fixed rate: producer process -> broker -> consumer, one clock.

A separate process produces `rate` records/s of `record_size` bytes (acks=1, linger.ms=0, so
each record leaves at once), each carrying `time.monotonic_ns()` (CLOCK_MONOTONIC: one clock
for every process on the machine). The consumer, assigned the partition from the start,
subtracts it on arrival. Consumer fetch settings stay librdkafka's (fetch.min.bytes=1, so a
broker that answers a waiting fetch as soon as data arrives is rewarded, one that sits out
fetch.wait.max.ms is not). The first second is warm-up and is not counted.
"""

from __future__ import annotations

import multiprocessing
import struct
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window
from benchmarks.consume import consumer_config

_STAMP = struct.Struct(">q")
WARMUP_S = 1.0


def _paced_producer(
    bootstrap: str, topic: str, rate: int, seconds: float, record_size: int, go: object
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    producer.list_topics(topic, timeout=30)
    pad = bytes(record_size - _STAMP.size)
    total = int(rate * seconds)
    go.wait()  # type: ignore[attr-defined]
    t0 = time.monotonic()
    for i in range(total):
        due = t0 + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        producer.produce(topic, _STAMP.pack(time.monotonic_ns()) + pad)
        producer.poll(0)
    producer.flush(30)


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def run(
    broker: RunningBroker, topic: str, rate: int, seconds: float, record_size: int = 1024
) -> dict[str, object]:
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    child = ctx.Process(
        target=_paced_producer, args=(broker.bootstrap, topic, rate, seconds, record_size, go), daemon=True
    )
    child.start()
    consumer = Consumer({**consumer_config(broker.bootstrap), "fetch.error.backoff.ms": 10})
    latencies: list[float] = []
    expected = int(rate * seconds)
    received = 0
    try:
        consumer.list_topics(topic, timeout=30)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        consumer.poll(0.5)  # the assignment is live before the first record is sent
        window = Window(broker).start()
        go.set()
        start = time.monotonic_ns()
        warmup_end = start + int(WARMUP_S * 1e9)
        deadline = time.monotonic() + seconds + 30
        unpack, poll = _STAMP.unpack_from, consumer.poll
        while received < expected and time.monotonic() < deadline:
            msg = poll(0.5)  # one record per call: a batch call may wait to fill the batch
            now = time.monotonic_ns()
            if msg is None or msg.error() is not None:
                continue
            received += 1
            (sent,) = unpack(msg.value())
            if sent >= warmup_end:
                latencies.append((now - sent) / 1e6)
        window.stop()
    finally:
        consumer.close()
        child.join(30)
        if child.is_alive():
            child.kill()
    if received < expected:
        raise RuntimeError(f"latency run on {broker.name}: {received} of {expected} records arrived")
    latencies.sort()
    return {
        "rate": rate,
        "record_size": record_size,
        "records": received,
        "samples": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "p999_ms": percentile(latencies, 99.9),
        "max_ms": latencies[-1] if latencies else float("nan"),
        "broker_cpu_util": window.cpu_s / window.wall_s,
    }
