"""kafkapy-consumer-groups against a real broker: lag of a group that consumed part of a topic,
offset resets each way, offset deletion and group deletion, as Kafka 2.8's tool prints them.

The group commits with a kafka-python consumer that uses assign() (generation -1, no members),
and one test keeps a live subscribed member to see the member columns and the refusal to reset
an active group.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PARTITIONS = 3
PER_PARTITION = 10


def run_tool(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.consumer_groups", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def table(stdout: str) -> list[list[str]]:
    """The rows of the last table printed (header included), split on whitespace."""
    lines = [line.split() for line in stdout.strip().splitlines() if line.strip()]
    return lines


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from kafkapy.testing import kafkapy_cluster_context

    with kafkapy_cluster_context(
        1, {"group.min.session.timeout.ms": "1000"}, tmp_path_factory.mktemp("cg")
    ) as c:
        yield c.bootstrap_servers


@pytest.fixture
def topic(bootstrap: str) -> str:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"cg-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    # The records' timestamps (2020) are past the default retention: kept for good, or the
    # module's broker could delete them at a retention check mid-module.
    admin.create_topics([NewTopic(name, PARTITIONS, 1, topic_configs={"retention.ms": "-1"})])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for p in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.send(name, f"{p}-{i}".encode(), partition=p, timestamp_ms=1_600_000_000_000 + i * 1000)
    producer.flush()
    producer.close()
    return name


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit like a consumer that uses assign(): generation -1, no group membership."""
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    c.assign([TopicPartition(topic, p) for p in offsets])
    c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    c.close(autocommit=False)


def offsets_of(stdout: str, topic: str) -> dict[int, tuple[str, str, str]]:
    """{partition: (current offset, log end offset, lag)} from --describe output."""
    out = {}
    for row in table(stdout):
        if len(row) >= 6 and row[1] == topic:
            out[int(row[2])] = (row[3], row[4], row[5])
    return out


def test_describe_shows_lag_of_a_group_that_consumed_part_of_a_topic(bootstrap: str, topic: str) -> None:
    group = f"lag-{topic}"
    commit(bootstrap, group, topic, {0: 4, 1: 10})
    r = run_tool(bootstrap, "--describe", "--group", group)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG"
    )
    assert table(r.stdout)[0] == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    assert offsets_of(r.stdout, topic) == {0: ("4", "10", "6"), 1: ("10", "10", "0")}
    assert all(row[6:] == ["-", "-", "-"] for row in table(r.stdout)[1:])
    assert f"Consumer group '{group}' has no active members." in r.stderr

    listed = run_tool(bootstrap, "--list")
    assert group in listed.stdout.split()
    states = run_tool(bootstrap, "--list", "--state", "empty")
    assert [group, "Empty"] in table(states.stdout)
    state = run_tool(bootstrap, "--describe", "--group", group, "--state")
    rows = table(state.stdout)
    assert rows[0] == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert rows[1][0] == group and rows[1][-2:] == ["Empty", "0"]

    missing = run_tool(bootstrap, "--describe", "--group", f"nobody-{topic}")
    assert missing.stdout == f"\nError: Consumer group 'nobody-{topic}' does not exist.\n"


