"""Topic filters, consumer ids, thread ids, registration JSON and ConsumerConfig of the legacy consumer."""

from __future__ import annotations

import json
import re

import pytest

from kafkapy.consumer_legacy.config import ConsumerConfig, InvalidConfigException
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId, TopicCount, make_consumer_id
from kafkapy.consumer_legacy.topic_filter import Blacklist, Whitelist
from kafkapy.zk.consumer_znodes import ConsumerIdZNode


def test_whitelist_matches_whole_names_and_turns_commas_into_alternatives() -> None:
    wl = Whitelist(" 'orders,pay.*' ")
    assert wl.regex == "orders|pay.*"
    assert wl.is_topic_allowed("orders", True)
    assert wl.is_topic_allowed("payments", True)
    assert not wl.is_topic_allowed("orders2", True)  # Java String.matches: the whole name


def test_internal_topics_are_excluded_unless_asked_for() -> None:
    assert not Whitelist(".*").is_topic_allowed("__consumer_offsets", True)
    assert Whitelist(".*").is_topic_allowed("__consumer_offsets", False)
    assert not Blacklist("x").is_topic_allowed("__consumer_offsets", True)


def test_blacklist_allows_what_does_not_match() -> None:
    bl = Blacklist("test.*")
    assert bl.is_topic_allowed("prod", True)
    assert not bl.is_topic_allowed("test-1", True)


def test_invalid_regex_is_refused() -> None:
    with pytest.raises(ValueError, match="is an invalid regex"):
        Whitelist("a(")


def test_consumer_id_is_group_host_timestamp_and_eight_hex_digits() -> None:
    assert make_consumer_id("g", "host", 123, 0xABCD1234_5678_9ABC) == "g_host-123-abcd1234"
    # Java's Long.toHexString drops leading zeros before Kafka takes the first eight digits.
    assert make_consumer_id("g", "h", 1, 0x0000_0001_2345_6789) == "g_h-1-12345678"
    assert re.fullmatch(r"grp_[^-]+.*-\d{13}-[0-9a-f]{1,8}", make_consumer_id("grp"))


def test_thread_ids_print_and_sort_as_kafka_strings() -> None:
    a, b = ConsumerThreadId("g_h-1-abcd1234", 10), ConsumerThreadId("g_h-1-abcd1234", 2)
    assert str(a) == "g_h-1-abcd1234-10"
    assert sorted([b, a]) == [a, b]


def test_static_registration_json_is_kafkas() -> None:
    reg = TopicCount.static("c", {"t": 2}).registration(timestamp=1234)
    data = ConsumerIdZNode.encode(reg)
    assert json.loads(data) == {
        "version": 1,
        "subscription": {"t": 2},
        "pattern": "static",
        "timestamp": "1234",
    }
    assert (
        data.index(b'"version"')
        < data.index(b'"subscription"')
        < data.index(b'"pattern"')
        < data.index(b'"timestamp"')
    )


def test_wildcard_registration_round_trips_through_the_znode() -> None:
    count = TopicCount.wildcard("c", Blacklist("a.*"), 3)
    reg = ConsumerIdZNode.decode(ConsumerIdZNode.encode(count.registration(timestamp=1)))
    assert (reg.subscription, reg.pattern) == ({"a.*": 3}, "black_list")
    back = TopicCount.from_registration("c", reg)
    assert back.is_wildcard
    threads = back.thread_ids_per_topic(lambda: ["a1", "b1", "__consumer_offsets"])
    assert set(threads) == {"b1"} and {t.thread_id for t in threads["b1"]} == {0, 1, 2}


def test_config_defaults_and_names_are_kafkas() -> None:
    cfg = ConsumerConfig.from_props({"group.id": "g", "zookeeper.connect": "zk:2181"})
    assert (cfg.auto_commit_enable, cfg.auto_commit_interval_ms, cfg.queued_max_message_chunks) == (
        True,
        60000,
        2,
    )
    assert (cfg.rebalance_max_retries, cfg.effective_rebalance_backoff_ms, cfg.auto_offset_reset) == (
        4,
        2000,
        "largest",
    )
    assert (cfg.fetch_message_max_bytes, cfg.consumer_timeout_ms, cfg.partition_assignment_strategy) == (
        1024 * 1024,
        -1,
        "range",
    )
    assert cfg.effective_client_id == "g"
    cfg = ConsumerConfig.from_props(
        {
            "group.id": "g",
            "zookeeper.connect": "zk",
            "auto.commit.enable": "false",
            "rebalance.backoff.ms": "50",
            "consumer.timeout.ms": "10",
        }
    )
    assert (cfg.auto_commit_enable, cfg.effective_rebalance_backoff_ms, cfg.consumer_timeout_ms) == (
        False,
        50,
        10,
    )


@pytest.mark.parametrize(
    "props, message",
    [
        ({"zookeeper.connect": "zk"}, "group.id"),
        (
            {"group.id": "g", "zookeeper.connect": "zk", "auto.offset.reset": "earliest"},
            "Valid values are smallest",
        ),
        (
            {"group.id": "g", "zookeeper.connect": "zk", "partition.assignment.strategy": "sticky"},
            "'roundrobin'",
        ),
        ({"group.id": "g", "zookeeper.connect": "zk", "fetch.wait.max.ms": "40000"}, "socket.timeout.ms"),
        ({"group.id": "g", "zookeeper.connect": "zk", "auto.commit.enable": "yes"}, "true or false"),
    ],
)
def test_bad_configs_are_refused_with_kafkas_messages(props: dict, message: str) -> None:
    with pytest.raises(InvalidConfigException, match=message):
        ConsumerConfig.from_props(props)
