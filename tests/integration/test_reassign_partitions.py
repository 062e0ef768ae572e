"""Partition reassignment end to end: kafkapy-reassign-partitions against a real ZooKeeper and
three real brokers, the controller doing the moves.

Invariants checked: every record a producer had acknowledged (acks=all, writing throughout the
move) is read back afterwards; the moved partitions end on exactly their target replicas with no
adding/removing replicas left in /brokers/topics/<t>; the old replicas' directories are gone;
/admin/reassign_partitions is deleted once done; bad input changes nothing; a reassignment
interrupted by the controller's death is finished by the next controller.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster, zk_controller_id

WAIT_S = 60.0
REASSIGN_PATH = "/admin/reassign_partitions"
OVERRIDES = {
    "auto.leader.rebalance.enable": "false",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    # `python -m`: the shared virtualenv has no console script for this tool until reinstalled.
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.reassign_partitions", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)
    return result


def topic_znode(zk: KazooClient, topic: str) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{topic}")[0])


def state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


def plan(path: Path, topic: str, assignment: dict[int, list[int]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "replicas": r} for p, r in sorted(assignment.items())
                ],
            }
        )
    )
    return path


def create_topic(cluster: KafkapyCluster, zk: KazooClient, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)])[
        topic
    ].result(WAIT_S)
    for p, replicas in enumerate(assignment):
        wait_until(
            lambda p=p, replicas=replicas: (
                zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state")
                and sorted(state(zk, topic, p)["isr"]) == sorted(replicas)
            ),
            f"{topic}-{p} in sync",
        )


def partition_dirs(cluster: KafkapyCluster, broker_id: int, topic: str) -> list[str]:
    log_dir = cluster.broker(broker_id).log_dir
    return sorted(d for d in os.listdir(log_dir) if d.startswith(f"{topic}-")) if log_dir.exists() else []


class AckedProducer:
    """Writes numbered records with acks=all until stopped; remembers which ones were acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: set[str] = set()
        self.failed = 0
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60000,
                "retries": 1000,
                "retry.backoff.ms": 100,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.value().decode())
        else:
            self.failed += 1

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            self._producer.produce(self.topic, value=str(n).encode(), on_delivery=self._on_delivery)
            self._producer.poll(0)
            n += 1
            time.sleep(0.002)
        self._producer.flush(60)

    def __enter__(self) -> AckedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(90)


