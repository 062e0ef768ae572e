from __future__ import annotations

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.log_config import BROKER_TO_TOPIC_CONFIG, TOPIC_CONFIG_DEF, ConfigException, LogConfig


def test_defaults_are_kafkas() -> None:
    c = LogConfig.from_props({})
    assert (c.segment_bytes, c.segment_ms, c.segment_index_bytes, c.index_interval_bytes) == (
        1073741824, 604800000, 10485760, 4096,
    )  # fmt: skip
    assert (c.retention_ms, c.retention_bytes, c.max_message_bytes) == (604800000, -1, 1048588)
    assert (c.message_timestamp_type, c.cleanup_policy, c.flush_messages) == (
        "CreateTime",
        ("delete",),
        2**63 - 1,
    )
    assert (c.min_insync_replicas, c.file_delete_delay_ms, c.compression_type) == (1, 60000, "producer")
    assert c == LogConfig()


def test_topic_overrides_apply_over_broker_defaults() -> None:
    defaults = LogConfig(retention_ms=1000, segment_bytes=2000)
    c = LogConfig.from_props({"segment.bytes": "5000", "cleanup.policy": "compact,delete"}, defaults)
    assert (c.segment_bytes, c.retention_ms, c.cleanup_policy) == (5000, 1000, ("compact", "delete"))
    assert c.overrides(defaults) == {"segment.bytes": 5000, "cleanup.policy": ["compact", "delete"]}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"segment.bytes": "abc"},
            "Invalid value abc for configuration segment.bytes: Not a number of type INT",
        ),
        ({"segment.bytes": "3"}, "segment.bytes: Value must be at least 14"),
        ({"retention.ms": "-2"}, "retention.ms: Value must be at least -1"),
        ({"cleanup.policy": "shred"}, "cleanup.policy: String must be one of: compact, delete"),
        ({"message.timestamp.type": "Now"}, "String must be one of: CreateTime, LogAppendTime"),
        ({"min.cleanable.dirty.ratio": "2"}, "Value must be no more than 1"),
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ],
)
def test_invalid_values_name_key_value_and_what_is_allowed(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException, match=message.replace(".", r"\.")):
        LogConfig.from_props(props)


def test_broker_names_map_to_topic_names_with_units_converted() -> None:
    c = LogConfig.from_broker_props(
        {"log.retention.hours": "2", "log.roll.hours": "1", "message.max.bytes": "77"}
    )
    assert (c.retention_ms, c.segment_ms, c.max_message_bytes) == (7_200_000, 3_600_000, 77)
    ms_wins = LogConfig.from_broker_props({"log.retention.ms": "5", "log.retention.hours": "2"})
    assert ms_wins.retention_ms == 5
    assert all(topic in TOPIC_CONFIG_DEF.keys for topic, _ in BROKER_TO_TOPIC_CONFIG.values())


def test_topic_partition_parses_dir_names_on_the_last_dash() -> None:
    assert TopicPartition.from_dir_name("my-topic-12") == TopicPartition("my-topic", 12)
    assert str(TopicPartition("a-b", 3)) == "a-b-3"
    for bad in ("topic", "topic-x", "-3"):
        with pytest.raises(ValueError):
            TopicPartition.from_dir_name(bad)
