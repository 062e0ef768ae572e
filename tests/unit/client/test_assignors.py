"""The range and roundrobin assignors give Kafka's assignments (the examples in Kafka's javadoc
and tests), and for any subscriptions hand every partition of a subscribed topic to exactly
one member subscribed to it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkapy.client.assignors import ASSIGNORS, Member, parse_strategy, range_assign, round_robin_assign
from kafkapy.common.topic_partition import TopicPartition


def tps(*names: str) -> list[TopicPartition]:
    """ "t0p1" -> TopicPartition("t0", 1)."""
    return [TopicPartition(n.split("p")[0], int(n.split("p")[1])) for n in names]


def members(**subscriptions: tuple[str, ...]) -> dict[str, Member]:
    return {m: Member(m, topics) for m, topics in subscriptions.items()}


def test_range_gives_each_member_a_run_of_each_topic_and_the_first_ones_the_extra() -> None:
    got = range_assign({"t0": 3, "t1": 3}, members(C0=("t0", "t1"), C1=("t0", "t1")))
    assert got == {"C0": tps("t0p0", "t0p1", "t1p0", "t1p1"), "C1": tps("t0p2", "t1p2")}


def test_range_splits_each_topic_among_only_its_subscribers() -> None:
    got = range_assign({"t0": 4, "t1": 2}, members(a=("t0",), b=("t0", "t1"), c=("t1",)))
    assert got == {"a": tps("t0p0", "t0p1"), "b": tps("t0p2", "t0p3", "t1p0"), "c": tps("t1p1")}


def test_range_with_more_members_than_partitions_leaves_the_last_ones_empty() -> None:
    got = range_assign({"t": 2}, members(m3=("t",), m1=("t",), m2=("t",)))
    assert got == {"m1": tps("tp0"), "m2": tps("tp1"), "m3": []}


def test_topics_missing_from_metadata_are_skipped() -> None:
    subs = members(a=("t", "gone"), b=("t",))
    for assign in ASSIGNORS.values():
        got = assign({"t": 2}, subs)
        assert sorted(got["a"] + got["b"]) == tps("tp0", "tp1")


def test_static_members_sort_first_by_instance_id_as_kafka_member_info_does() -> None:
    subs = {
        "a-dynamic": Member("a-dynamic", ("t",)),
        "z-static": Member("z-static", ("t",), group_instance_id="i-1"),
    }
    assert range_assign({"t": 2}, subs) == {"z-static": tps("tp0"), "a-dynamic": tps("tp1")}


def test_roundrobin_deals_sorted_partitions_to_sorted_members() -> None:
    got = round_robin_assign({"t0": 3, "t1": 3}, members(C1=("t0", "t1"), C0=("t0", "t1")))
    assert got == {"C0": tps("t0p0", "t0p2", "t1p1"), "C1": tps("t0p1", "t1p0", "t1p2")}


def test_roundrobin_skips_members_not_subscribed_to_the_topic() -> None:
    # RoundRobinAssignor's javadoc example with different subscriptions.
    subs = members(C0=("t0",), C1=("t0", "t1"), C2=("t0", "t1", "t2"))
    got = round_robin_assign({"t0": 1, "t1": 2, "t2": 3}, subs)
    assert got == {"C0": tps("t0p0"), "C1": tps("t1p0"), "C2": tps("t1p1", "t2p0", "t2p1", "t2p2")}


def test_no_members_no_assignment() -> None:
    for assign in ASSIGNORS.values():
        assert assign({"t": 3}, {}) == {}


def test_strategy_names_and_kafka_class_names() -> None:
    assert parse_strategy("range") == ("range",)
    assert parse_strategy(
        "org.apache.kafka.clients.consumer.RoundRobinAssignor, org.apache.kafka.clients.consumer.RangeAssignor"
    ) == ("roundrobin", "range")
    with pytest.raises(ValueError, match="cooperative-sticky"):
        parse_strategy("cooperative-sticky")


topics_st = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 9), min_size=1)


@given(
    counts=topics_st,
    subscriptions=st.lists(
        st.sets(st.sampled_from(["a", "b", "c", "d", "x"]), min_size=1), min_size=1, max_size=7
    ),
    name=st.sampled_from(sorted(ASSIGNORS)),
)
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    counts: dict[str, int], subscriptions: list[set[str]], name: str
) -> None:
    subs = {f"m{i}": Member(f"m{i}", tuple(sorted(s))) for i, s in enumerate(subscriptions)}
    got = ASSIGNORS[name](counts, subs)
    assert set(got) == set(subs)
    handed = [tp for assigned in got.values() for tp in assigned]
    wanted = {TopicPartition(t, p) for s in subscriptions for t in s if t in counts for p in range(counts[t])}
    assert sorted(handed) == sorted(wanted)  # each exactly once
    for member_id, assigned in got.items():
        assert {tp.topic for tp in assigned} <= set(subs[member_id].topics)
    if name == "range":  # per topic, its subscribers' shares differ by at most one
        for topic in counts:
            shares = [sum(tp.topic == topic for tp in got[m]) for m, s in subs.items() if topic in s.topics]
            assert not shares or max(shares) - min(shares) <= 1
