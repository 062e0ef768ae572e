"""kafkapy-leader-election (ElectLeaders, API 43) against real ZooKeeper and brokers.

Preferred: a controlled shutdown moved a partition's leadership away from its preferred replica;
after the restart the tool moves it back and a second run finds nothing to do. Unclean: the only
in-sync replica is dead and the live replica is outside the ISR, so the partition has no leader
(unclean.leader.election.enable is false); the unclean election makes the out-of-ISR replica the
leader. The option checks run without a cluster and end with Kafka's messages and exit code 1.
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

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import ElectionNotNeededException, EligibleLeadersNotAvailableException
from kafkapy.server.controller.events import ElectionType
from kafkapy.testing import KafkapyCluster
from kafkapy.tools.leader_election import AdminCommandFailedError, parse_election_data, report

WAIT_S = 60.0
OVERRIDES = {
    "auto.leader.rebalance.enable": "false",  # only the tool may move leadership back
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.leader_election", *args],
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
        time.sleep(0.2)
    return result


def state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


def create(cluster: KafkapyCluster, topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[replicas])])[topic].result(
        WAIT_S
    )


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=2, overrides=OVERRIDES)
def test_preferred_election_moves_leadership_back_after_a_controlled_shutdown(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    preferred = next(b.broker_id for b in kafkapy_cluster.brokers if b.broker_id != controller)
    create(kafkapy_cluster, "moved", [preferred, controller])
    wait_until(lambda: sorted(state(zk, "moved")["isr"]) == sorted([preferred, controller]), "full ISR")
    broker = kafkapy_cluster.broker(preferred)
    broker.stop()
    wait_until(lambda: state(zk, "moved")["leader"] == controller, "the leader to move")
    broker.start()
    wait_until(lambda: sorted(state(zk, "moved")["isr"]) == sorted([preferred, controller]), "ISR again")
    bootstrap = kafkapy_cluster.broker(controller).bootstrap

    done = run_tool("--bootstrap-server", bootstrap, "--election-type", "preferred", "--all-topic-partitions")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions moved-0"
    ]
    assert state(zk, "moved")["leader"] == preferred

    again = run_tool(
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "PREFERRED",
        "--topic",
        "moved",
        "--partition",
        "0",
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["Valid replica already elected for partitions moved-0"]

    missing = run_tool(
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "preferred",
        "--topic",
        "moved",
        "--partition",
        "7",
    )
    assert missing.returncode == 1
    assert missing.stdout.splitlines() == [
        "Error completing leader election (PREFERRED) for partition: moved-7: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: The partition does not exist."
    ]
    assert missing.stderr.strip() == "Error: 1 replica(s) could not be elected"


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_unclean_election_elects_a_replica_outside_the_isr(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    in_sync, lagging = (b.broker_id for b in kafkapy_cluster.brokers if b.broker_id != controller)
    create(kafkapy_cluster, "lost", [in_sync, lagging])
    wait_until(lambda: sorted(state(zk, "lost")["isr"]) == sorted([in_sync, lagging]), "full ISR")
    # The follower leaves the ISR when it stops; then the only in-sync replica dies.
    kafkapy_cluster.broker(lagging).stop()
    wait_until(lambda: state(zk, "lost")["isr"] == [in_sync], "the ISR to shrink")
    kafkapy_cluster.broker(in_sync).kill()
    wait_until(lambda: state(zk, "lost")["leader"] == -1, "the partition to go offline")
    kafkapy_cluster.broker(lagging).start()
    kafkapy_cluster.wait_until_ready(broker_ids=sorted([controller, lagging]))
    assert state(zk, "lost")["leader"] == -1, "a clean election must not pick the out-of-sync replica"
    bootstrap = kafkapy_cluster.broker(controller).bootstrap

    preferred = run_tool(
        "--bootstrap-server", bootstrap, "--election-type", "preferred", "--topic", "lost", "--partition", "0"
    )
    assert preferred.returncode == 1
    assert preferred.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: lost-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
    ), preferred.stdout

    done = run_tool(
        "--bootstrap-server", bootstrap, "--election-type", "unclean", "--topic", "lost", "--partition", "0"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (UNCLEAN) for partitions lost-0"
    ]
    after = state(zk, "lost")
    assert (after["leader"], after["isr"]) == (lagging, [lagging])

    again = run_tool("--bootstrap-server", bootstrap, "--election-type", "unclean", "--all-topic-partitions")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["Valid replica already elected for partitions lost-0"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Missing required option(s): election-type, bootstrap-server"),
        (["--bootstrap-server", "127.0.0.1:1"], "Missing required option(s): election-type"),
        (
            ["--bootstrap-server", "127.0.0.1:1", "--election-type", "preferred"],
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file",
        ),
        (
            [
                "--bootstrap-server",
                "127.0.0.1:1",
                "--election-type",
                "preferred",
                "--topic",
                "t",
                "--all-topic-partitions",
            ],
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file",
        ),
        (
            ["--bootstrap-server", "127.0.0.1:1", "--election-type", "preferred", "--topic", "t"],
            "Missing required option(s): partition",
        ),
        (
            [
                "--bootstrap-server",
                "127.0.0.1:1",
                "--election-type",
                "preferred",
                "--all-topic-partitions",
                "--partition",
                "0",
            ],
            "Option partition is only allowed if topic is used",
        ),
    ],
)
def test_bad_options_fail_with_kafkas_messages(args: list[str], message: str) -> None:
    if not args:
        args = ["--all-topic-partitions"]
    done = run_tool(*args)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (1, f"Error: {message}", "")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "Replica election data is empty"),
        ('{"version": 1}', 'Replica election data is missing "partitions" field'),
        (
            '{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}',
            "Replica election data contains duplicate partitions: t-0",
        ),
    ],
)
def test_bad_json_files_fail_before_any_request(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "election.json"
    path.write_text(text)
    # Port 1 has no broker: the file is refused before anything is dialled.
    done = run_tool(
        "--bootstrap-server", "127.0.0.1:1", "--election-type", "preferred", "--path-to-json-file", str(path)
    )
    assert (done.returncode, done.stderr.strip()) == (1, f"Error: {message}")


def test_report_prints_kafkas_three_kinds_of_lines() -> None:
    lines: list[str] = []
    results = {
        TopicPartition("b", 0): None,
        TopicPartition("a", 1): None,
        TopicPartition("c", 0): ElectionNotNeededException("Leader election not needed for topic partition."),
        TopicPartition("d", 2): EligibleLeadersNotAvailableException(
            "Failed to elect leader for partition d-2"
        ),
    }
    with pytest.raises(AdminCommandFailedError, match=r"^1 replica\(s\) could not be elected$"):
        report(ElectionType.UNCLEAN, results, lines.append)
    assert lines == [
        "Successfully completed leader election (UNCLEAN) for partitions a-1, b-0",
        "Valid replica already elected for partitions c-0",
        "Error completing leader election (UNCLEAN) for partition: d-2: "
        "org.apache.kafka.common.errors.EligibleLeadersNotAvailableException: Failed to elect leader for partition d-2",
    ]
    assert parse_election_data('{"partitions": [{"topic": "t", "partition": 3}]}') == {TopicPartition("t", 3)}
    with pytest.raises(ValueError, match="^No such field exists: `partition`$"):
        parse_election_data('{"partitions": [{"topic": "t"}]}')
    with pytest.raises(ValueError, match="^Expected `String` value, received 1$"):
        parse_election_data('{"partitions": [{"topic": 1, "partition": 0}]}')
