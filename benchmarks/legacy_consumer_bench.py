"""Records/s of kafkapy's legacy ZooKeeper consumer next to kafka-python's KafkaConsumer.

    python benchmarks/legacy_consumer_bench.py [--records N] [--size B] [--partitions P] [--runs R]
                                               [--compression none|gzip|snappy|lz4|zstd]

Starts its own ZooKeeper + one kafkapy broker (kafkapy.testing.kafkapy_cluster_context),
produces N records of B bytes with confluent-kafka, then times, R times each, a fresh consumer
group reading all N records from the beginning: the legacy consumer (one stream, ZooKeeper
group, auto-commit off) and kafka-python (group coordinator, enable_auto_commit off). The time
runs from creating the consumer to the last record, so it includes joining the group; the best
of R runs is reported. Both are pure-Python record decoders talking to the same broker.

Measured on the shared 2-core dev machine (Python 3.11, kafka-python 3.0.12; other engineers'
test runs kept the load average near 2.5, so expect +-30%), 200,000 records of 100 B over
4 partitions, best of 3:

    compression   kafkapy legacy consumer   kafka-python KafkaConsumer
    none             170,588 records/s          72,272 records/s
    lz4              141,240 records/s          91,534 records/s

The legacy consumer's fetcher decodes on its own thread while the caller iterates, and asks
for fetch.message.max.bytes (1 MiB) per partition in one Fetch for all partitions of a broker.
"""

from __future__ import annotations

import argparse
import logging
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.consumer_legacy import ConsumerConfig, ZookeeperConsumerConnector
from kafkapy.testing import kafkapy_cluster_context

TOPIC = "bench"


def produce(bootstrap: str, n: int, size: int, partitions: int, compression: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        f.result(30)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 256 * 1024,
            "compression.type": compression,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    value = b"x" * size
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%d" % i)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def legacy(zk_connect: str, n: int, run: int) -> float:
    config = ConsumerConfig.from_props(
        {
            "group.id": f"legacy-{run}",
            "zookeeper.connect": zk_connect,
            "auto.offset.reset": "smallest",
            "auto.commit.enable": "false",
            "queued.max.message.chunks": "10",
            "consumer.timeout.ms": "30000",
        }
    )
    start = time.perf_counter()
    connector = ZookeeperConsumerConnector(config)
    try:
        [stream] = connector.create_message_streams({TOPIC: 1})[TOPIC]
        for _ in range(n):
            next(stream)
        return time.perf_counter() - start
    finally:
        connector.shutdown()


def kafka_python(bootstrap: str, n: int, run: int) -> float:
    from kafka import KafkaConsumer

    start = time.perf_counter()
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=f"kp-{run}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=30000,
    )
    try:
        got = 0
        for _ in consumer:
            got += 1
            if got == n:
                break
        assert got == n, f"kafka-python read {got} of {n}"
        return time.perf_counter() - start
    finally:
        consumer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compression", default="none")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with kafkapy_cluster_context(1) as cluster:
        produce(cluster.bootstrap_servers, args.records, args.size, args.partitions, args.compression)
        results = {}
        for name, fn in (
            ("kafkapy legacy consumer", lambda r: legacy(cluster.zookeeper_connect, args.records, r)),
            (
                "kafka-python KafkaConsumer",
                lambda r: kafka_python(cluster.bootstrap_servers, args.records, r),
            ),
        ):
            best = min(fn(run) for run in range(args.runs))
            results[name] = best
        print(
            f"{args.records} records of {args.size} B, {args.partitions} partitions, "
            f"compression {args.compression}, best of {args.runs}:"
        )
        for name, secs in results.items():
            print(f"  {name:28s} {args.records / secs:10,.0f} records/s  ({secs:.2f} s)")


if __name__ == "__main__":
    main()
