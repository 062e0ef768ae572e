"""Batch read throughput of the "kafkapy" Spark data source next to kafkapy's plain consumer.

    python benchmarks/spark_read_bench.py [--records 200000] [--size 100] [--partitions 4]
                                          [--master local[*]] [--runs 2]

Starts a real ZooKeeper and kafkapy broker, produces the records once (confluent-kafka), then
in the same run reads them all back
  - with `SimpleConsumer` in this process (the plain client, one thread, all partitions), and
  - with spark.read.format("kafkapy") (one task per partition, Arrow batches), the read forced
    by Spark's "noop" sink so nothing but the read is timed.
Each is the best of --runs; the Spark figure excludes session start-up and the first query's
Python worker start (a warm-up read comes first), as a long-running job would see it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from confluent_kafka import Producer

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.client.consumer import SimpleConsumer
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.testing import kafkapy_cluster_context

TOPIC = "bench"


def produce(bootstrap: str, records: int, size: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000})  # fmt: skip
    value = os.urandom(size)
    for i in range(records):
        p.produce(TOPIC, value=value, key=str(i).encode(), partition=i % partitions)
        if i % 50_000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def plain_read(bootstrap: str, partitions: int, expected: int) -> float:
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    start = time.perf_counter()
    with SimpleConsumer(bootstrap, auto_offset_reset="earliest", max_partition_fetch_bytes=8 << 20) as c:
        c.assign(tps)
        c.seek_to_beginning()
        got = 0
        while got < expected:
            got += len(c.poll(timeout_ms=1000))
    return time.perf_counter() - start


def spark_read(spark: object, bootstrap: str) -> float:
    start = time.perf_counter()
    (
        spark.read.format("kafkapy")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with kafkapy_cluster_context(1) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient(bootstrap)
        admin.create_topic(NewTopic(TOPIC, args.partitions, 1))
        admin.close()
        time.sleep(1)
        t = time.perf_counter()
        produce(bootstrap, args.records, args.size, args.partitions)
        print(f"produced {args.records} x {args.size} B in {time.perf_counter() - t:.1f}s", flush=True)

        plain = min(plain_read(bootstrap, args.partitions, args.records) for _ in range(args.runs))

        from pyspark.sql import SparkSession

        import kafkapy.spark

        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        kafkapy.spark.register(spark)
        first = spark_read(spark, bootstrap)  # warm-up: Python workers start, modules import
        best = min(spark_read(spark, bootstrap) for _ in range(args.runs))
        spark.stop()

    n, mb = args.records, args.records * args.size / 1e6
    print(f"{'reader':<36}{'seconds':>9}{'records/s':>12}{'MB/s':>8}")
    for name, secs in (
        ("SimpleConsumer (1 thread)", plain),
        (f"format('kafkapy') {args.master}, first", first),
        (f"format('kafkapy') {args.master}, warm", best),
    ):
        print(f"{name:<36}{secs:>9.2f}{n / secs:>12,.0f}{mb / secs:>8.1f}")
    print(f"cores: {os.cpu_count()}, partitions: {args.partitions}")


if __name__ == "__main__":
    main()
