"""A log dir that fails is taken offline while a producer keeps writing (Kafka's LogDirFailureTest).

Three brokers; broker 0 has two log dirs and leads every partition of an RF 3 topic
(min.insync.replicas 2). A producer with acks=all writes throughout. One of broker 0's dirs is
replaced by a file, as Kafka's test does; the broker's next checkpoint into it fails.

Invariants checked: the broker logs the failure in Kafka's words and keeps running; it writes a
/log_dir_event_notification znode that the controller consumes; the partitions in the failed
dir get another leader and leave broker 0's ISR while those in the healthy dir stay led by
broker 0; writes continue after the failure; every acknowledged record is read back;
kafkapy-log-dirs reports the failed dir as KafkaStorageException; restarted with the dir still
failed, the broker serves its healthy dir and never recreates the failed dir's replicas.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.testing import KafkapyCluster
from kafkapy.tools.log_dirs import command as log_dirs_command

TOPIC = "failing"
PARTITIONS = 4
WAIT_S = 60.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[KafkapyCluster, list[str]]]:
    dirs = [str(tmp_path / "b0-dir-a"), str(tmp_path / "b0-dir-b")]
    c = KafkapyCluster(
        tmp_path / "cluster", 3,
        {"replica.high.watermark.checkpoint.interval.ms": "500", "min.insync.replicas": "2",
         "offsets.topic.replication.factor": "3", "unclean.leader.election.enable": "false"},
        broker_overrides={0: {"log.dirs": ",".join(dirs)}},
    )  # fmt: skip
    try:
        c.start()
        yield c, dirs
    finally:
        c.stop()


def leaders_and_isrs(admin: AdminClient) -> dict[int, tuple[int, list[int]]]:
    md = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p: (pm.leader, sorted(pm.isrs)) for p, pm in md.partitions.items()}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_failed_log_dir_moves_leadership_and_loses_nothing_acknowledged(
    cluster: tuple[KafkapyCluster, list[str]],
) -> None:
    c, dirs = cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics(
        [NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=[[0, 1, 2]] * PARTITIONS)]
    )[TOPIC].result(WAIT_S)
    deadline = time.monotonic() + WAIT_S
    placed = {
        p: next((d for d in dirs if os.path.isdir(os.path.join(d, f"{TOPIC}-{p}"))), None)
        for p in range(PARTITIONS)
    }
    while None in placed.values():
        assert time.monotonic() < deadline, placed
        time.sleep(0.2)
        placed = {
            p: next((d for d in dirs if os.path.isdir(os.path.join(d, f"{TOPIC}-{p}"))), None)
            for p in range(PARTITIONS)
        }
    failing = dirs[0]
    in_failing = sorted(p for p, d in placed.items() if d == failing)
    in_healthy = sorted(p for p, d in placed.items() if d != failing)
    assert in_failing and in_healthy, placed  # new logs go to the least loaded dir: both are used

    acked: list[bytes] = []
    errors: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )

        def on_delivery(err: object, msg: object) -> None:
            if err is None:
                acked.append(msg.value())  # type: ignore[attr-defined]
            else:
                errors.append(str(err))

        i = 0
        while not stop.is_set():
            producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        producer.flush(WAIT_S)

    writer = threading.Thread(target=produce, name="producer")
    writer.start()
    try:
        while len(acked) < 200:
            assert writer.is_alive() and time.monotonic() < deadline
            time.sleep(0.1)
        # Kafka's LogDirFailureTest: the dir becomes a file; open segments live on, the next
        # checkpoint (every 500 ms here) fails and takes the dir offline.
        shutil.rmtree(failing)
        Path(failing).touch()
        failed_at = len(acked)

        moved = time.monotonic() + WAIT_S
        while True:
            state = leaders_and_isrs(admin)
            if all(state[p][0] != 0 and 0 not in state[p][1] for p in in_failing):
                break
            assert time.monotonic() < moved, state
            time.sleep(0.3)
        assert all(state[p][0] == 0 for p in in_healthy), state
        # Metadata names broker 0 an offline replica of the failed dir's partitions only.
        seen_by = time.monotonic() + WAIT_S
        while True:
            kadmin = KafkapyAdmin(c.bootstrap_servers)
            try:
                md = kadmin.metadata([TOPIC], "offlineReplicas")
            finally:
                kadmin.close()
            offline = {p.partition_index: list(p.offline_replicas) for t in md.topics for p in t.partitions}
            if all(offline[p] == [0] for p in in_failing) and all(offline[p] == [] for p in in_healthy):
                break
            assert time.monotonic() < seen_by, offline
            time.sleep(0.3)
        after = time.monotonic() + WAIT_S
        while len(acked) < failed_at + 300:  # writes go on, to every partition
            assert writer.is_alive() and time.monotonic() < after, (len(acked), failed_at, errors[-3:])
            time.sleep(0.1)
    finally:
        stop.set()
        writer.join(WAIT_S)
    assert c.brokers[0].is_running()

    server_log = c.brokers[0].server_log()
    assert f"in directory {failing}" in server_log or f"in dir {failing}" in server_log
    assert f"Stopping serving replicas in dir {failing}" in server_log
    assert f"Stopping serving logs in dir {failing}" in server_log
    assert f"Stopped serving replicas in dir {failing}" in server_log
    zk = KazooClient(hosts=c.zookeeper_connect)
    zk.start(timeout=15)
    try:
        # The controller deletes the notification once it has asked the broker.
        gone = time.monotonic() + 20
        while zk.get_children("/log_dir_event_notification"):
            assert time.monotonic() < gone
            time.sleep(0.2)
    finally:
        zk.stop()
        zk.close()

    described = CliRunner().invoke(
        log_dirs_command, ["--bootstrap-server", c.bootstrap_servers, "--describe", "--broker-list", "0"]
    )
    assert described.exit_code == 0, described.output
    log_dirs = {d["logDir"]: d for d in json.loads(described.stdout.splitlines()[2])["brokers"][0]["logDirs"]}
    assert log_dirs[failing]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
    assert log_dirs[dirs[1]]["error"] is None

    # Nothing acknowledged is lost: read every partition to its end from the new leaders.
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": "check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(CkTopicPartition(TOPIC, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
        consumer.assign([CkTopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen: set[bytes] = set()
        positions = dict.fromkeys(range(PARTITIONS), 0)
        read_by = time.monotonic() + WAIT_S
        while any(positions[p] < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < read_by, (positions, ends)
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            seen.add(msg.value())
            positions[msg.partition()] = msg.offset() + 1
    finally:
        consumer.close()
    lost = set(acked) - seen
    print(
        f"acknowledged {len(acked)} records ({failed_at} before the failure), {len(errors)} delivery errors, "
        f"lost {len(lost)}; partitions {in_failing} moved off {failing}"
    )
    assert not lost

    # A restart with the dir still failed: the broker starts on its healthy dir, its replicas
    # there rejoin the ISR, and those of the failed dir stay offline (never recreated empty).
    c.brokers[0].restart()
    # Until the new process has registered, metadata can still show the old incarnation in the
    # ISR and its server.log may not yet hold the start-up lines.
    c.wait_until_ready()
    back = time.monotonic() + WAIT_S
    while True:
        state = leaders_and_isrs(admin)
        if all(0 in state[p][1] for p in in_healthy):
            break
        assert time.monotonic() < back, state
        time.sleep(0.5)
    assert all(0 not in state[p][1] for p in in_failing), state
    assert os.path.isfile(failing)
    assert f"Failed to create or validate data directory {failing}" in c.brokers[0].server_log()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_broker_whose_only_log_dir_fails_halts(tmp_path: Path) -> None:
    """Kafka's LogManager.handleLogDirFailure: with no log dir left the broker halts at once
    (exit 1), saying so; it does not linger without storage."""
    log_dir = str(tmp_path / "only")
    c = KafkapyCluster(
        tmp_path / "cluster", 1, {"log.dirs": log_dir, "replica.high.watermark.checkpoint.interval.ms": "500"}
    )
    try:
        c.start()
        shutil.rmtree(log_dir)
        Path(log_dir).touch()
        broker = c.brokers[0]
        process = broker.process
        assert process is not None
        assert process.wait(60) == 1
        assert f"Shutdown broker because all log dirs in {log_dir} have failed" in broker.server_log()
    finally:
        c.stop()
