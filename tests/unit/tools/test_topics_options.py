"""kafkapy-topics option rules and value parsing, pinned to Kafka 2.8's TopicCommand messages."""

from __future__ import annotations

import pytest

from kafkapy.tools.topic_command.options import (
    ONE_ACTION_MESSAGE,
    ONE_MODE_MESSAGE,
    CommandTopicPartition,
    TopicCommandError,
    TopicCommandOptions,
    UsageError,
    check_args,
    config_warnings,
    ensure_topic_exists,
    parse_configs_to_add,
    parse_configs_to_delete,
    parse_replica_assignment,
    select_topics,
)

ZK = ("zookeeper",)
BOOT = ("bootstrap-server",)


def opts(*given: str, **values: object) -> TopicCommandOptions:
    return TopicCommandOptions(given=frozenset(given), **values)  # type: ignore[arg-type]


def usage_error(o: TopicCommandOptions) -> str:
    with pytest.raises(UsageError) as e:
        check_args(o)
    return str(e.value)


# -- check_args ---------------------------------------------------------------------------------


@pytest.mark.parametrize("actions", [(), ("list", "describe"), ("create", "delete", "alter")])
def test_exactly_one_action_is_required(actions: tuple[str, ...]) -> None:
    assert usage_error(opts(*actions, *BOOT, "topic")) == ONE_ACTION_MESSAGE


@pytest.mark.parametrize("modes", [(), ("bootstrap-server", "zookeeper")])
def test_exactly_one_of_bootstrap_server_and_zookeeper(modes: tuple[str, ...]) -> None:
    assert usage_error(opts("list", *modes)) == ONE_MODE_MESSAGE


@pytest.mark.parametrize("action", ["create", "alter", "delete"])
def test_topic_is_required_except_for_list_and_describe(action: str) -> None:
    assert usage_error(opts(action, *ZK, "partitions")) == 'Missing required argument "[topic]"'
    check_args(opts("list", *ZK))
    check_args(opts("describe", *ZK))


def test_describe_if_exists_requires_topic() -> None:
    assert usage_error(opts("describe", "if-exists", *BOOT)) == 'Missing required argument "[topic]"'


def test_zookeeper_create_requires_partitions_then_replication_factor() -> None:
    assert usage_error(opts("create", "topic", *ZK)) == 'Missing required argument "[partitions]"'
    assert (
        usage_error(opts("create", "topic", "partitions", *ZK))
        == 'Missing required argument "[replication-factor]"'
    )
    check_args(opts("create", "topic", "replica-assignment", *ZK))


def test_bootstrap_create_takes_broker_defaults() -> None:
    check_args(opts("create", "topic", *BOOT))


def test_bootstrap_alter_needs_partitions_and_refuses_config() -> None:
    assert usage_error(opts("alter", "topic", *BOOT)) == 'Missing required argument "[partitions]"'
    message = usage_error(opts("alter", "topic", "partitions", "config", *BOOT))
    assert message == (
        'Option combination "[bootstrap-server],[config]" can\'t be used with option "[alter]"'
        " (the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (("list", *ZK, "config"), 'Option "[config]" can\'t be used with option "[list]"'),
        (("alter", *BOOT, "topic", "partitions", "delete-config"),
         'Option "[delete-config]" can\'t be used with option "[bootstrap-server]"'),
        (("describe", *ZK, "partitions"), 'Option "[partitions]" can\'t be used with option "[describe]"'),
        (("alter", *ZK, "topic", "replication-factor"),
         'Option "[replication-factor]" can\'t be used with option "[alter]"'),
        (("create", *ZK, "topic", "replica-assignment", "partitions"),
         'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
        (("describe", *ZK, "under-min-isr-partitions"),
         'Option "[under-min-isr-partitions]" can\'t be used with option "[zookeeper]"'),
        (("describe", *BOOT, "under-replicated-partitions", "unavailable-partitions"),
         'Option "[under-replicated-partitions]" can\'t be used with option "[unavailable-partitions]"'),
        (("describe", *BOOT, "topics-with-overrides", "at-min-isr-partitions"),
         'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"'),
        (("create", *BOOT, "topic", "if-exists"), 'Option "[if-exists]" can\'t be used with option "[create]"'),
        (("delete", *BOOT, "topic", "if-not-exists"),
         'Option "[if-not-exists]" can\'t be used with option "[delete]"'),
        (("delete", *BOOT, "topic", "exclude-internal"),
         'Option "[exclude-internal]" can\'t be used with option "[delete]"'),
    ],
)  # fmt: skip
def test_invalid_combinations_name_both_options(given: tuple[str, ...], message: str) -> None:
    assert usage_error(opts(*given)) == message


@pytest.mark.parametrize(
    "given",
    [
        ("describe", *BOOT, "under-min-isr-partitions", "exclude-internal"),
        ("describe", *ZK, "topics-with-overrides", "topic", "if-exists"),
        ("alter", *ZK, "topic", "config", "delete-config", "partitions", "replica-assignment"),
        ("create", *BOOT, "topic", "partitions", "replication-factor", "config", "if-not-exists"),
        ("delete", *ZK, "topic", "if-exists"),
        ("list", *BOOT, "exclude-internal", "topic"),
    ],
)
def test_valid_combinations_pass(given: tuple[str, ...]) -> None:
    check_args(opts(*given))


