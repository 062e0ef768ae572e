"""kafkapy-log-dirs --describe against a real broker with two log dirs (log.dirs=a,b).

Invariants checked: both dirs are listed; every partition of the topic appears exactly once, in
the dir where its directory really is; sizes are the bytes on disk (non-zero after producing);
--topic-list filters; an unknown --broker-list broker gets Kafka's ERROR line and no query.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster
from kafkapy.tools.log_dirs import command

WAIT_S = 20.0


@pytest.fixture
def two_dirs(tmp_path: Path) -> Iterator[tuple[KafkapyCluster, list[str]]]:
    dirs = [str(tmp_path / "dir-a"), str(tmp_path / "dir-b")]
    cluster = KafkapyCluster(tmp_path / "cluster", 1, {"log.dirs": ",".join(dirs)})
    try:
        cluster.start()
        yield cluster, dirs
    finally:
        cluster.stop()


@pytest.mark.timeout(90)
def test_describe_two_log_dirs(two_dirs: tuple[KafkapyCluster, list[str]]) -> None:
    cluster, dirs = two_dirs
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics(
        [
            NewTopic("t", num_partitions=4, replication_factor=1),
            NewTopic("other", num_partitions=1, replication_factor=1),
        ]
    )["t"].result(WAIT_S)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(40):
        producer.produce("t", value=b"x" * 100, partition=i % 4)
    assert producer.flush(WAIT_S) == 0

    # The installed entry point may predate this tool: `python -m` runs the same main().
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.log_dirs",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--describe",
            "--topic-list",
            "t",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 0",
    ]
    document = json.loads(lines[2])
    assert document["version"] == 1 and [b["broker"] for b in document["brokers"]] == [0]
    log_dirs = document["brokers"][0]["logDirs"]
    assert sorted(d["logDir"] for d in log_dirs) == sorted(dirs)
    seen = []
    for d in log_dirs:
        assert d["error"] is None
        for p in d["partitions"]:
            seen.append(p["partition"])
            assert os.path.isdir(os.path.join(d["logDir"], p["partition"]))  # reported where it lives
            assert p["size"] > 0 and p["offsetLag"] == 0 and p["isFuture"] is False
    assert sorted(seen) == ["t-0", "t-1", "t-2", "t-3"]
    assert all(d["partitions"] for d in log_dirs)  # four partitions over two dirs: both used

    everything = CliRunner().invoke(command, ["--bootstrap-server", cluster.bootstrap_servers, "--describe"])
    assert everything.exit_code == 0, everything.output
    all_parts = [
        p["partition"]
        for d in json.loads(everything.stdout.splitlines()[2])["brokers"][0]["logDirs"]
        for p in d["partitions"]
    ]
    assert "other-0" in all_parts

    missing = CliRunner().invoke(
        command, ["--bootstrap-server", cluster.bootstrap_servers, "--describe", "--broker-list", "0,7"]
    )
    assert missing.exit_code == 1
    assert missing.stdout.strip() == (
        "ERROR: The given brokers do not exist from --broker-list: 7. Current existent brokers: 0"
    )


def _alter(cluster: KafkapyCluster, moves: dict[str, list[tuple[str, int]]]) -> dict[tuple[str, int], int]:
    """AlterReplicaLogDirs to broker 0: {path: [(topic, partition)]} -> {(topic, partition): error code}."""
    from kafkapy.client.admin import AdminClient as KafkapyAdmin
    from kafkapy.protocol.api_keys import ApiKey

    body = {
        "dirs": [
            {"path": path, "topics": [{"name": t, "partitions": [p]} for t, p in tps]}
            for path, tps in moves.items()
        ]
    }
    admin = KafkapyAdmin(cluster.bootstrap_servers)
    try:
        admin.metadata([], "alterReplicaLogDirs")
        _, answer = admin.send_to_broker(0, ApiKey.ALTER_REPLICA_LOG_DIRS, lambda v: body)
    finally:
        admin.close()
    return {(r.topic_name, p.partition_index): p.error_code for r in answer.results for p in r.partitions}


@pytest.mark.timeout(90)
def test_alter_replica_log_dirs(two_dirs: tuple[KafkapyCluster, list[str]], tmp_path: Path) -> None:
    """A replica not yet created goes where AlterReplicaLogDirs said (both partitions into dir-a,
    where the fewest-partitions rule would have split them); a replica already there answers
    NONE; a dir outside log.dirs is LOG_DIR_NOT_FOUND; an existing replica moved to dir-b under a
    producer ends there with every acknowledged record, in order, once."""
    cluster, (dir_a, dir_b) = two_dirs
    codes = _alter(cluster, {dir_a: [("later", 0), ("later", 1)]})
    assert codes == {("later", 0): 9, ("later", 1): 9}  # REPLICA_NOT_AVAILABLE, dir remembered
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("later", num_partitions=2, replication_factor=1)])["later"].result(WAIT_S)
    assert os.path.isdir(os.path.join(dir_a, "later-0")) and os.path.isdir(os.path.join(dir_a, "later-1"))

    assert _alter(cluster, {dir_a: [("later", 0)]}) == {("later", 0): 0}  # already there
    assert _alter(cluster, {str(tmp_path / "nowhere"): [("later", 0)]}) == {("later", 0): 57}

    # Move later-1 to dir-b while a producer writes to it: the future log catches up and swaps in.
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 2})
    sent = 0
    for _ in range(300):
        producer.produce("later", value=b"%d" % sent, partition=1)
        sent += 1
    assert producer.flush(WAIT_S) == 0
    assert _alter(cluster, {dir_b: [("later", 1)]}) == {("later", 1): 0}
    deadline = time.monotonic() + WAIT_S
    while not os.path.isdir(os.path.join(dir_b, "later-1")) or os.path.isdir(os.path.join(dir_a, "later-1")):
        producer.produce("later", value=b"%d" % sent, partition=1)
        sent += 1
        producer.poll(0)
        assert time.monotonic() < deadline, "later-1 never moved to dir-b"
        time.sleep(0.01)
    for _ in range(100):  # the moved log takes appends
        producer.produce("later", value=b"%d" % sent, partition=1)
        sent += 1
    assert producer.flush(WAIT_S) == 0
    assert not any(n.endswith("-future") for n in os.listdir(dir_b))

    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("later", 1, 0)])
    got: list[int] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < sent and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(int(msg.value()))
    consumer.close()
    assert got == list(range(sent))  # nothing lost or duplicated by the swap

    described = CliRunner().invoke(
        command, ["--bootstrap-server", cluster.bootstrap_servers, "--describe", "--topic-list", "later"]
    )
    dirs_of = {
        p["partition"]: d["logDir"]
        for d in json.loads(described.stdout.splitlines()[2])["brokers"][0]["logDirs"]
        for p in d["partitions"]
    }
    assert dirs_of == {"later-0": dir_a, "later-1": dir_b}


@pytest.mark.timeout(90)
def test_reassign_partitions_moves_a_replica_to_its_log_dir(
    two_dirs: tuple[KafkapyCluster, list[str]], tmp_path: Path
) -> None:
    """kafkapy-reassign-partitions --execute with log_dirs: Kafka's lines, the replica ends in the
    named dir with its records, and the log-dir throttle is set on the broker."""
    cluster, (dir_a, dir_b) = two_dirs
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("m", num_partitions=1, replication_factor=1)])["m"].result(WAIT_S)
    source, target = (dir_a, dir_b) if os.path.isdir(os.path.join(dir_a, "m-0")) else (dir_b, dir_a)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(50):
        producer.produce("m", value=b"%d" % i)
    assert producer.flush(WAIT_S) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "m", "partition": 0, "replicas": [0], "log_dirs": [target]}],
            }
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.reassign_partitions",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--execute",
            "--reassignment-json-file",
            str(plan),
            "--replica-alter-log-dirs-throttle",
            "10000000",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The replica-alter-dir throttle limit was set to 10000000 B/s" in done.stdout
    assert "Successfully started partition reassignment for m-0" in done.stdout
    assert done.stdout.rstrip().endswith("Successfully started log directory move for: m-0-0")
    deadline = time.monotonic() + WAIT_S
    while not os.path.isdir(os.path.join(target, "m-0")) or os.path.isdir(os.path.join(source, "m-0")):
        assert time.monotonic() < deadline, "m-0 never moved"
        time.sleep(0.1)
    described = CliRunner().invoke(
        command, ["--bootstrap-server", cluster.bootstrap_servers, "--describe", "--topic-list", "m"]
    )
    parts = {
        p["partition"]: (d["logDir"], p["isFuture"])
        for d in json.loads(described.stdout.splitlines()[2])["brokers"][0]["logDirs"]
        for p in d["partitions"]
    }
    assert parts == {"m-0": (target, False)}
    verified = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.reassign_partitions",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--verify",
            "--reassignment-json-file",
            str(plan),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "Reassignment of partition m-0 is complete." in verified.stdout
    assert "Reassignment of replica m-0-0 completed successfully." in verified.stdout
    assert "Clearing broker-level throttles on broker 0" in verified.stdout  # the log-dir throttle too


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_log_dir_move_resumes_after_a_restart(
    two_dirs: tuple[KafkapyCluster, list[str]], tmp_path: Path
) -> None:
    """A throttled move (50 KB/s over 2 MB) is interrupted by a broker restart: the `-future` log
    survives the clean shutdown, is loaded at start-up and the move carries on from the offset it
    had reached (the throttle is then lifted so it ends quickly), with every record once and in
    order."""
    cluster, (dir_a, dir_b) = two_dirs
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("slow", num_partitions=1, replication_factor=1)])["slow"].result(WAIT_S)
    source, target = (dir_a, dir_b) if os.path.isdir(os.path.join(dir_a, "slow-0")) else (dir_b, dir_a)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "none",
        }
    )
    sent = 2000
    for i in range(sent):
        producer.produce("slow", value=b"%08d" % i + b"x" * 1000)
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(WAIT_S) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "slow", "partition": 0, "replicas": [0], "log_dirs": [target]}],
            }
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.reassign_partitions",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--execute",
            "--reassignment-json-file",
            str(plan),
            "--replica-alter-log-dirs-throttle",
            "50000",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    def futures() -> list[str]:
        return [n for n in os.listdir(target) if n.endswith("-future")] if os.path.isdir(target) else []

    deadline = time.monotonic() + WAIT_S
    while not futures():
        assert time.monotonic() < deadline, "the move never started"
        time.sleep(0.05)
    time.sleep(1.0)  # part of the copy is done
    assert futures() and os.path.isdir(os.path.join(source, "slow-0")), "the move ended before the restart"
    broker = cluster.brokers[0]
    broker.restart()
    cluster.wait_until_ready()
    deadline = time.monotonic() + WAIT_S
    while not (
        resumed := re.search(r"Resuming the move of slow-0 to \S+ from offset (\d+)", broker.server_log())
    ):
        assert time.monotonic() < deadline, "the move was not resumed"
        time.sleep(0.2)
    assert int(resumed.group(1)) > 0  # not started over
    lifted = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.configs",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--entity-type",
            "brokers",
            "--entity-name",
            "0",
            "--alter",
            "--delete-config",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lifted.returncode == 0, lifted.stdout + lifted.stderr

    deadline = time.monotonic() + 90
    while (
        futures()
        or os.path.isdir(os.path.join(source, "slow-0"))
        or not os.path.isdir(os.path.join(target, "slow-0"))
    ):
        assert time.monotonic() < deadline, "the resumed move never finished"
        time.sleep(0.2)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "check-resume",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("slow", 0, 0)])
    got: list[int] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < sent and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(int(msg.value()[:8]))
    consumer.close()
    assert got == list(range(sent))