def test_reset_offsets_each_way(bootstrap: str, topic: str, tmp_path: Path) -> None:
    group = f"reset-{topic}"
    commit(bootstrap, group, topic, {0: 5, 1: 5, 2: 5})

    def reset(*args: str) -> dict[int, int]:
        r = run_tool(bootstrap, "--reset-offsets", "--group", group, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        rows = table(r.stdout)
        assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
        return {int(row[2]): int(row[3]) for row in rows[1:]}

    def current() -> dict[int, int]:
        return {
            p: int(v[0])
            for p, v in offsets_of(run_tool(bootstrap, "--describe", "--group", group).stdout, topic).items()
        }

    # Dry run (the default) plans but changes nothing, and warns about it.
    dry = run_tool(bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest")
    assert "WARN: No action will be performed as the --execute option is missing." in dry.stderr
    assert current() == {0: 5, 1: 5, 2: 5}

    assert reset("--all-topics", "--to-earliest", "--execute") == {0: 0, 1: 0, 2: 0}
    assert current() == {0: 0, 1: 0, 2: 0}
    assert reset("--topic", topic, "--to-latest", "--execute") == {0: 10, 1: 10, 2: 10}
    assert reset("--topic", f"{topic}:0,1", "--shift-by", "-3", "--execute") == {0: 7, 1: 7}
    assert reset("--topic", f"{topic}:2", "--to-offset", "99", "--execute") == {2: 10}  # clamped to the end
    assert reset("--all-topics", "--to-current", "--execute") == {0: 7, 1: 7, 2: 10}
    assert reset("--all-topics", "--to-datetime", "2020-09-13T12:26:43.000Z", "--execute") == {
        0: 3,
        1: 3,
        2: 3,
    }
    assert reset("--all-topics", "--by-duration", "P1D", "--execute") == {0: 10, 1: 10, 2: 10}
    assert current() == {0: 10, 1: 10, 2: 10}

    exported = run_tool(
        bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-offset", "2", "--export"
    )
    assert exported.stdout == f"{topic},0,2\n{topic},1,2\n{topic},2,2\n\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout)
    assert reset("--from-file", str(plan), "--execute") == {0: 2, 1: 2, 2: 2}
    assert current() == {0: 2, 1: 2, 2: 2}


def test_reset_is_refused_while_the_group_has_members(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer

    group = f"active-{topic}"
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, client_id="live-member", auto_offset_reset="earliest",
        session_timeout_ms=10000, heartbeat_interval_ms=1000,  # alive through the tools' start-ups
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(200)
        consumer.commit()
        r = run_tool(
            bootstrap, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute"
        )
        assert (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable."
            in r.stdout
        )
        members = run_tool(bootstrap, "--describe", "--group", group, "--members", "--verbose")
        rows = table(members.stdout)
        assert rows[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert rows[1][0] == group and rows[1][1].startswith("live-member-")
        assert rows[1][2:] == ["/127.0.0.1", "live-member", "3", f"{topic}(0,1,2)"]
        described = table(run_tool(bootstrap, "--describe", "--group", group).stdout)
        assert {row[6] for row in described[1:]} == {rows[1][1]}
        deleted = run_tool(bootstrap, "--delete", "--group", group)
        assert "GroupNotEmptyException: The group is not empty." in deleted.stdout
    finally:
        consumer.close()


def test_delete_offsets_and_delete_group(bootstrap: str, topic: str) -> None:
    group = f"delete-{topic}"
    commit(bootstrap, group, topic, {0: 1, 1: 2, 2: 3})
    r = run_tool(bootstrap, "--delete-offsets", "--group", group, "--topic", f"{topic}:2")
    assert r.stdout.startswith(f"Request succeed for deleting offsets with topic {topic}:2 group {group}\n")
    assert table(r.stdout)[-1] == [topic, "2", "Successful"]
    assert set(offsets_of(run_tool(bootstrap, "--describe", "--group", group).stdout, topic)) == {0, 1}

    r = run_tool(bootstrap, "--delete", "--group", group)
    assert r.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    assert group not in run_tool(bootstrap, "--list").stdout.split()
    again = run_tool(bootstrap, "--delete", "--group", group)
    assert "* Group '" + group + "' could not be deleted due to: " in again.stdout
    assert "GroupIdNotFoundException" in again.stdout


def test_option_checks_and_zookeeper_mode(bootstrap: str) -> None:
    none = run_tool(bootstrap, "--group", "g")
    assert none.returncode == 1
    assert "Command must include exactly one action" in none.stderr
    zk = run_tool(bootstrap, "--list", "--zookeeper", "127.0.0.1:2181")
    # --zookeeper (legacy groups) and --bootstrap-server exclude each other.
    assert (
        zk.returncode == 1 and "Option [bootstrap-server] can't be used with option [zookeeper]" in zk.stderr
    )
    scope = run_tool(bootstrap, "--reset-offsets", "--group", "g", "--to-earliest")
    assert "One of the reset scopes should be defined: --all-topics, --topic." in scope.stderr
