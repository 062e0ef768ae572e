"""kafkapy-get-offsets (GetOffsetShell) against a real broker: latest, earliest and by-time
offsets match what was produced; missing topics and partitions get Kafka's messages."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster
from kafkapy.tools.get_offsets import parse_partitions, partition_lines, valid_broker_list

WAIT_S = 60.0


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.get_offsets", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.timeout(200)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_offsets_match_the_produced_counts(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with it
    # Timestamps from 1970 (queried by --time below) are past any retention: kept for good.
    counted = NewTopic("counted", num_partitions=3, replication_factor=1, config={"retention.ms": "-1"})
    admin.create_topics([counted])["counted"].result(WAIT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(10):
        producer.produce("counted", value=b"a", partition=0, timestamp=1_000 + i)
    for i in range(5):
        producer.produce("counted", value=b"b", partition=1, timestamp=2_000 + i)
    assert producer.flush(WAIT_S) == 0

    latest = run_tool("--broker-list", bootstrap, "--topic", "counted")
    assert latest.returncode == 0, latest.stderr
    assert latest.stdout.splitlines() == ["counted:0:10", "counted:1:5", "counted:2:0"]
    earliest = run_tool("--bootstrap-server", bootstrap, "--topic", "counted", "--time", "-2")
    assert earliest.stdout.splitlines() == ["counted:0:0", "counted:1:0", "counted:2:0"]
    by_time = run_tool("--broker-list", bootstrap, "--topic", "counted", "--time", "1005")
    assert by_time.stdout.splitlines() == ["counted:0:5", "counted:1:0", "counted:2:"]

    some = run_tool("--broker-list", bootstrap, "--topic", "counted", "--partitions", "1,7")
    assert some.returncode == 0, some.stderr
    assert (some.stdout.splitlines(), some.stderr.strip()) == (
        ["counted:1:5"],
        "Error: partition 7 does not exist",
    )
    none = run_tool("--broker-list", bootstrap, "--topic", "counted", "--partitions", "7")
    assert (none.returncode, none.stderr.strip()) == (
        1,
        "Topic counted does not have any of the requested partitions 7",
    )
    missing = run_tool("--broker-list", bootstrap, "--topic", "nope")
    assert (missing.returncode, missing.stderr.strip(), missing.stdout) == (
        1,
        "Topic nope does not exist",
        "",
    )


def test_arguments_are_checked_before_connecting() -> None:
    done = run_tool("--topic", "t")
    assert (done.returncode, done.stderr.strip()) == (1, 'Missing required argument "[broker-list]"')
    done = run_tool("--broker-list", "127.0.0.1:1")
    assert (done.returncode, done.stderr.strip()) == (1, 'Missing required argument "[topic]"')
    done = run_tool("--broker-list", "nohostport", "--topic", "t")
    assert (done.returncode, done.stderr.strip()) == (
        1,
        "Please provide valid host:port like host1:9091,host2:9092",
    )
    for bad in ("0,x", "0,,1", " 1"):
        done = run_tool("--broker-list", "127.0.0.1:1", "--topic", "t", "--partitions", bad)
        assert (done.returncode, done.stderr.rstrip("\n")) == (
            1,
            f"--partitions expects a comma separated list of numeric partition ids, but received: {bad}",
        )


def test_lines_and_broker_lists() -> None:
    assert parse_partitions("2,0,2") == [0, 2] and parse_partitions(None) == []
    assert partition_lines("t", {2: None, 0: 42}) == ["t:0:42", "t:2:"]
    assert valid_broker_list("a:1,b:2")
    assert not valid_broker_list("a:1,b")
