"""Exactly-once writes of the kafkapy sink (`exactlyOnce=true`): Kafka transactions committed by
the driver, a replayed micro-batch skipped task by task.

The streaming test runs the query in its own driver process (eos_spark_driver.py: 300
records, 60 a micro-batch, Trigger.AvailableNow) and kills that whole driver (SIGKILL of its
process group: Python driver, JVM, Python workers) twice in phase two of the two-phase commit:
in micro-batch 1 before any task's transaction is committed, and in micro-batch 3 after one
of three is. Each time it is started again from its checkpoint. Invariant: a read_committed
consumer of the output topic sees every input record's output exactly once, while
read_uncommitted also sees the aborted attempts. The batch test writes a DataFrame with
`exactlyOnce=true` and checks the same for read_committed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from spark_helpers import create_topic, numbered, produce

from kafkapy.spark.exactly_once import CRASH_ENV
from kafkapy.testing import KafkapyCluster

OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}
RECORDS, PARTITIONS, PER_TRIGGER = 300, 3, 60
DRIVER = Path(__file__).with_name("eos_spark_driver.py")

pytestmark = [pytest.mark.spark, pytest.mark.kafkapy_cluster(brokers=1, overrides=OVERRIDES)]


def read_values(bootstrap: str, topic: str, isolation: str) -> Counter[bytes]:
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}", "isolation.level": isolation,
        "enable.auto.commit": False, "enable.partition.eof": True,
    })  # fmt: skip
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen: Counter[bytes] = Counter()
    done: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(done) < PARTITIONS:
            assert time.monotonic() < deadline, f"only partitions {done} read to the end"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    done.add(m.partition())
                    continue
                raise AssertionError(m.error())
            seen[m.value()] += 1
    finally:
        c.close()
    return seen


def run_driver(bootstrap: str, source: str, sink: str, checkpoint: Path, crash: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash is not None:
        env[CRASH_ENV] = crash
    proc = subprocess.run(
        [sys.executable, str(DRIVER), bootstrap, source, sink, str(checkpoint), str(PER_TRIGGER)],
        env=env, start_new_session=True, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    expected = 0 if crash is None else -signal.SIGKILL
    assert proc.returncode == expected, proc.stderr[-4000:]
    return proc.returncode


@pytest.mark.timeout(1200)
def test_streaming_query_killed_in_phase_two_and_restarted_writes_each_record_once(
    kafkapy_cluster: KafkapyCluster, topic: str, tmp_path: Path
) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    source, sink = topic + "-in", topic + "-out"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    produce(bootstrap, source, numbered(RECORDS, PARTITIONS))
    checkpoint = tmp_path / "checkpoint"
    started = time.monotonic()
    assert run_driver(bootstrap, source, sink, checkpoint, crash="1:0") == -9  # batch 1, nothing committed
    assert (
        run_driver(bootstrap, source, sink, checkpoint, crash="3:1") == -9
    )  # batch 3, one of three committed
    run_driver(bootstrap, source, sink, checkpoint, crash=None)
    elapsed = time.monotonic() - started

    committed = read_values(bootstrap, sink, "read_committed")
    everything = read_values(bootstrap, sink, "read_uncommitted")
    expected = {f"V{i}".encode() for i in range(RECORDS)}
    duplicates = sum(n - 1 for n in committed.values() if n > 1)
    lost = len(expected - set(committed))
    print(
        f"\nexactly-once Spark sink: {RECORDS} records in {RECORDS // PER_TRIGGER} micro-batches, 2 driver "
        f"SIGKILLs, 3 runs in {elapsed:.0f} s; read_committed {sum(committed.values())} records, "
        f"duplicates={duplicates}, lost={lost}; read_uncommitted {sum(everything.values())} records"
    )
    assert set(committed) == expected and duplicates == 0 and lost == 0
    # The killed attempts left aborted copies: the transactions really were open at the kill.
    assert sum(everything.values()) > RECORDS


@pytest.mark.timeout(300)
def test_batch_write_in_transactions_is_committed_by_the_driver(
    spark, kafkapy_cluster: KafkapyCluster, topic
) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    create_topic(bootstrap, topic, PARTITIONS)
    rows = [(f"k{i}", f"v{i}") for i in range(100)]
    (
        spark.createDataFrame(rows, "key STRING, value STRING")
        .repartition(4)
        .write.mode("append")
        .format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .save()
    )
    committed = read_values(bootstrap, topic, "read_committed")
    assert committed == Counter(f"v{i}".encode() for i in range(100))
