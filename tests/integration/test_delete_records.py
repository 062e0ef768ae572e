"""kafkapy-delete-records (DeleteRecords, API 21) against real ZooKeeper and three brokers.

Invariant: once the tool reports a partition's low watermark, every replica's log starts
there. After deleting the first 40 of 100 records, a consumer reading from the beginning
starts at offset 40 on the leader, and again on each follower after leadership has moved to
it (the old leader stopped). Bad files fail with Kafka's messages before any request.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster

WAIT_S = 60.0
TOPIC = "trimmed"


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.delete_records", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return result


def state(zk: KazooClient) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{TOPIC}/partitions/0/state")[0])


def first_offset_from_beginning(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                return int(msg.offset())
        raise AssertionError("no record consumed")
    finally:
        consumer.close()


@pytest.mark.timeout(400)
@pytest.mark.kafkapy_cluster(
    brokers=3, overrides={"replica.fetch.backoff.ms": "200", "controlled.shutdown.retry.backoff.ms": "200"}
)
def test_deleted_records_are_gone_from_every_replica(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3)])[TOPIC].result(WAIT_S)
    wait_until(lambda: len(state(zk)["isr"]) == 3, "the full ISR")
    producer = Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "acks": "all"})
    for i in range(100):
        producer.produce(TOPIC, value=f"record-{i}".encode(), partition=0)
    assert producer.flush(WAIT_S) == 0
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps({"partitions": [{"topic": TOPIC, "partition": 0, "offset": 40}], "version": 1})
    )

    done = run_tool(
        "--bootstrap-server", kafkapy_cluster.bootstrap_servers, "--offset-json-file", str(offsets)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {TOPIC}-0\tlow_watermark: 40",
    ]

    # Each replica in turn leads and serves a consumer reading from the beginning.
    stopped: list[int] = []
    while True:
        # A list, so that broker 0 counts as found.
        [leader] = wait_until(
            lambda: [state(zk)["leader"]] if state(zk)["leader"] not in (-1, *stopped) else None,
            "a live leader",
        )
        bootstrap = kafkapy_cluster.broker(leader).bootstrap
        assert first_offset_from_beginning(bootstrap) == 40, f"replica on broker {leader}"
        if len(stopped) == 2:
            break
        kafkapy_cluster.broker(leader).stop()
        stopped.append(leader)


@pytest.mark.timeout(200)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_partition_errors_are_printed_as_kafka_prints_them(
    kafkapy_cluster: KafkapyCluster, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    admin.create_topics([NewTopic("small", num_partitions=1, replication_factor=1)])["small"].result(WAIT_S)
    producer = Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    for _ in range(5):
        producer.produce("small", value=b"x", partition=0)
    assert producer.flush(WAIT_S) == 0
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "small", "partition": 0, "offset": 1000},
                    {"topic": "absent", "partition": 0, "offset": 1},
                ]
            }
        )
    )

    done = run_tool(
        "--bootstrap-server", kafkapy_cluster.bootstrap_servers, "--offset-json-file", str(offsets)
    )
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: absent-0\terror: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "This server does not host this topic-partition.",
        "partition: small-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "The requested offset is not within the range of offsets maintained by the server.",
    ]
    # -1 deletes up to the high watermark.
    offsets.write_text('{"partitions": [{"topic": "small", "partition": 0, "offset": -1}], "version": 1}')
    done = run_tool(
        "--bootstrap-server", kafkapy_cluster.bootstrap_servers, "--offset-json-file", str(offsets)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "partition: small-0\tlow_watermark: 5"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "The input string is not a valid JSON"),
        ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
        ('{"version": 1}', "Missing partitions field"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]}',
            "Offset json file contains duplicate topic partitions: t-0",
        ),
        ('{"partitions": [{"topic": "t", "partition": 0}]}', "No such field exists: `offset`"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "offset": "1"}]}',
            'Expected `Long` value, received "1"',
        ),
    ],
)
def test_bad_files_fail_before_any_request(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "offsets.json"
    path.write_text(text)
    done = run_tool("--bootstrap-server", "127.0.0.1:1", "--offset-json-file", str(path))
    assert (done.returncode, done.stderr.strip(), done.stdout) == (1, f"Error: {message}", "")


@pytest.mark.timeout(60)
def test_missing_arguments() -> None:
    done = run_tool("--bootstrap-server", "127.0.0.1:1")
    assert (done.returncode, done.stderr.strip()) == (1, 'Missing required argument "[offset-json-file]"')
