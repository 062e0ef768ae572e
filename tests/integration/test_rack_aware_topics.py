"""Rack-aware placement on a real cluster: three brokers registering broker.rack a, b and c.

Invariants checked: each broker's /brokers/ids/<id> carries Kafka's "rack"; a replication
factor 3 topic made through CreateTopics has every partition on the three racks, and so do the
partitions CreatePartitions adds; `kafkapy-topics --zookeeper --create` places RF 2 partitions
on two racks each and leaders rotate over every broker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster
from kafkapy.tools.topics import kafka_topics

RACKS = {0: "a", 1: "b", 2: "c"}
WAIT_S = 20.0


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def racked(tmp_path: Path) -> Iterator[tuple[KafkapyCluster, KazooClient]]:
    cluster = KafkapyCluster(
        tmp_path,
        3,
        {"auto.leader.rebalance.enable": "false"},
        broker_overrides={b: {"broker.rack": r} for b, r in RACKS.items()},
    )
    try:
        cluster.start()
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        zk.start(timeout=15)
        try:
            yield cluster, zk
        finally:
            zk.stop()
            zk.close()
    finally:
        cluster.stop()


def assignment(zk: KazooClient, topic: str) -> dict[int, list[int]]:
    data = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
    return {int(p): r for p, r in data["partitions"].items()}


@pytest.mark.timeout(90)
def test_replicas_are_spread_over_racks(racked: tuple[KafkapyCluster, KazooClient]) -> None:
    cluster, zk = racked
    for broker, rack in RACKS.items():
        assert json.loads(zk.get(f"/brokers/ids/{broker}")[0])["rack"] == rack

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("spread", num_partitions=6, replication_factor=3)])["spread"].result(WAIT_S)
    placed = assignment(zk, "spread")
    assert len(placed) == 6
    assert all({RACKS[b] for b in r} == {"a", "b", "c"} for r in placed.values()), placed

    admin.create_partitions([NewPartitions("spread", 9)])["spread"].result(WAIT_S)
    wait_until(lambda: len(assignment(zk, "spread")) == 9, "9 partitions")
    grown = assignment(zk, "spread")
    assert all({RACKS[b] for b in r} == {"a", "b", "c"} for r in grown.values()), grown

    result = CliRunner().invoke(
        kafka_topics,
        [
            "--zookeeper",
            cluster.zookeeper_connect,
            "--create",
            "--topic",
            "pairs",
            "--partitions",
            "6",
            "--replication-factor",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Created topic pairs." in result.stdout
    pairs = assignment(zk, "pairs")
    assert all(len({RACKS[b] for b in r}) == 2 for r in pairs.values()), pairs
    assert {r[0] for r in pairs.values()} == {0, 1, 2}