# -- values -------------------------------------------------------------------------------------


def test_replica_assignment_is_one_broker_list_per_partition() -> None:
    assert parse_replica_assignment("0:1,1:2, 2 : 0 ") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    assert parse_replica_assignment("3") == {0: [3]}
    assert parse_replica_assignment("1:,2:") == {0: [1], 1: [2]}  # Java's split drops the trailing ""


def test_replica_assignment_rejects_duplicates_and_uneven_replication() -> None:
    with pytest.raises(
        TopicCommandError, match="^Partition replica lists may not contain duplicate entries: 1$"
    ):
        parse_replica_assignment("1:1")
    with pytest.raises(TopicCommandError, match="^Partition 1 has different replication factor: 2$"):
        parse_replica_assignment("0:1,2")


@pytest.mark.parametrize("bad", ["x", "1_0", "0:1,,1:0", "1::2"])
def test_replica_assignment_broker_ids_are_java_integers(bad: str) -> None:
    with pytest.raises(TopicCommandError, match="^For input string: "):
        parse_replica_assignment(bad)


def test_configs_split_on_equals_with_spaces_trimmed() -> None:
    assert parse_configs_to_add(["segment.bytes = 1000", "cleanup.policy=compact"]) == {
        "segment.bytes": "1000",
        "cleanup.policy": "compact",
    }


@pytest.mark.parametrize("bad", ["segment.bytes", "segment.bytes=", "a=b=c"])
def test_configs_must_be_key_equals_value(bad: str) -> None:
    with pytest.raises(TopicCommandError) as e:
        parse_configs_to_add([bad])
    assert str(e.value) == (
        'requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'
    )


def test_configs_are_validated_like_log_config() -> None:
    with pytest.raises(TopicCommandError, match="^Unknown topic config name: no.such.config$"):
        parse_configs_to_add(["no.such.config=1"])
    with pytest.raises(TopicCommandError, match="Invalid value abc for configuration segment.bytes"):
        parse_configs_to_add(["segment.bytes=abc"])


def test_message_format_version_warns() -> None:
    assert config_warnings({"message.format.version": "0.10.0"}) == [
        "WARNING: The configuration message.format.version=0.10.0 is specified. This configuration will be "
        "ignored if the version is newer than the inter.broker.protocol.version specified in the broker."
    ]
    assert config_warnings({"segment.bytes": "1000"}) == []


def test_configs_to_delete_must_be_topic_config_names() -> None:
    assert parse_configs_to_delete([" retention.ms "]) == ["retention.ms"]
    with pytest.raises(TopicCommandError, match="^Unknown topic config name: bogus$"):
        parse_configs_to_delete(["bogus"])


def test_command_topic_partition_parses_inside_the_action() -> None:
    tp = CommandTopicPartition.from_options(
        opts("create", topic="t", replica_assignment="0,0", configs=("retention.ms=5",), partitions=None)
    )
    assert tp.replica_assignment == {0: [0], 1: [0]}
    assert tp.configs_to_add == {"retention.ms": "5"}
    assert tp.partitions is None


# -- topic selection ----------------------------------------------------------------------------

TOPICS = ["b", "a.1", "a_1", "abc", "__consumer_offsets", "test.topic", "testXtopic"]


def test_topic_is_a_whole_name_regex() -> None:
    assert select_topics(TOPICS, "a.*", False) == ["a.1", "a_1", "abc"]
    assert select_topics(TOPICS, "ab", False) == []
    assert select_topics(TOPICS, "test\\.topic", False) == ["test.topic"]
    assert select_topics(TOPICS, "test.topic", False) == ["test.topic", "testXtopic"]


def test_topic_list_commas_and_quotes_as_kafka_include_list() -> None:
    assert select_topics(TOPICS, "b, abc", False) == ["abc", "b"]
    assert select_topics(TOPICS, "'b'", False) == ["b"]


def test_internal_topics_are_kept_unless_excluded() -> None:
    assert "__consumer_offsets" in select_topics(TOPICS, None, False)
    assert "__consumer_offsets" not in select_topics(TOPICS, None, True)
    assert select_topics(TOPICS, "__.*", True) == []
    assert select_topics(TOPICS, None, False) == sorted(TOPICS)


def test_invalid_regex_is_an_error() -> None:
    with pytest.raises(TopicCommandError, match=r"^\[ is an invalid regex\.$"):
        select_topics(TOPICS, "[", False)


def test_missing_topic_error_unless_if_exists() -> None:
    with pytest.raises(TopicCommandError, match="^Topic 'x' does not exist as expected$"):
        ensure_topic_exists([], "x", True)
    ensure_topic_exists([], "x", False)
    ensure_topic_exists([], None, True)
    ensure_topic_exists(["x"], "x", True)
