"""Consume throughput with confluent-kafka: read a produce run's topic from the beginning.

The consumer is assigned the partitions directly (no group membership, no commits) with
librdkafka's fetch defaults (fetch.wait.max.ms=500, fetch.max.bytes=50 MB, 1 MB per
partition). With those defaults the rate flips between two modes on any broker: once
librdkafka's local queue holds more than queued.min.messages (100,000 per partition) or
queued.max.messages.kbytes (64 MB), its fetcher backs off for fetch.queue.backoff.ms
(1,000 ms). A broker that delivers faster than the Python loop drains trips that back-off
and then sits idle for most of a second, so the defaults reward the slower broker. Every
topic is therefore read both ways: with the defaults (repeated, spread reported) and with
`NO_BACKOFF`, which is the broker-bound figure.

`NO_BACKOFF` raises both queue thresholds above any data set here, so the fetcher never backs
off. It used to be `fetch.queue.backoff.ms=0`, which librdkafka serves by re-deciding in a
busy loop (its fetch debug log showed ~200,000 "Fetch backoff for 0ms" lines in a one-second
100 B run), and on 2 cores that loop took CPU from the consuming thread it was waiting for.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window, throughput

# the largest values librdkafka accepts: 10M messages and 2 GB per partition queue
NO_BACKOFF: dict[str, object] = {"queued.min.messages": 10_000_000, "queued.max.messages.kbytes": 2_097_151}


def consumer_config(bootstrap: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "earliest",
    }


def consume(
    bootstrap: str,
    topic: str,
    partitions: int,
    records: int,
    window: Window,
    timeout: float = 120,
    extra: dict[str, object] | None = None,
) -> int:
    """Read `records` records from the start of `topic`; returns how many arrived. `window` times it."""
    consumer = Consumer({**consumer_config(bootstrap), **(extra or {})})
    try:
        consumer.list_topics(topic, timeout=30)
        assignment = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        got = 0
        window.start()
        deadline = time.monotonic() + timeout
        consumer.assign(assignment)
        batch = consumer.consume
        while got < records and time.monotonic() < deadline:
            for msg in batch(10_000, 1.0):
                if msg.error() is None:
                    got += 1
        window.stop()
        return got
    finally:
        consumer.close()


def run(
    broker: RunningBroker,
    topic: str,
    partitions: int,
    record_size: int,
    records: int,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    window = Window(broker)
    got = consume(broker.bootstrap, topic, partitions, records, window, extra=extra)
    if got < records:
        raise RuntimeError(f"consume {topic} on {broker.name}: {got} of {records} records in time")
    return throughput(records, record_size, window)
