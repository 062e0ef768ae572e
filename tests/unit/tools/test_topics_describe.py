"""--describe lines and the report filters, as Kafka 2.8 prints and applies them."""

from __future__ import annotations

from kafkapy.tools.topic_command.describe import (
    DescribeOptions,
    PartitionDescription,
    TopicDescription,
    describe_lines,
)
from kafkapy.tools.topic_command.options import TopicCommandOptions

TOPIC = TopicDescription("t", "xb2sfmUUThif_6KZDJh0Wg", 3, 1, (("segment.bytes", "1000"),))


def options(*given: str, live: set[int] | None = None) -> DescribeOptions:
    return DescribeOptions.from_options(
        TopicCommandOptions(given=frozenset(given)), {0, 1, 2} if live is None else live
    )


def partition(
    p: int, leader: int | None, replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int | None = None
):
    return PartitionDescription("t", p, leader, replicas, isr, min_isr)


def test_topic_line_has_id_count_replication_and_configs() -> None:
    assert TOPIC.format() == (
        "Topic: t\tTopicId: xb2sfmUUThif_6KZDJh0Wg\tPartitionCount: 3\tReplicationFactor: 1\t"
        "Configs: segment.bytes=1000"
    )


def test_topic_line_without_id_or_configs_keeps_the_configs_label() -> None:
    line = TopicDescription("t", None, 1, 1, ()).format()
    assert line == "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "


def test_configs_are_comma_separated_and_marked_for_deletion_is_appended() -> None:
    line = TopicDescription("t", None, 1, 1, (("a", "1"), ("b", "x,y")), marked_for_deletion=True).format()
    assert line.endswith("\tConfigs: a=1,b=x,y\tMarkedForDeletion: true")


def test_partition_line() -> None:
    assert (
        partition(0, 1, (1, 2), (2, 1)).format()
        == "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 2,1"
    )


def test_partition_without_leader_prints_none() -> None:
    p = PartitionDescription("t", 4, None, (0,), (), marked_for_deletion=True)
    assert p.format() == "\tTopic: t\tPartition: 4\tLeader: none\tReplicas: 0\tIsr: \tMarkedForDeletion: true"


def test_plain_describe_prints_topic_then_partitions_in_order() -> None:
    lines = describe_lines(options(), TOPIC, [partition(1, 0, (0,), (0,)), partition(0, 0, (0,), (0,))])
    assert lines == [
        TOPIC.format(),
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: t\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
    ]


def test_under_replicated_shows_only_partitions_missing_isr_members() -> None:
    parts = [partition(0, 0, (0, 1), (0, 1)), partition(1, 0, (0, 1), (0,))]
    assert describe_lines(options("under-replicated-partitions"), TOPIC, parts) == [parts[1].format()]


def test_unavailable_means_no_leader_or_a_dead_leader() -> None:
    parts = [partition(0, 0, (0,), (0,)), partition(1, None, (1,), ()), partition(2, 5, (5,), (5,))]
    lines = describe_lines(options("unavailable-partitions", live={0, 1}), TOPIC, parts)
    assert lines == [parts[1].format(), parts[2].format()]


def test_min_isr_reports_compare_isr_size_with_min_insync_replicas() -> None:
    parts = [
        partition(0, 0, (0, 1, 2), (0, 1, 2), min_isr=2),
        partition(1, 0, (0, 1, 2), (0, 1), min_isr=2),
        partition(2, 0, (0, 1, 2), (0,), min_isr=2),
        partition(3, None, (0, 1, 2), (), min_isr=2),
    ]
    assert describe_lines(options("under-min-isr-partitions"), TOPIC, parts) == [
        parts[2].format(),
        parts[3].format(),
    ]
    assert describe_lines(options("at-min-isr-partitions"), TOPIC, parts) == [parts[1].format()]


def test_topics_with_overrides_prints_topic_lines_only_and_only_with_overrides() -> None:
    parts = [partition(0, 0, (0,), (0,))]
    assert describe_lines(options("topics-with-overrides"), TOPIC, parts) == [TOPIC.format()]
    plain = TopicDescription("u", None, 1, 1, ())
    assert describe_lines(options("topics-with-overrides"), plain, parts) == []
