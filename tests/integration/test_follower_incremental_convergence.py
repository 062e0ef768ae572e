"""Followers that fetch incrementally (KIP-227 sessions holding many partitions, each request
naming only what changed) still converge on their leaders through everything that changes a
fetcher's partitions: appends, leader changes, a follower restart, DeleteRecords moving the log
start offset (the leader's low watermark waits for every follower to send its new one), and a
reassignment adding a partition to a fetcher and removing another.

Convergence is read from the brokers themselves: DescribeLogDirs gives each replica's size,
and a follower appends the leader's batches as they are, so equal sizes mean equal logs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.testing import KafkapyCluster, kafkapy_cluster_context

WAIT_S = 60.0
TOPIC = "conv"
PARTITIONS = 45  # 30 followed per broker: each fetcher's session holds 15
OVERRIDES = {
    "auto.leader.rebalance.enable": "false",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "replica.lag.time.max.ms": "5000",
    "controlled.shutdown.retry.backoff.ms": "200",
}
T = TypeVar("T")


def wait_until(probe: Callable[[], T], what: str, timeout: float = WAIT_S) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def sizes(cluster: KafkapyCluster, broker_id: int) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the size of broker_id's replica."""
    conn = BrokerConnection("127.0.0.1", cluster.broker(broker_id).port, client_id="convergence", timeout=20)
    try:
        conn.api_versions()
        resp = conn.send(ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None})
    finally:
        conn.close()
    return {
        (t.name, p.partition_index): p.partition_size
        for r in resp.results
        for t in r.topics
        for p in t.partitions
    }


def assignment(zk: KazooClient, topic: str) -> dict[int, list[int]]:
    raw = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"]
    return {int(p): r for p, r in raw.items()}


def converged(cluster: KafkapyCluster, zk: KazooClient, brokers: list[int]) -> bool:
    """Every replica on `brokers` of every partition of TOPIC and 'moving' as big as the others."""
    seen = {b: sizes(cluster, b) for b in brokers}
    for topic in (TOPIC, "moving"):
        for p, replicas in assignment(zk, topic).items():
            got = {seen[b].get((topic, p)) for b in replicas if b in brokers}
            if len(got) != 1 or None in got:
                return False
    return True


def produce(cluster: KafkapyCluster, topic: str, partitions: range | list[int], n: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for p in partitions:
        for i in range(n):
            producer.produce(topic, b"value-%d" % i, partition=p)
    assert producer.flush(WAIT_S) == 0


def state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


def tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"kafkapy.tools.{module}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_incremental_followers_converge_through_every_change(tmp_path: Path) -> None:
    with kafkapy_cluster_context(3, OVERRIDES, tmp_path / "cluster") as cluster:
        zk = KazooClient(hosts=cluster.zookeeper_connect)
        zk.start()
        try:
            _run(cluster, zk, tmp_path)
        finally:
            zk.stop()
            zk.close()


def _run(cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    layout = [[i % 3, (i + 1) % 3, (i + 2) % 3] for i in range(PARTITIONS)]
    futures = admin.create_topics([
        NewTopic(TOPIC, PARTITIONS, replica_assignment=layout),
        NewTopic("moving", 2, replica_assignment=[[0, 1], [2, 0]]),
    ])  # fmt: skip
    for f in futures.values():
        f.result(WAIT_S)
    wait_until(lambda: all(len(state(zk, TOPIC, p)["isr"]) == 3 for p in range(PARTITIONS)), "full ISRs")
    everyone = [0, 1, 2]

    # Appends to a few partitions of many: the sessions carry only those.
    produce(cluster, TOPIC, range(0, PARTITIONS, 7), 20)
    produce(cluster, "moving", [0, 1], 10)
    wait_until(lambda: converged(cluster, zk, everyone), "replicas to converge after appends")

    # Leader changes: broker 0 shuts down (its leaders move), the others keep taking records.
    cluster.broker(0).stop()
    led_by_0 = [p for p in range(PARTITIONS) if layout[p][0] == 0]
    wait_until(lambda: all(state(zk, TOPIC, p)["leader"] != 0 for p in led_by_0), "leaders to move off 0")
    produce(cluster, TOPIC, led_by_0[:5] + [1, 2], 15)
    wait_until(lambda: converged(cluster, zk, [1, 2]), "the two live brokers to converge")

    # A follower restart: broker 0 comes back, truncates, opens new sessions, catches up.
    cluster.broker(0).start()
    cluster.wait_until_ready()
    wait_until(lambda: all(len(state(zk, TOPIC, p)["isr"]) == 3 for p in range(PARTITIONS)), "0 back in sync")
    wait_until(lambda: converged(cluster, zk, everyone), "the restarted follower to converge")

    # DeleteRecords: completes only once every follower's next (incremental) fetch reports the
    # new log start offset.
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 7, "offset": 12}]})
    )
    done = tool("delete_records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file",
                str(offsets))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"partition: {TOPIC}-7\tlow_watermark: 12"
    produce(cluster, TOPIC, [7], 3)  # and fetching goes on from there
    wait_until(lambda: converged(cluster, zk, everyone), "replicas to converge after DeleteRecords")

    # A reassignment adds moving-0 to broker 2's fetcher and moves moving-1 from broker 0's
    # fetcher to broker 1's.
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moving", "partition": 0, "replicas": [0, 1, 2]},
        {"topic": "moving", "partition": 1, "replicas": [2, 1]},
    ]}))  # fmt: skip
    done = tool("reassign_partitions", "--bootstrap-server", cluster.bootstrap_servers, "--execute",
                "--reassignment-json-file", str(plan))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    wait_until(lambda: assignment(zk, "moving") == {0: [0, 1, 2], 1: [2, 1]}, "the reassignment to finish")
    wait_until(lambda: ("moving", 1) not in sizes(cluster, 0), "broker 0's moving-1 to be deleted")
    produce(cluster, "moving", [0, 1], 10)
    produce(cluster, TOPIC, [3], 5)
    wait_until(lambda: converged(cluster, zk, everyone), "replicas to converge after the reassignment")
    assert len(state(zk, "moving", 0)["isr"]) == 3