def read_all(bootstrap: str, topic: str, partitions: int) -> set[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{time.time()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: set[str] = set()
        positions = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + WAIT_S
        while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            seen.add(msg.value().decode())
            positions[msg.partition()] = msg.offset() + 1
        return seen
    finally:
        consumer.close()


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_move_every_partition_off_a_broker_under_acks_all_load(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    topic = "moving"
    create_topic(kafkapy_cluster, zk, topic, [[0, 1], [1, 0], [0, 1]])
    target = {0: [1, 2], 1: [2, 1], 2: [1, 2]}
    path = plan(tmp_path / "plan.json", topic, target)
    bootstrap = kafkapy_cluster.bootstrap_servers
    with AckedProducer(bootstrap, topic) as producer:
        wait_until(lambda: len(producer.acked) > 200, "records before the move")
        done = run_tool("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", str(path))
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert lines[:2] == ["Current partition replica assignment", ""]
        assert json.loads(lines[2]) == {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": p, "replicas": r, "log_dirs": ["any", "any"]}
                for p, r in enumerate([[0, 1], [1, 0], [0, 1]])
            ],
        }
        assert lines[3:] == [
            "",
            "Save this to use as the --reassignment-json-file option during rollback",
            f"Successfully started partition reassignments for {topic}-0,{topic}-1,{topic}-2",
        ]
        verify_lines = [f"Reassignment of partition {topic}-{p} is complete." for p in range(3)]

        def verified() -> bool:
            out = run_tool("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(path))
            assert out.returncode == 0, out.stdout + out.stderr
            # Kafka clears replication throttles whenever --verify finds the move complete.
            return out.stdout.splitlines() == [
                "Status of partition reassignment:",
                *verify_lines,
                "Clearing broker-level throttles on brokers 0,1,2",
                f"Clearing topic-level throttles on topic {topic}",
            ]

        wait_until(verified, "--verify to report completion")
        before_stop = len(producer.acked)
        wait_until(lambda: len(producer.acked) > before_stop + 100, "records after the move")
    assert producer.failed == 0
    znode = topic_znode(zk, topic)
    assert znode["partitions"] == {str(p): r for p, r in target.items()}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    for p, replicas in target.items():
        assert state(zk, topic, p)["leader"] in replicas
        wait_until(
            lambda p=p, replicas=replicas: sorted(state(zk, topic, p)["isr"]) == sorted(replicas), "ISR"
        )
    assert zk.exists(REASSIGN_PATH) is None
    wait_until(lambda: partition_dirs(kafkapy_cluster, 0, topic) == [], "broker 0's replicas to be deleted")
    assert partition_dirs(kafkapy_cluster, 2, topic) == [f"{topic}-{p}" for p in range(3)]
    # Broker 0 is empty now: stopping it leaves every partition available for acks=all writes.
    kafkapy_cluster.broker(0).stop()
    after = Producer(
        {"bootstrap.servers": kafkapy_cluster.broker(1).bootstrap, "acks": "all", "message.timeout.ms": 30000}
    )
    for p in range(3):
        after.produce(
            topic,
            value=f"after-{p}".encode(),
            partition=p,
            on_delivery=lambda err, msg: err is None and producer.acked.add(msg.value().decode()),
        )
    assert after.flush(40) == 0
    assert {f"after-{p}" for p in range(3)} <= producer.acked
    acked = set(producer.acked)
    read = read_all(kafkapy_cluster.broker(1).bootstrap, topic, 3)
    print(f"acks=all records acknowledged during the move: {len(acked)}, read back: {len(read & acked)}")
    missing = acked - read
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost"


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_raise_the_replication_factor_through_zookeeper(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    topic = "growing"
    create_topic(kafkapy_cluster, zk, topic, [[1]])
    producer = Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "acks": "all"})
    for n in range(500):
        producer.produce(topic, value=str(n).encode())
    assert producer.flush(30) == 0
    path = plan(tmp_path / "grow.json", topic, {0: [1, 2, 0]})
    zk_args = ("--zookeeper", kafkapy_cluster.zookeeper_connect)
    done = run_tool(*zk_args, "--execute", "--reassignment-json-file", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        done.stdout.splitlines()[0]
        == "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
    )
    assert done.stdout.splitlines()[-1] == f"Successfully started partition reassignment for {topic}-0"

    def verified() -> bool:
        out = run_tool(*zk_args, "--verify", "--reassignment-json-file", str(path))
        return out.stdout.splitlines()[-3:] == [
            f"Reassignment of partition {topic}-0 is complete.",
            "Clearing broker-level throttles on brokers 0,1,2",
            f"Clearing topic-level throttles on topic {topic}",
        ]

    wait_until(verified, "--verify to report completion")
    assert topic_znode(zk, topic)["partitions"] == {"0": [1, 2, 0]}
    assert sorted(state(zk, topic, 0)["isr"]) == [0, 1, 2]
    assert state(zk, topic, 0)["leader"] == 1
    assert zk.exists(REASSIGN_PATH) is None
    assert read_all(kafkapy_cluster.bootstrap_servers, topic, 1) == {str(n) for n in range(500)}

    # And back down to 2, through the broker: the dropped replica's directory goes away.
    shrink = plan(tmp_path / "shrink.json", topic, {0: [1, 2]})
    done = run_tool(
        "--bootstrap-server",
        kafkapy_cluster.bootstrap_servers,
        "--execute",
        "--reassignment-json-file",
        str(shrink),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    wait_until(
        lambda: topic_znode(zk, topic)["partitions"] == {"0": [1, 2]}, "the replication factor to drop"
    )
    assert sorted(state(zk, topic, 0)["isr"]) == [1, 2]
    wait_until(lambda: partition_dirs(kafkapy_cluster, 0, topic) == [], "broker 0's replica to be deleted")
    assert read_all(kafkapy_cluster.bootstrap_servers, topic, 1) == {str(n) for n in range(500)}


@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(brokers=2, overrides=OVERRIDES)
def test_bad_input_is_refused_and_changes_nothing(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    topic = "steady"
    create_topic(kafkapy_cluster, zk, topic, [[0, 1], [1, 0]])
    before = topic_znode(zk, topic)
    bootstrap = ("--bootstrap-server", kafkapy_cluster.bootstrap_servers)
    zookeeper = ("--zookeeper", kafkapy_cluster.zookeeper_connect)
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"version": 1, "partitions": [')
    duplicate = tmp_path / "dup.json"
    duplicate.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [1, 0]},
                    {"topic": topic, "partition": 0, "replicas": [0, 1]},
                ],
            }
        )
    )
    cases = [
        (bootstrap, plan(tmp_path / "b1.json", topic, {0: [1, 7]}), "Error: Unknown broker id 7"),
        (
            zookeeper,
            plan(tmp_path / "b2.json", topic, {0: [1, 7]}),
            "Error: The proposed assignment contains non-existent brokerIDs: 7",
        ),
        (
            bootstrap,
            plan(tmp_path / "t.json", "absent", {0: [0, 1]}),
            "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic absent not found.",
        ),
        (
            zookeeper,
            plan(tmp_path / "p.json", topic, {5: [0, 1]}),
            f"Error: The proposed assignment contains non-existent partitions: List({topic}-5)",
        ),
        (
            bootstrap,
            plan(tmp_path / "p2.json", topic, {0: [1, 0], 5: [0, 1]}),
            f"Error: The proposed assignment contains non-existent partitions: List({topic}-5)",
        ),
        (
            bootstrap,
            duplicate,
            f"Error: Partition reassignment contains duplicate topic partitions: {topic}-0",
        ),
        (
            zookeeper,
            duplicate,
            f"Error: Partition reassignment contains duplicate topic partitions: {topic}-0",
        ),
    ]
    for where, path, message in cases:
        done = run_tool(*where, "--execute", "--reassignment-json-file", str(path))
        assert done.returncode == 1, (path.name, done.stdout, done.stderr)
        assert done.stderr.splitlines() == [message], path.name
        assert "Successfully started" not in done.stdout
    done = run_tool(*bootstrap, "--execute", "--reassignment-json-file", str(malformed))
    assert done.returncode == 1 and done.stderr.startswith("Error: ")
    time.sleep(1.0)
    assert topic_znode(zk, topic) == before
    assert zk.exists(REASSIGN_PATH) is None
    listed = run_tool(*bootstrap, "--list")
    assert listed.returncode == 0 and listed.stdout.splitlines() == ["No partition reassignments found."]


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_a_new_controller_finishes_a_reassignment_the_old_one_started(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    leader, slow = (b for b in (0, 1, 2) if b != controller)
    topic = "handover"
    create_topic(kafkapy_cluster, zk, topic, [[leader]])
    producer = Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "acks": "all"})
    for n in range(200):
        producer.produce(topic, value=str(n).encode())
    assert producer.flush(30) == 0
    # The new replica's broker is frozen (still registered): it cannot catch up, so the
    # reassignment stays in flight while its controller dies.
    slow_process = kafkapy_cluster.broker(slow).process
    assert slow_process is not None
    slow_process.send_signal(signal.SIGSTOP)
    try:
        path = plan(tmp_path / "handover.json", topic, {0: [leader, slow]})
        done = run_tool(
            "--bootstrap-server",
            kafkapy_cluster.broker(leader).bootstrap,
            "--execute",
            "--reassignment-json-file",
            str(path),
        )
        assert done.returncode == 0, done.stdout + done.stderr
        wait_until(
            lambda: topic_znode(zk, topic)["adding_replicas"] == {"0": [slow]}, "the reassignment to start"
        )
        kafkapy_cluster.broker(controller).kill()
        wait_until(
            lambda: zk_controller_id(zk) == leader,
            "a new controller",
        )
        assert topic_znode(zk, topic)["adding_replicas"] == {"0": [slow]}
    finally:
        slow_process.send_signal(signal.SIGCONT)
    wait_until(
        lambda: (
            topic_znode(zk, topic)["partitions"] == {"0": [leader, slow]}
            and topic_znode(zk, topic)["adding_replicas"] == {}
        ),
        "the new controller to finish",
    )
    wait_until(lambda: sorted(state(zk, topic, 0)["isr"]) == sorted([leader, slow]), "the full ISR")
    assert partition_dirs(kafkapy_cluster, slow, topic) == [f"{topic}-0"]


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_cancel_returns_a_stuck_reassignment_to_its_original_replicas(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    first, stuck = (b for b in (0, 1, 2) if b != controller)
    topic = "cancelled"
    create_topic(kafkapy_cluster, zk, topic, [[first, controller]])
    bootstrap = ("--bootstrap-server", kafkapy_cluster.bootstrap_servers)
    path = plan(tmp_path / "stuck.json", topic, {0: [first, stuck]})
    stuck_process = kafkapy_cluster.broker(stuck).process
    assert stuck_process is not None
    stuck_process.send_signal(signal.SIGSTOP)  # registered but silent: it never catches up
    try:
        done = run_tool(*bootstrap, "--execute", "--reassignment-json-file", str(path))
        assert done.returncode == 0, done.stdout + done.stderr
        listed = run_tool(*bootstrap, "--list")
        assert listed.stdout.splitlines() == [
            "Current partition reassignments:",
            f"{topic}-0: replicas: {first},{stuck},{controller}. adding: {stuck}. removing: {controller}.",
        ]
        verify = run_tool(*bootstrap, "--verify", "--reassignment-json-file", str(path))
        assert verify.stdout.splitlines()[-1] == f"Reassignment of partition {topic}-0 is still in progress."
        again = run_tool(*bootstrap, "--execute", "--reassignment-json-file", str(path))
        assert again.returncode == 1 and again.stderr.startswith(
            "Cannot execute because there is an existing"
        )
        cancelled = run_tool(*bootstrap, "--cancel", "--reassignment-json-file", str(path))
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert cancelled.stdout.splitlines() == [
            f"Successfully cancelled partition reassignment for: {topic}-0",
            "None of the specified partition moves are active.",
        ]
    finally:
        stuck_process.send_signal(signal.SIGCONT)
    znode = topic_znode(zk, topic)
    assert sorted(znode["partitions"]["0"]) == sorted([first, controller])
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    assert run_tool(*bootstrap, "--list").stdout.splitlines() == ["No partition reassignments found."]
    # The replica the cancelled reassignment had started is stopped and deleted.
    wait_until(lambda: partition_dirs(kafkapy_cluster, stuck, topic) == [], "the added replica to be deleted")
    none = run_tool(*bootstrap, "--cancel", "--reassignment-json-file", str(path))
    assert none.stdout.splitlines()[0] == "None of the specified partition reassignments are active."


@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(brokers=2, overrides=OVERRIDES)
def test_generate_proposes_a_placement_over_the_listed_brokers(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    create_topic(kafkapy_cluster, zk, "spread", [[0], [0], [0], [0]])
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "spread"}]}))
    current = {
        "version": 1,
        "partitions": [
            {"topic": "spread", "partition": p, "replicas": [0], "log_dirs": ["any"]} for p in range(4)
        ],
    }
    for where in (
        ("--bootstrap-server", kafkapy_cluster.bootstrap_servers),
        ("--zookeeper", kafkapy_cluster.zookeeper_connect),
    ):
        done = run_tool(
            *where, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "0,1"
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        if where[0] == "--zookeeper":
            lines = lines[1:]  # the deprecation warning
        assert lines[0] == "Current partition replica assignment"
        assert json.loads(lines[1]) == current
        assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
        proposed = json.loads(lines[4])["partitions"]
        assert [p["partition"] for p in proposed] == [0, 1, 2, 3]
        assert sorted(p["replicas"][0] for p in proposed) == [0, 0, 1, 1]  # leaders spread evenly
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"version": 1, "topics": [{"topic": "spread"}, {"topic": "nowhere"}]}))
    done = run_tool(
        "--bootstrap-server",
        kafkapy_cluster.bootstrap_servers,
        "--generate",
        "--topics-to-move-json-file",
        str(missing),
        "--broker-list",
        "0,1",
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic nowhere not found."
    ]
