"""kafkapy-configs end to end against a real ZooKeeper and a real broker: --alter then --describe
for a topic and a broker through both --bootstrap-server and --zookeeper, Kafka's output lines,
bad input refused with nothing changed, and a dynamic cluster-wide log.retention.ms applied by
the running broker to a topic without its own retention (old segments deleted).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster

WAIT_S = 60.0


def configs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.configs", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def ok(*args: str) -> list[str]:
    result = configs(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)
    return result


def znode(zk: KazooClient, path: str) -> Any:
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def create_topic(bootstrap: str, topic: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config or {})])[topic].result(WAIT_S)


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_topic_configs_through_both_paths(kafkapy_cluster: KafkapyCluster, zk: KazooClient) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    create_topic(boot, "t")
    assert ok(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "t",
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
    ) == ["Completed updating config for topic t."]
    assert znode(zk, "/config/topics/t") == {
        "version": 1,
        "config": {"retention.ms": "1000", "cleanup.policy": "compact,delete"},
    }
    assert ok("--bootstrap-server", boot, "--describe", "--topic", "t") == [
        "Dynamic configs for topic t are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
        "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}",
    ]
    # --zookeeper: the znode and a change notification, Kafka's line.
    assert ok(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "t",
        "--add-config",
        "segment.ms=60000",
        "--delete-config",
        "cleanup.policy",
    ) == ["Completed updating config for entity: topic 't'."]
    assert ok("--zookeeper", zkc, "--describe", "--entity-type", "topics", "--entity-name", "t") == [
        "Configs for topic 't' are retention.ms=1000,segment.ms=60000"
    ]
    wait_until(
        lambda: "segment.ms=60000" in "\n".join(ok("--bootstrap-server", boot, "--describe", "--topic", "t")),
        "the broker to see the --zookeeper change",
    )

    before = znode(zk, "/config/topics/t")
    for args, message in [
        (
            ("--bootstrap-server", boot, "--alter", "--topic", "t", "--delete-config", "flush.ms"),
            "Invalid config(s): flush.ms",
        ),
        (
            ("--bootstrap-server", boot, "--describe", "--entity-type", "tables", "--entity-name", "t"),
            "Invalid entity type tables, the entity type must be one of topics,clients,users,brokers,"
            "broker-loggers with the --bootstrap-server argument",
        ),
        (
            ("--zookeeper", zkc, "--alter", "--topic", "t", "--add-config", "retention.mss=1"),
            "Unknown topic config name: retention.mss",
        ),
        (
            ("--bootstrap-server", boot, "--alter", "--topic", "t", "--add-config", "retention.ms"),
            'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".',
        ),
    ]:
        result = configs(*args)
        assert (result.returncode, result.stdout, result.stderr.strip()) == (1, "", message)
    result = configs(
        "--bootstrap-server", boot, "--alter", "--topic", "t", "--add-config", "retention.ms=soon"
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[0].startswith("Error while executing config command with args")
    assert "Invalid value soon for configuration retention.ms" in result.stderr
    assert znode(zk, "/config/topics/t") == before


def log_start_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[0])
    finally:
        consumer.close()


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=1, overrides={"log.retention.check.interval.ms": "1000"})
def test_broker_configs_through_both_paths_and_a_live_retention_default(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    assert ok(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--add-config",
        "num.io.threads=4,leader.replication.throttled.rate=1000000",
    ) == ["Completed updating config for broker 0."]
    assert znode(zk, "/config/brokers/0") == {
        "version": 1,
        "config": {"num.io.threads": "4", "leader.replication.throttled.rate": "1000000"},
    }
    assert ok("--bootstrap-server", boot, "--describe", "--broker", "0") == [
        "Dynamic configs for broker 0 are:",
        "  leader.replication.throttled.rate=1000000 sensitive=false "
        "synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000000}",
        "  num.io.threads=4 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:num.io.threads=4, "
        "DEFAULT_CONFIG:num.io.threads=8}",
    ]
    everything = ok("--bootstrap-server", boot, "--describe", "--broker", "0", "--all")
    assert everything[0] == "All configs for broker 0 are:"
    assert any(
        line.startswith("  broker.id=0 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=0")
        for line in everything
    )

    # A config that cannot change at run time: Kafka's INVALID_REQUEST message, nothing written.
    result = configs(
        "--bootstrap-server", boot, "--alter", "--broker", "0", "--add-config", "log.dirs=/tmp/x"
    )
    assert result.returncode == 1
    assert (
        "Invalid config value for resource ConfigResource(type=BROKER, name='0'): "
        "Cannot update these configs dynamically: Set(log.dirs)"
    ) in result.stderr
    assert znode(zk, "/config/brokers/0")["config"] == {
        "num.io.threads": "4",
        "leader.replication.throttled.rate": "1000000",
    }

    # --zookeeper: throttle rates may change while the broker runs, other configs may not.
    assert ok(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--add-config",
        "follower.replication.throttled.rate=2000000",
        "--delete-config",
        "num.io.threads",
    ) == ["Completed updating config for entity: brokers '0'."]
    assert ok("--zookeeper", zkc, "--describe", "--entity-type", "brokers", "--entity-name", "0") == [
        "Configs for brokers '0' are leader.replication.throttled.rate=1000000,"
        "follower.replication.throttled.rate=2000000"
    ]
    wait_until(
        lambda: (
            "  follower.replication.throttled.rate=2000000 sensitive=false synonyms="
            "{DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=2000000}"
            in ok("--bootstrap-server", boot, "--describe", "--broker", "0")
        ),
        "the broker to apply the znode",
    )
    result = configs(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--add-config",
        "log.retention.ms=1000",
    )
    assert result.returncode == 1 and result.stderr.startswith(
        "requirement failed: --bootstrap-server option must be specified to update broker configs "
        "Set(log.retention.ms). when broker 0 is running."
    )

    # A cluster-wide default log.retention.ms reaches a running broker's existing log.
    create_topic(boot, "r", {"segment.bytes": "1024"})
    producer = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for i in range(60):
        producer.produce("r", value=b"x" * 100 + str(i).encode())
        producer.flush(30)
    assert log_start_offset(boot, "r") == 0
    assert ok(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "log.retention.ms=2000",
    ) == ["Completed updating default config for brokers in the cluster."]
    assert znode(zk, "/config/brokers/<default>") == {"version": 1, "config": {"log.retention.ms": "2000"}}
    assert ok("--bootstrap-server", boot, "--describe", "--entity-type", "brokers", "--entity-default") == [
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=2000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000}",
    ]
    start = wait_until(lambda: log_start_offset(boot, "r"), "retention to delete old segments")
    assert start > 0
    described = ok("--bootstrap-server", boot, "--describe", "--topic", "r", "--all")
    assert (
        "  retention.ms=2000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000, "
        "DEFAULT_CONFIG:log.retention.hours=168}"
    ) in described
