"""kafkapy-preferred-replica-election against a real ZooKeeper and two real brokers.

A partition whose preferred replica (the first of its assignment) lost the leadership in a
restart gets it back once the tool has written /admin/preferred_replica_election and the
controller has acted on it. The installed executable is what runs, as a user would type it.
The JSON file's checks and the refusal while a request is pending run without a cluster.
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
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.testing import KafkapyCluster
from kafkapy.tools.preferred_replica_election import elect_preferred_leaders, parse_election_data
from kafkapy.zk.errors import AdminOperationError

pytestmark = pytest.mark.timeout(180)

WAIT_S = 40.0
ELECTION_PATH = "/admin/preferred_replica_election"


def executable() -> list[str]:
    script = Path(sys.executable).parent / "kafkapy-preferred-replica-election"
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-m", "kafkapy.tools.preferred_replica_election"]
    )


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*executable(), *args], capture_output=True, text=True, timeout=60, check=False)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return result


def partition_state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any]:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data)


@pytest.mark.kafkapy_cluster(
    brokers=2,
    overrides={
        "auto.leader.rebalance.enable": "false",  # only the tool may move the leadership back
        "replica.fetch.backoff.ms": "200",
        "controlled.shutdown.retry.backoff.ms": "200",
    },
)
def test_leadership_returns_to_the_preferred_replica(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    preferred = next(b.broker_id for b in kafkapy_cluster.brokers if b.broker_id != controller)
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    admin.create_topics(
        [NewTopic("balanced", num_partitions=1, replica_assignment=[[preferred, controller]])]
    )["balanced"].result(WAIT_S)
    wait_until(
        lambda: sorted(partition_state(zk, "balanced")["isr"]) == sorted([preferred, controller]), "full ISR"
    )

    # A controlled shutdown hands the leadership to the other replica; after the restart the
    # preferred replica catches up and rejoins the ISR as a follower.
    broker = kafkapy_cluster.broker(preferred)
    broker.stop()
    wait_until(lambda: partition_state(zk, "balanced")["leader"] == controller, "the leader to move")
    broker.start()
    wait_until(
        lambda: sorted(partition_state(zk, "balanced")["isr"]) == sorted([preferred, controller]), "ISR"
    )
    assert partition_state(zk, "balanced")["leader"] == controller

    done = run_tool("--zookeeper", kafkapy_cluster.zookeeper_connect)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Created preferred replica election path with balanced-0",
        "Successfully started preferred replica election for partitions Set(balanced-0)",
    ]
    wait_until(lambda: partition_state(zk, "balanced")["leader"] == preferred, "the preferred leader")
    wait_until(lambda: zk.exists(ELECTION_PATH) is None, "the controller to delete the request")
    controller_log = (kafkapy_cluster.broker(controller).logs / "controller.log").read_text(errors="replace")
    assert f"Partition balanced-0 completed preferred replica leader election. New leader is {preferred}" in (
        controller_log
    )


@pytest.mark.kafkapy_cluster(brokers=1)
def test_json_file_names_the_partitions_and_missing_ones_are_skipped(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    admin.create_topics([NewTopic("named", num_partitions=2, replication_factor=1)])["named"].result(WAIT_S)
    wait_until(lambda: zk.exists("/brokers/topics/named/partitions/1/state"), "the topic's partitions")
    path = tmp_path / "election.json"
    path.write_text(
        json.dumps({"partitions": [{"topic": "named", "partition": 1}, {"topic": "gone", "partition": 0}]})
    )

    done = run_tool("--zookeeper", kafkapy_cluster.zookeeper_connect, "--path-to-json-file", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Created preferred replica election path with named-1",
        "Successfully started preferred replica election for partitions Set(named-1)",
        "Skipping preferred replica leader election for partition gone-0 since it doesn't exist.",
    ]
    wait_until(lambda: zk.exists(ELECTION_PATH) is None, "the controller to consume the request")


def test_missing_zookeeper_and_bad_files_fail_with_kafkas_messages(tmp_path: Path) -> None:
    done = run_tool("--path-to-json-file", "x.json")
    assert (done.returncode, done.stderr.strip()) == (1, 'Missing required argument "[zookeeper]"')
    dup = tmp_path / "dup.json"
    dup.write_text('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}')
    # The file is read before ZooKeeper is dialled, so no server is needed for this failure.
    done = run_tool("--zookeeper", "127.0.0.1:1", "--path-to-json-file", str(dup))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Failed to start preferred replica election",
        "Preferred replica election data contains duplicate partitions: t-0",
    ]


@pytest.mark.parametrize("text", ["", "{}", '{"version": 1}', "[1, 2]", "not json"])
def test_election_data_without_partitions_is_empty(text: str) -> None:
    with pytest.raises(AdminOperationError, match="^Preferred replica election data is empty$"):
        parse_election_data(text)


def test_election_data_names_partitions() -> None:
    text = '{"partitions": [{"topic": "a", "partition": 2}, {"topic": "b", "partition": 0}]}'
    assert parse_election_data(text) == {TopicPartition("a", 2), TopicPartition("b", 0)}
    with pytest.raises(AdminOperationError, match="malformed"):
        parse_election_data('{"partitions": [{"topic": "a"}]}')


class _PendingElection:
    """A ZooKeeper whose /admin/preferred_replica_election already holds a request."""

    def get_all_topics_in_cluster(self) -> set[str]:
        return {"t"}

    def get_partitions_for_topics(self, topics: object) -> dict[str, list[int]]:
        return {"t": [0, 1]}

    def create_preferred_replica_election(self, partitions: object) -> None:
        raise NodeExistsError()

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        return {TopicPartition("t", 1), TopicPartition("t", 0)}


def test_a_pending_request_is_not_overwritten() -> None:
    lines: list[str] = []
    with pytest.raises(AdminOperationError) as raised:
        elect_preferred_leaders(_PendingElection(), None, lines.append)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "Preferred replica leader election currently in progress for t-0,t-1. Aborting operation"
    )
    assert lines == []
