"""kafkapy-consumer-groups --zookeeper against groups of the legacy ZooKeeper consumer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.consumer_legacy import ConsumerConfig, ConsumerTimeoutException, ZookeeperConsumerConnector

TOOL = str(Path(sys.executable).parent / "kafkapy-consumer-groups")


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


def test_list_describe_and_delete_a_legacy_group(kafkapy_cluster) -> None:
    bootstrap, zk = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("legacy-tool", 2, 1)])["legacy-tool"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce("legacy-tool", value=b"m%d" % i, partition=i % 2)
    assert producer.flush(30) == 0

    config = ConsumerConfig.from_props(
        {
            "group.id": "old-group",
            "zookeeper.connect": zk,
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": "3000",
            "auto.commit.enable": "false",
        }
    )
    connector = ZookeeperConsumerConnector(config)
    try:
        stream = connector.create_message_streams({"legacy-tool": 1})["legacy-tool"][0]
        seen = 0
        try:
            for _ in stream:
                seen += 1
                if seen == 20:
                    break
        except ConsumerTimeoutException:
            pass
        assert seen == 20
        connector.commit_offsets()

        listed = _tool("--zookeeper", zk, "--list")
        assert listed.returncode == 0 and "old-group" in listed.stdout.split()
        described = _tool("--zookeeper", zk, "--describe", "--group", "old-group")
        assert described.returncode == 0, described.stderr
        lines = described.stdout.strip().splitlines()
        assert lines[0].split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "OWNER",
        ]
        rows = sorted(line.split() for line in lines[1:])
        assert [r[:6] for r in rows] == [
            ["old-group", "legacy-tool", str(p), "10", "10", "0"] for p in (0, 1)
        ]
        assert all(r[6].startswith("old-group_") for r in rows)  # the live owner's thread id
        refused = _tool("--zookeeper", zk, "--delete", "--group", "old-group")
        assert "still active" in refused.stdout and refused.returncode == 1
    finally:
        connector.shutdown()

    deleted = _tool("--zookeeper", zk, "--delete", "--group", "old-group")
    assert deleted.returncode == 0
    assert "Deleted all consumer group information for group old-group in zookeeper." in deleted.stdout
    assert "old-group" not in _tool("--zookeeper", zk, "--list").stdout.split()
    wrong = _tool(
        "--zookeeper", zk, "--reset-offsets", "--group", "old-group", "--all-topics", "--to-earliest"
    )
    assert wrong.returncode == 1 and "only supported with --bootstrap-server" in wrong.stderr
