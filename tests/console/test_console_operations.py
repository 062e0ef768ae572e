"""The console's operator actions (kafkapy/console/operations.py) against ZooKeeper and three
real brokers: each action's effect is read back from the cluster (Metadata, DescribeConfigs,
ListPartitionReassignments, ListOffsets, OffsetFetch), and each refusal carries Kafka's error
name and the broker's (or the tool's) message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, Producer
from console_helpers import known_everywhere

from kafkapy.client.admin import AdminClient
from kafkapy.client.configs import BROKER, TOPIC, describe_configs
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.operations import COMPLETED, IN_PROGRESS, OperationError, Operations
from kafkapy.protocol.constants import EARLIEST_TIMESTAMP
from kafkapy.testing import KafkapyCluster, free_port, kafkapy_cluster_context
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin

WAIT_S = 60.0
OVERRIDES = {"auto.leader.rebalance.enable": "false", "replica.fetch.backoff.ms": "200"}
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, WAIT_S))


def wait_until(condition: Callable[[], T], what: str, timeout: float = WAIT_S) -> T:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return result


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    with kafkapy_cluster_context(3, OVERRIDES, tmp_path_factory.mktemp("console-ops")) as c:
        yield c


@pytest.fixture(scope="module")
def ops(cluster: KafkapyCluster) -> Iterator[Operations]:
    made: list[GroupAdmin] = []

    def group_admin() -> GroupAdmin:  # the seam a TLS/SASL console uses
        made.append(GroupAdmin(cluster.bootstrap_servers, timeout_ms=20_000))
        return made[-1]

    operations = Operations(cluster.bootstrap_servers, timeout_ms=20_000, group_admin_factory=group_admin)
    yield operations
    run(operations.close())
    assert len(made) <= 1  # made once, when the first group operation needed it (none if no test did)


@pytest.fixture(scope="module")
def admin(cluster: KafkapyCluster) -> Iterator[AdminClient]:
    client = AdminClient(cluster.bootstrap_servers, timeout_ms=20_000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def groups(cluster: KafkapyCluster) -> Iterator[GroupAdmin]:
    client = GroupAdmin(cluster.bootstrap_servers, timeout_ms=20_000)
    yield client
    client.close()


def refusal(coro: Coroutine[Any, Any, object]) -> OperationError:
    with pytest.raises(OperationError) as e:
        run(coro)
    return e.value


def produce(cluster: KafkapyCluster, topic: str, partition: int, count: int, timestamp_ms: int = 0) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(
            topic,
            f"v{i}".encode(),
            partition=partition,
            timestamp=timestamp_ms + i * 1000 if timestamp_ms else 0,
        )
    assert producer.flush(WAIT_S) == 0


def create(
    ops: Operations,
    cluster: KafkapyCluster,
    topic: str,
    partitions: int | None = None,
    replication_factor: int | None = None,
    assignment: dict[int, list[int]] | None = None,
    configs: dict[str, str] | None = None,
) -> None:
    run(ops.create_topic(topic, partitions, replication_factor, assignment, configs))
    wait_until(lambda: known_everywhere(cluster, topic), f"every broker to know {topic}")


def replicas(admin: AdminClient, topic: str) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.replicas for p in admin.describe_topics([topic])[topic].partitions}


def leaders(admin: AdminClient, topic: str) -> dict[int, int | None]:
    return {p.partition: p.leader for p in admin.describe_topics([topic])[topic].partitions}


def dynamic_configs(admin: AdminClient, topic: str) -> dict[str, str | None]:
    return {
        c.name: c.value for c in describe_configs(admin, TOPIC, topic) if c.source == "DYNAMIC_TOPIC_CONFIG"
    }


def broker_throttles(admin: AdminClient) -> dict[int, dict[str, str | None]]:
    return {
        b: {c.name: c.value for c in describe_configs(admin, BROKER, str(b))
            if c.source == "DYNAMIC_BROKER_CONFIG" and "throttled" in c.name}
        for b in (0, 1, 2)
    }  # fmt: skip


# -- topics -------------------------------------------------------------------------------------


def test_create_topic_with_counts_configs_or_an_assignment(
    ops: Operations, admin: AdminClient, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "counted", partitions=3, replication_factor=2, configs={"retention.ms": "3600000"})
    placed = replicas(admin, "counted")
    assert sorted(placed) == [0, 1, 2] and all(len(r) == 2 for r in placed.values())
    assert dynamic_configs(admin, "counted") == {"retention.ms": "3600000"}

    create(ops, cluster, "assigned", assignment={0: [2, 0], 1: [0, 1]})
    assert replicas(admin, "assigned") == {0: (2, 0), 1: (0, 1)}


def test_create_topic_refusals_carry_kafka_s_error_names(ops: Operations, cluster: KafkapyCluster) -> None:
    create(ops, cluster, "taken", partitions=1, replication_factor=1)
    e = refusal(ops.create_topic("taken", partitions=1, replication_factor=1))
    assert (e.error_name, e.message) == ("TOPIC_ALREADY_EXISTS", "Topic 'taken' already exists.")
    e = refusal(ops.create_topic("bad/name", partitions=1, replication_factor=1))
    assert e.error_name == "INVALID_TOPIC_EXCEPTION" and "bad/name" in e.message
    e = refusal(ops.create_topic("too-many-replicas", partitions=1, replication_factor=4))
    assert e.error_name == "INVALID_REPLICATION_FACTOR"
    assert e.message == "Replication factor: 4 larger than available brokers: 3."
    # kafka-topics' own checks, before anything is sent.
    e = refusal(ops.create_topic("no-partitions", partitions=0, replication_factor=1))
    assert (e.error_name, e.message) == ("INVALID_PARTITIONS", "The partitions must be greater than 0")
    e = refusal(ops.create_topic("bad-config", partitions=1, configs={"retention.ms": "soon"}))
    assert e.error_name == "INVALID_CONFIG" and "retention.ms" in e.message
    e = refusal(ops.create_topic("dup", assignment={0: [1, 1]}))
    assert (e.error_name, e.message) == (
        "INVALID_REPLICA_ASSIGNMENT",
        "Partition replica lists may not contain duplicate entries: 1",
    )
    # The broker's refusal of counts and an assignment together.
    e = refusal(ops.create_topic("mixed", partitions=2, assignment={0: [1]}))
    assert e.error_name == "INVALID_REQUEST" and "Both cannot be used at the same time" in e.message


def test_add_partitions_up_to_a_total(ops: Operations, admin: AdminClient, cluster: KafkapyCluster) -> None:
    create(ops, cluster, "growing", partitions=1, replication_factor=2)
    run(ops.add_partitions("growing", 3))
    assert sorted(replicas(admin, "growing")) == [0, 1, 2]
    run(ops.add_partitions("growing", 4, [[2, 1]]))
    assert replicas(admin, "growing")[3] == (2, 1)
    e = refusal(ops.add_partitions("growing", 2))
    assert e.error_name == "INVALID_PARTITIONS"
    assert e.message == (
        "The number of partitions for a topic can only be increased. "
        "Topic growing currently has 4 partitions, 2 would not be an increase."
    )
    e = refusal(ops.add_partitions("nowhere", 2))
    assert e.error_name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_alter_topic_configs_sets_and_deletes_keys(
    ops: Operations, admin: AdminClient, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "tuned", partitions=1, replication_factor=1, configs={"retention.ms": "60000"})
    run(ops.alter_topic_configs("tuned", {"cleanup.policy": "compact", "segment.ms": "100000"}))
    assert dynamic_configs(admin, "tuned") == {
        "retention.ms": "60000",
        "cleanup.policy": "compact",
        "segment.ms": "100000",
    }
    run(ops.alter_topic_configs("tuned", {"segment.ms": "200000"}, delete=["retention.ms"]))
    assert dynamic_configs(admin, "tuned") == {"cleanup.policy": "compact", "segment.ms": "200000"}
    # kafka-configs refuses to delete what is not set; the broker refuses unknown keys and values.
    e = refusal(ops.alter_topic_configs("tuned", delete=["flush.ms"]))
    assert (e.error_name, e.message) == ("INVALID_CONFIG", "Invalid config(s): flush.ms")
    e = refusal(ops.alter_topic_configs("tuned", {"segment.ms": "often"}))
    assert e.error_name == "INVALID_CONFIG" and "segment.ms" in e.message
    e = refusal(ops.alter_topic_configs("missing-topic", {"segment.ms": "1000"}))
    assert e.error_name == "UNKNOWN_TOPIC_OR_PARTITION"


# -- reassignment and leaders ---------------------------------------------------------------------


def test_reassignment_runs_to_completion_and_reports_each_partition(
    ops: Operations, admin: AdminClient, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "moving", assignment={0: [0, 1], 1: [1, 2]})
    for p in (0, 1):
        produce(cluster, "moving", p, 50)
    plan = {"moving": {0: [2, 0], 1: [0, 2]}}
    started = run(ops.start_reassignment(plan, throttle=50_000_000))
    # --throttle's configs: the rates on the brokers moving replicas, the replicas on the topic.
    assert broker_throttles(admin) == {b: {"leader.replication.throttled.rate": "50000000",
                                           "follower.replication.throttled.rate": "50000000"} for b in (0, 1, 2)}  # fmt: skip
    assert set(dynamic_configs(admin, "moving")) == {
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
    assert started.partitions == (TopicPartition("moving", 0), TopicPartition("moving", 1))
    assert started.rollback_json == (
        '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[0,1],"log_dirs":["any","any"]},'
        '{"topic":"moving","partition":1,"replicas":[1,2],"log_dirs":["any","any"]}]}'
    )

    async def watch() -> list[list[str]]:
        return [[p.status for p in report] async for report in ops.watch_reassignment(plan, 0.2, True)]

    reports = run(watch())
    assert reports[-1] == [COMPLETED, COMPLETED]
    assert all(status in (IN_PROGRESS, COMPLETED) for report in reports for status in report)
    assert replicas(admin, "moving") == {0: (2, 0), 1: (0, 2)}
    assert run(ops.ongoing_reassignments()) == []
    assert broker_throttles(admin) == {0: {}, 1: {}, 2: {}}  # cleared once complete
    assert dynamic_configs(admin, "moving") == {}
    final = run(ops.verify_reassignment(plan))
    assert [p.message for p in final] == [
        "Reassignment of partition moving-0 is complete.",
        "Reassignment of partition moving-1 is complete.",
    ]
    # The tool's JSON is accepted too; a plan that does not match shows as such.
    back = '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[0,1]}]}'
    assert [p.status for p in run(ops.verify_reassignment(back))] == ["not as planned"]
    run(ops.start_reassignment(back))
    wait_until(lambda: replicas(admin, "moving")[0] == (0, 1), "the move back")


def test_ongoing_reassignments_list_adding_and_removing_replicas(
    ops: Operations, admin: AdminClient, cluster: KafkapyCluster
) -> None:
    """A target broker that is stopped (SIGSTOP) keeps the reassignment in flight."""
    controller = admin.metadata([], "test").controller_id
    first, stuck = (b for b in (0, 1, 2) if b != controller)  # the stuck one is never asked first
    create(ops, cluster, "held", assignment={0: [first, controller]})
    target = {"held": {0: [first, stuck]}}
    cluster.broker(stuck).pause()
    try:
        run(ops.start_reassignment(target))
        ongoing = run(ops.ongoing_reassignments())
        assert [(o.topic, o.partition, o.replicas, o.adding, o.removing) for o in ongoing] == [
            ("held", 0, (first, stuck, controller), (stuck,), (controller,))
        ]
        assert [p.status for p in run(ops.verify_reassignment(target))] == [IN_PROGRESS]
        e = refusal(ops.start_reassignment({"held": {0: [first, controller]}}))
        assert e.error_name == "REASSIGNMENT_IN_PROGRESS"
        assert e.message.startswith("Cannot execute because there is an existing partition assignment.")
        cancelled = run(ops.cancel_reassignments([TopicPartition("held", 0)]))
        assert cancelled == {TopicPartition("held", 0): None}
    finally:
        cluster.broker(stuck).resume()
    assert run(ops.ongoing_reassignments()) == []
    assert replicas(admin, "held") == {0: (first, controller)}


def test_reassignment_plans_are_checked_as_the_tool_checks_them(
    ops: Operations, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "planned", assignment={0: [0, 1]})
    e = refusal(ops.start_reassignment({"planned": {0: [0, 9]}}))
    assert (e.error_name, e.message) == ("INVALID_REPLICA_ASSIGNMENT", "Unknown broker id 9")
    e = refusal(ops.start_reassignment({"planned": {5: [0, 1]}}))
    assert e.error_name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert e.message == "The proposed assignment contains non-existent partitions: List(planned-5)"
    e = refusal(ops.start_reassignment({"planned": {0: [1, 1]}}))
    assert e.error_name == "INVALID_REPLICA_ASSIGNMENT"
    assert (
        e.message
        == "Partition replica lists may not contain duplicate entries: planned-0 contains multiple entries for 1"
    )
    e = refusal(ops.start_reassignment('{"version":1,"partitions":[{"topic":"planned","partition":0}]}'))
    assert (e.error_name, e.message) == ("INVALID_REQUEST", "No such field exists: `replicas`")
    e = refusal(ops.start_reassignment("{not json"))
    assert e.error_name == "INVALID_REQUEST"


def test_preferred_leader_election_moves_leadership_to_the_first_replica(
    ops: Operations, admin: AdminClient, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "elected", assignment={0: [0, 1], 1: [1, 2]})
    # Reordering the replicas changes the preferred replica but not the leader.
    run(ops.start_reassignment({"elected": {0: [1, 0], 1: [2, 1]}}))
    wait_until(lambda: replicas(admin, "elected") == {0: (1, 0), 1: (2, 1)}, "the reordering")
    assert leaders(admin, "elected") == {0: 0, 1: 1}

    results = run(ops.elect_preferred_leaders([TopicPartition("elected", 0)]))
    assert results == {TopicPartition("elected", 0): None}
    # ElectLeaders answers once the controller has decided, as Kafka's does; the brokers'
    # metadata follows with the controller's UpdateMetadata.
    wait_until(lambda: leaders(admin, "elected") == {0: 1, 1: 1}, "partition 0's new leader")
    results = run(ops.elect_preferred_leaders())  # every partition
    assert results[TopicPartition("elected", 1)] is None
    wait_until(lambda: leaders(admin, "elected") == {0: 1, 1: 2}, "partition 1's new leader")
    again = run(ops.elect_preferred_leaders([TopicPartition("elected", 0), TopicPartition("absent", 0)]))
    assert again[TopicPartition("elected", 0)] is not None
    assert again[TopicPartition("elected", 0)].error_name == "ELECTION_NOT_NEEDED"  # type: ignore[union-attr]
    assert again[TopicPartition("absent", 0)].error_name == "UNKNOWN_TOPIC_OR_PARTITION"  # type: ignore[union-attr]


def test_delete_records_moves_the_low_watermark(
    ops: Operations, groups: GroupAdmin, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "trimmed", partitions=2, replication_factor=2)
    create(
        ops, cluster, "compacted", partitions=1, replication_factor=1, configs={"cleanup.policy": "compact"}
    )
    produce(cluster, "trimmed", 0, 10)
    produce(cluster, "trimmed", 1, 6)
    t0, t1 = TopicPartition("trimmed", 0), TopicPartition("trimmed", 1)
    assert run(ops.delete_records({t0: 4, t1: -1})) == {t0: 4, t1: 6}
    assert groups.list_offsets([("trimmed", 0), ("trimmed", 1)], EARLIEST_TIMESTAMP) == {
        ("trimmed", 0): 4,
        ("trimmed", 1): 6,
    }
    beyond, compacted = TopicPartition("trimmed", 0), TopicPartition("compacted", 0)
    results = run(ops.delete_records({beyond: 99, compacted: -1, TopicPartition("nowhere", 0): 1}))
    assert results[beyond] == OperationError(
        "OFFSET_OUT_OF_RANGE",
        "The requested offset is not within the range of offsets maintained by the server.",
    )
    assert results[compacted] == OperationError(
        "POLICY_VIOLATION", "Request parameters do not satisfy the configured policy."
    )
    assert isinstance(results[TopicPartition("nowhere", 0)], OperationError)
    assert results[TopicPartition("nowhere", 0)].error_name == "UNKNOWN_TOPIC_OR_PARTITION"  # type: ignore[union-attr]


# -- consumer groups ------------------------------------------------------------------------------


def test_reset_offsets_previews_and_executes_each_strategy(
    ops: Operations, groups: GroupAdmin, cluster: KafkapyCluster
) -> None:
    # Timestamps in 2023 are past the default retention: the topic keeps them for good, or the
    # broker's retention check could delete them mid-test.
    create(ops, cluster, "ledger", partitions=2, replication_factor=2, configs={"retention.ms": "-1"})
    base_ms = 1_700_000_000_000
    produce(cluster, "ledger", 0, 10, base_ms)
    produce(cluster, "ledger", 1, 10, base_ms)
    groups.commit_offsets("auditors", {("ledger", 0): 7, ("ledger", 1): 8})
    p0, p1 = TopicPartition("ledger", 0), TopicPartition("ledger", 1)

    preview = run(ops.reset_offsets("auditors", {"ledger": None}, "to-earliest"))
    assert preview == {p0: 0, p1: 0}
    assert groups.committed_offsets("auditors") == {("ledger", 0): 7, ("ledger", 1): 8}  # a dry run

    assert run(ops.reset_offsets("auditors", None, "shift-by", -3, execute=True)) == {p0: 4, p1: 5}
    assert groups.committed_offsets("auditors") == {("ledger", 0): 4, ("ledger", 1): 5}
    assert run(ops.reset_offsets("auditors", {"ledger": [1]}, "to-offset", 99, execute=True)) == {p1: 10}
    at = datetime.fromtimestamp((base_ms + 6000) / 1000, tz=UTC)
    assert run(ops.reset_offsets("auditors", {"ledger": [0, 1]}, "to-datetime", at, execute=True)) == {
        p0: 6,
        p1: 6,
    }
    text = "2023-11-14T22:13:23.000Z"  # base_ms + 3 s, in the tool's format
    assert run(ops.reset_offsets("auditors", {"ledger": [0]}, "to-datetime", text)) == {p0: 3}
    assert run(ops.reset_offsets("auditors", None, "to-latest", execute=True)) == {p0: 10, p1: 10}
    assert groups.committed_offsets("auditors") == {("ledger", 0): 10, ("ledger", 1): 10}

    e = refusal(ops.reset_offsets("auditors", None, "shift-by"))
    assert (e.error_name, e.message) == ("INVALID_REQUEST", "Option shift-by requires an argument")
    e = refusal(ops.reset_offsets("auditors", {"no-such-topic": None}, "to-earliest"))
    assert e.error_name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_reset_offsets_of_an_active_group_is_refused_with_the_tool_s_message(
    ops: Operations, groups: GroupAdmin, cluster: KafkapyCluster
) -> None:
    create(ops, cluster, "busy", partitions=1, replication_factor=1)
    produce(cluster, "busy", 0, 3)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "readers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe(["busy"])
    try:
        wait_until(lambda: consumer.poll(0.5) is not None and consumer.assignment(), "an assignment")
        wait_until(lambda: groups.describe_group("readers").state == "Stable", "a stable group")
        e = refusal(ops.reset_offsets("readers", {"busy": None}, "to-earliest", execute=True))
        assert (e.error_name, e.message) == (
            "NON_EMPTY_GROUP",
            "Assignments can only be reset if the group 'readers' is inactive, but the current state is Stable.",
        )
    finally:
        consumer.close()
    wait_until(lambda: groups.describe_group("readers").state == "Empty", "the group to empty")
    assert run(ops.reset_offsets("readers", {"busy": None}, "to-latest", execute=True)) == {
        TopicPartition("busy", 0): 3
    }


@pytest.mark.timeout(60)
def test_an_unreachable_cluster_is_a_timeout_not_a_hang() -> None:
    operations = Operations(f"127.0.0.1:{free_port()}", timeout_ms=1000)
    try:
        e = refusal(operations.create_topic("anywhere", partitions=1))
        assert (e.error_name, e.message) == (
            "REQUEST_TIMED_OUT",
            "Timed out waiting for a node assignment. Call: createTopics",
        )
    finally:
        run(operations.close())
