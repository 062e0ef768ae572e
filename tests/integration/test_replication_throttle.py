"""Replication throttles end to end: kafkapy-reassign-partitions --execute --throttle 1000000
adds a replica to a topic holding ~40 MB, and the new replica's catch-up is held to the limit.

Invariant: after the initial burst Kafka's rate window allows ((11 - 1) one-second windows of
the limit), the bytes the new replica appends grow at 1 MB/s within 25%; the throttle configs
land in ZooKeeper in Kafka's format, and --verify removes them all once the move is complete.
The figures are printed (pytest -s) so a reader can see what was measured.
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
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster

WAIT_S = 90.0
RATE = 1_000_000
RECORD = 10_000
RECORDS = 4_000  # 40 MB
OVERRIDES = {"auto.leader.rebalance.enable": "false", "replica.fetch.backoff.ms": "200"}


def reassign(*args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.reassign_partitions", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)
    return result


def log_bytes(cluster: KafkapyCluster, broker_id: int, topic: str) -> int:
    directory = Path(cluster.broker(broker_id).log_dir) / f"{topic}-0"
    return sum(f.stat().st_size for f in directory.glob("*.log")) if directory.exists() else 0


def znode(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0])["config"] if zk.exists(path) else None


@pytest.mark.timeout(420)
@pytest.mark.kafkapy_cluster(brokers=2, overrides=OVERRIDES)
def test_a_throttled_catch_up_holds_the_limit_and_verify_clears_it(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    boot = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("big", num_partitions=1, replica_assignment=[[0]])])["big"].result(WAIT_S)
    producer = Producer({"bootstrap.servers": boot, "linger.ms": 20, "acks": "1"})
    payload = b"x" * RECORD
    for _ in range(RECORDS):
        while True:
            try:
                producer.produce("big", value=payload)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(120) == 0
    total = log_bytes(kafkapy_cluster, 0, "big")
    assert total >= RECORDS * RECORD

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "big", "partition": 0, "replicas": [0, 1]}]})
    )
    out = reassign(
        "--bootstrap-server",
        boot,
        "--execute",
        "--reassignment-json-file",
        str(plan),
        "--throttle",
        str(RATE),
    )
    started = time.monotonic()
    assert out[-3:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle "
        "is removed.",
        f"The inter-broker throttle limit was set to {RATE} B/s",
        "Successfully started partition reassignment for big-0",
    ]
    assert znode(zk, "/config/topics/big") == {
        "leader.replication.throttled.replicas": "0:0",
        "follower.replication.throttled.replicas": "0:1",
    }
    for broker in (0, 1):
        assert znode(zk, f"/config/brokers/{broker}") == {
            "leader.replication.throttled.rate": str(RATE),
            "follower.replication.throttled.rate": str(RATE),
        }

    samples: list[tuple[float, int]] = []
    deadline = started + 300
    while (size := log_bytes(kafkapy_cluster, 1, "big")) < total and time.monotonic() < deadline:
        samples.append((time.monotonic() - started, size))
        time.sleep(0.25)
    samples.append((time.monotonic() - started, size))
    assert size >= total, f"catch-up incomplete: {size} of {total} bytes after {samples[-1][0]:.0f}s"

    # Kafka's rate window lets the first ~10 x limit through at once; measure from the first
    # stall after that burst (a second with under half the limit appended) to completion.
    stall = next(
        i
        for i in range(len(samples))
        if samples[i][1] > 5 * RATE
        and any(t - samples[i][0] >= 1.0 and s - samples[i][1] < RATE / 2 for t, s in samples[i + 1 : i + 8])
    )
    t0, b0 = samples[stall]
    t1, b1 = samples[-1]
    steady = (b1 - b0) / (t1 - t0)
    overall = total / t1
    print(
        f"\nthrottle {RATE} B/s: {total} bytes caught up in {t1:.1f}s (overall {overall:.0f} B/s); "
        f"burst {b0} bytes by {t0:.1f}s; steady rate {steady:.0f} B/s over {t1 - t0:.1f}s"
    )
    assert 0.75 * RATE <= steady <= 1.25 * RATE

    lines = wait_until(
        lambda: (
            (o := reassign("--bootstrap-server", boot, "--verify", "--reassignment-json-file", str(plan)))
            and "Reassignment of partition big-0 is complete." in o
            and o
        ),
        "the reassignment",
    )
    assert lines == [
        "Status of partition reassignment:",
        "Reassignment of partition big-0 is complete.",
        "Clearing broker-level throttles on brokers 0,1",
        "Clearing topic-level throttles on topic big",
    ]
    assert znode(zk, "/config/topics/big") == {}
    assert znode(zk, "/config/brokers/0") == {} and znode(zk, "/config/brokers/1") == {}


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=2, overrides=OVERRIDES)
def test_throttles_through_zookeeper_are_set_and_cleared(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("small", num_partitions=2, replica_assignment=[[0], [1]])])["small"].result(
        WAIT_S
    )
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "small", "partition": 0, "replicas": [0, 1]},
                    {"topic": "small", "partition": 1, "replicas": [0]},
                ],
            }
        )
    )
    out = reassign(
        "--zookeeper", zkc, "--execute", "--reassignment-json-file", str(plan), "--throttle", "5000000"
    )
    assert out[-3:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle "
        "is removed.",
        "The inter-broker throttle limit was set to 5000000 B/s",
        "Successfully started partition reassignments for small-0,small-1",
    ]
    assert znode(zk, "/config/topics/small") == {
        "leader.replication.throttled.replicas": "0:0,1:1",
        "follower.replication.throttled.replicas": "0:1,1:0",
    }
    lines = wait_until(
        lambda: (
            (o := reassign("--zookeeper", zkc, "--verify", "--reassignment-json-file", str(plan)))
            and "Clearing topic-level throttles on topic small" in o
            and o
        ),
        "the reassignment",
    )
    assert lines[-4:] == [
        "Reassignment of partition small-0 is complete.",
        "Reassignment of partition small-1 is complete.",
        "Clearing broker-level throttles on brokers 0,1",
        "Clearing topic-level throttles on topic small",
    ]
    assert znode(zk, "/config/topics/small") == {}
    assert znode(zk, "/config/brokers/0") == {} and znode(zk, "/config/brokers/1") == {}
