"""kafkapy-topics against a real ZooKeeper and a real broker (the kafkapy_cluster fixture), in
both modes: --bootstrap-server (admin API over the wire) and --zookeeper (znodes directly).

The first call of each scenario runs the installed `kafkapy-topics` executable; the rest go
through click's CliRunner in this process (same code path, no interpreter start-up). Every
wait is bounded; everything listens on 127.0.0.1.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkapy.testing import KafkapyCluster
from kafkapy.tools.topics import kafka_topics

pytestmark = pytest.mark.timeout(180)

COMMAND_TIMEOUT_S = 60
TOPIC_ID = r"[A-Za-z0-9_-]{22}"
ERROR = "Error while executing topic command : "


def executable() -> list[str]:
    script = Path(sys.executable).parent / "kafkapy-topics"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafkapy.tools.topics"]


def run_executable(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [*executable(), *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )
    return done.returncode, done.stdout, done.stderr


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(kafka_topics, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def boot(cluster: KafkapyCluster) -> tuple[str, str]:
    return ("--bootstrap-server", cluster.bootstrap_servers)


def zk(cluster: KafkapyCluster) -> tuple[str, str]:
    return ("--zookeeper", cluster.zookeeper_connect)


def partition_line(topic: str, p: int, leader: str = "0", replicas: str = "0", isr: str = "0") -> str:
    return f"\tTopic: {topic}\tPartition: {p}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}"


def zk_leaders_elected(cluster: KafkapyCluster, topic: str) -> bool:
    _, out, _ = run(*zk(cluster), "--describe", "--topic", topic)
    return "\tLeader: 0\t" in out and "Leader: none" not in out


# -- --bootstrap-server ---------------------------------------------------------------------------


def test_bootstrap_create_list_describe_alter_delete(kafkapy_cluster: KafkapyCluster) -> None:
    b = boot(kafkapy_cluster)
    assert run_executable(
        *b, "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1",
        "--config", "segment.bytes=100000",
    ) == (0, "Created topic orders.\n", "")  # fmt: skip
    assert run(*b, "--create", "--topic", "audit") == (0, "Created topic audit.\n", "")

    assert run(*b, "--list") == (0, "audit\norders\n", "")
    assert run(*b, "--list", "--topic", "ord.*") == (0, "orders\n", "")

    code, out, err = run_executable(*b, "--describe", "--topic", "orders")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert re.fullmatch(
        f"Topic: orders\tTopicId: {TOPIC_ID}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: segment.bytes=100000",
        lines[0],
    ), lines[0]
    assert lines[1:] == [partition_line("orders", p) for p in range(3)]

    assert run(*b, "--alter", "--topic", "orders", "--partitions", "5") == (0, "", "")
    _, out, _ = run(*b, "--describe", "--topic", "orders")
    assert "\tPartitionCount: 5\t" in out.splitlines()[0]
    assert out.splitlines()[-1] == partition_line("orders", 4)

    assert run(*b, "--delete", "--topic", "orders") == (0, "", "")
    wait_until(lambda: run(*b, "--list")[1] == "audit\n", "orders to be deleted")


def test_bootstrap_describe_reports(kafkapy_cluster: KafkapyCluster) -> None:
    b = boot(kafkapy_cluster)
    assert run(*b, "--create", "--topic", "plain", "--partitions", "2")[0] == 0
    assert run(*b, "--create", "--topic", "tuned", "--config", "retention.ms=60000")[0] == 0

    for report in ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"):
        assert run(*b, "--describe", report) == (0, "", ""), report
    # Every partition has ISR 1 = the default min.insync.replicas.
    assert run(*b, "--describe", "--topic", "plain", "--at-min-isr-partitions") == (
        0,
        partition_line("plain", 0) + "\n" + partition_line("plain", 1) + "\n",
        "",
    )
    code, out, _ = run(*b, "--describe", "--topics-with-overrides")
    assert code == 0
    assert re.fullmatch(
        f"Topic: tuned\tTopicId: {TOPIC_ID}\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: retention.ms=60000\n",
        out,
    ), out


def test_bootstrap_errors_and_if_exists_flags(kafkapy_cluster: KafkapyCluster) -> None:
    b = boot(kafkapy_cluster)
    assert run(*b, "--create", "--topic", "t")[0] == 0
    assert run_executable(*b, "--create", "--topic", "t") == (
        1,
        "",
        f"{ERROR}Topic 't' already exists.\n",
    )
    assert run(*b, "--create", "--topic", "t", "--if-not-exists") == (0, "", "")
    assert run(*b, "--create", "--topic", "r3", "--replication-factor", "3") == (
        1,
        "",
        f"{ERROR}Replication factor: 3 larger than available brokers: 1.\n",
    )
    code, _, err = run(*b, "--create", "--topic", "bad name")
    assert code == 1 and err.startswith(f'{ERROR}Topic name "bad name" is illegal'), err
    for action in (["--describe"], ["--delete"], ["--alter", "--partitions", "3"]):
        assert run(*b, *action, "--topic", "nope") == (
            1,
            "",
            f"{ERROR}Topic 'nope' does not exist as expected\n",
        )
        assert run(*b, *action, "--topic", "nope", "--if-exists") == (0, "", "")
    assert run(*b, "--alter", "--topic", "t", "--partitions", "1") == (
        1,
        "",
        f"{ERROR}The number of partitions for a topic can only be increased. Topic t currently has 1 "
        "partitions, 1 would not be an increase.\n",
    )


def test_bootstrap_server_that_does_not_answer(tmp_path: Path) -> None:
    from kafkapy.testing import free_port

    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=1500\n")
    port = free_port()  # nothing listens there
    assert run("--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(config), "--list") == (
        1,
        "",
        f"{ERROR}Timed out waiting for a node assignment. Call: listTopics\n",
    )


# -- --zookeeper ----------------------------------------------------------------------------------


def test_zookeeper_create_list_describe_alter_delete(kafkapy_cluster: KafkapyCluster) -> None:
    z = zk(kafkapy_cluster)
    assert run_executable(
        *z, "--create", "--topic", "events", "--replica-assignment", "0,0", "--config", "segment.bytes=100000"
    ) == (0, "Created topic events.\n", "")
    assert run(*z, "--create", "--topic", "clicks", "--partitions", "1", "--replication-factor", "1") == (
        0,
        "Created topic clicks.\n",
        "",
    )
    assert run(*z, "--list") == (0, "clicks\nevents\n", "")
    wait_until(lambda: zk_leaders_elected(kafkapy_cluster, "events"), "leaders for events")

    code, out, _ = run(*z, "--describe", "--topic", "events")
    lines = out.splitlines()
    assert code == 0
    assert re.fullmatch(
        f"Topic: events\tTopicId: {TOPIC_ID}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: segment.bytes=100000",
        lines[0],
    ), lines[0]
    assert lines[1:] == [partition_line("events", 0), partition_line("events", 1)]

    assert run(
        *z, "--alter", "--topic", "events", "--config", "retention.ms=60000", "--delete-config", "segment.bytes",
        "--partitions", "3",
    ) == (0, (
        "WARNING: Altering topic configuration from this script has been deprecated and may be removed in "
        "future releases.\n"
        "         Going forward, please use kafka-configs.sh for this functionality\n"
        "Updated config for topic events.\n"
        "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of "
        "the messages will be affected\n"
        "Adding partitions succeeded!\n"
    ), "")  # fmt: skip
    wait_until(lambda: zk_leaders_elected(kafkapy_cluster, "events"), "a leader for the new partition")
    _, out, _ = run(*z, "--describe", "--topic", "events")
    assert "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=60000" in out.splitlines()[0]
    _, out, _ = run(*z, "--describe", "--topics-with-overrides")
    assert [line.split("\t")[0] for line in out.splitlines()] == ["Topic: events"]

    assert run_executable(*z, "--delete", "--topic", "events") == (
        0,
        "Topic events is marked for deletion.\n"
        "Note: This will have no impact if delete.topic.enable is not set to true.\n",
        "",
    )
    wait_until(lambda: run(*z, "--list") == (0, "clicks\n", ""), "the controller to delete events")
    assert run(*z, "--delete", "--topic", "events", "--if-exists") == (0, "", "")


def test_zookeeper_errors_and_if_exists_flags(kafkapy_cluster: KafkapyCluster) -> None:
    z = zk(kafkapy_cluster)
    assert run(*z, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1")[0] == 0
    assert run(*z, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1") == (
        1,
        "",
        f"{ERROR}Topic 't' already exists.\n",
    )
    assert run(
        *z, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1", "--if-not-exists"
    ) == (
        0,
        "",
        "",
    )
    assert run(*z, "--create", "--topic", "r3", "--partitions", "1", "--replication-factor", "3") == (
        1,
        "",
        f"{ERROR}Replication factor: 3 larger than available brokers: 1.\n",
    )
    assert run(*z, "--create", "--topic", "t2") == (1, "", 'Missing required argument "[partitions]"\n')
    for action in (["--describe"], ["--delete"], ["--alter", "--partitions", "3"]):
        assert run(*z, *action, "--topic", "nope") == (
            1,
            "",
            f"{ERROR}Topic 'nope' does not exist as expected\n",
        )
        assert run(*z, *action, "--topic", "nope", "--if-exists") == (0, "", "")
    # An empty chroot holds no topics.
    assert run("--zookeeper", f"{kafkapy_cluster.zookeeper_connect}/empty-chroot", "--list") == (0, "", "")


def test_zookeeper_internal_topics(kafkapy_cluster: KafkapyCluster) -> None:
    z = zk(kafkapy_cluster)
    offsets = "__consumer_offsets"
    assert run(*z, "--create", "--topic", offsets, "--partitions", "1", "--replication-factor", "1")[0] == 0
    assert run(*z, "--create", "--topic", "app", "--partitions", "1", "--replication-factor", "1")[0] == 0
    assert run(*z, "--list") == (0, f"{offsets}\napp\n", "")
    assert run(*z, "--list", "--exclude-internal") == (0, "app\n", "")
    # The broker learns of topics written into ZooKeeper a moment later (controller, UpdateMetadata).
    wait_until(
        lambda: run(*boot(kafkapy_cluster), "--list") == (0, f"{offsets}\napp\n", ""), "the broker's metadata"
    )
    assert run(*boot(kafkapy_cluster), "--list", "--exclude-internal") == (0, "app\n", "")
    assert run(*z, "--delete", "--topic", offsets) == (
        1,
        "",
        f"{ERROR}Topic {offsets} is a kafka internal topic and is not allowed to be marked for deletion.\n",
    )
    assert run(*z, "--alter", "--topic", offsets, "--partitions", "2") == (
        1,
        "",
        f"{ERROR}The number of partitions for the internal topic {offsets} cannot be changed.\n",
    )


def test_zookeeper_mode_without_a_running_broker_shows_pending_deletions(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    # With the only broker (and so the controller) stopped, nothing acts on what the tool writes.
    kafkapy_cluster.brokers[0].stop()
    z = zk(kafkapy_cluster)
    assert run(*z, "--create", "--topic", "t", "--replica-assignment", "0") == (0, "Created topic t.\n", "")
    assert run(*z, "--delete", "--topic", "t")[0] == 0
    assert run(*z, "--delete", "--topic", "t") == (0, "Topic t is already marked for deletion.\n", "")
    assert run(*z, "--list") == (0, "t - marked for deletion\n", "")
    code, out, _ = run(*z, "--describe", "--topic", "t")
    assert code == 0
    lines = out.splitlines()
    assert re.fullmatch(
        f"Topic: t\tTopicId: {TOPIC_ID}\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \tMarkedForDeletion: true",
        lines[0],
    ), lines[0]
    assert lines[1:] == [
        "\tTopic: t\tPartition: 0\tLeader: none\tReplicas: 0\tIsr: \tMarkedForDeletion: true"
    ]
    assert run(*z, "--describe", "--unavailable-partitions") == (0, lines[1] + "\n", "")


@pytest.mark.kafkapy_cluster(brokers=2)
def test_under_replicated_partitions_after_a_broker_stops(kafkapy_cluster: KafkapyCluster) -> None:
    b, z = boot(kafkapy_cluster), zk(kafkapy_cluster)
    assert run(*b, "--create", "--topic", "r2", "--replica-assignment", "0:1,1:0") == (
        0,
        "Created topic r2.\n",
        "",
    )
    wait_until(
        lambda: run(*b, "--describe", "--topic", "r2", "--under-replicated-partitions") == (0, "", ""),
        "both replicas in sync",
    )
    _, out, _ = run(*b, "--describe", "--topic", "r2")
    assert "\tReplicationFactor: 2\t" in out.splitlines()[0]

    # A clean stop is a controlled shutdown: broker 1 leaves every ISR and leads nothing.
    kafkapy_cluster.broker(1).stop()
    expected = (
        partition_line("r2", 0, "0", "0,1", "0") + "\n" + partition_line("r2", 1, "0", "1,0", "0") + "\n"
    )
    for mode in (b, z):
        wait_until(
            lambda m=mode: run(*m, "--describe", "--under-replicated-partitions") == (0, expected, ""),
            f"under-replicated partitions in {mode[0]} mode",
        )
        assert run(*mode, "--describe", "--unavailable-partitions") == (0, "", "")
