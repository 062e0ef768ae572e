"""Kafka's legacy RangeAssignor / RoundRobinAssignor over consumer thread ids, without ZooKeeper."""

from __future__ import annotations

from kafkapy.common.java_hash import java_string_hash
from kafkapy.consumer_legacy.assignors import (
    AssignmentContext,
    assign,
    range_assign,
    roundrobin_assign,
)
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId, thread_ids_per_topic

C1 = "g_host-123-abcd1234"
C2 = "g_host-124-bcde2345"
C3 = "g_host-125-cdef3456"


def ctx(me: str, subscriptions: dict[str, dict[str, int]], partitions: dict[str, int]) -> AssignmentContext:
    """subscriptions: {consumer: {topic: streams}}; partitions: {topic: count}."""
    per_consumer = {c: thread_ids_per_topic(c, sub) for c, sub in subscriptions.items()}
    consumers_for_topic: dict[str, list[ConsumerThreadId]] = {}
    for threads in per_consumer.values():
        for topic, ids in threads.items():
            consumers_for_topic.setdefault(topic, []).extend(ids)
    return AssignmentContext(
        me,
        per_consumer[me],
        {t: sorted(ids) for t, ids in consumers_for_topic.items()},
        {t: list(range(n)) for t, n in partitions.items() if t in consumers_for_topic},
        sorted(subscriptions),
    )


def owners(assignment: dict) -> dict[tuple[str, int], str]:
    return {tp: str(thread) for per in assignment.values() for tp, thread in per.items()}


def test_range_gives_the_first_threads_one_extra_partition_as_kafkas_doc_example() -> None:
    # Kafka's scaladoc: C1 and C2 with two streams each, five partitions.
    c = ctx(C1, {C1: {"t": 2}, C2: {"t": 2}}, {"t": 5})
    assert owners(range_assign(c)) == {
        ("t", 0): f"{C1}-0",
        ("t", 1): f"{C1}-0",
        ("t", 2): f"{C1}-1",
        ("t", 3): f"{C2}-0",
        ("t", 4): f"{C2}-1",
    }


def test_range_orders_threads_as_strings_so_ten_sorts_before_two() -> None:
    c = ctx(C1, {C1: {"t": 12}}, {"t": 12})
    got = owners(range_assign(c))
    assert [got[("t", p)].rsplit("-", 1)[1] for p in range(12)] == [
        "0",
        "1",
        "10",
        "11",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
    ]


def test_range_leaves_threads_beyond_the_partition_count_idle_and_lists_every_consumer() -> None:
    c = ctx(C1, {C1: {"t": 1}, C2: {"t": 1}, C3: {"t": 1}}, {"t": 2})
    result = range_assign(c)
    assert owners(result) == {("t", 0): f"{C1}-0", ("t", 1): f"{C2}-0"}
    assert result[C3] == {}


def test_range_works_per_topic_over_that_topics_subscribers_only() -> None:
    c = ctx(C2, {C1: {"a": 1}, C2: {"a": 1, "b": 1}}, {"a": 2, "b": 3})
    got = owners(range_assign(c))
    assert got[("a", 0)] == f"{C1}-0" and got[("a", 1)] == f"{C2}-0"
    assert [got[("b", p)] for p in range(3)] == [f"{C2}-0"] * 3


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("[t,0]") == 87540032
    assert java_string_hash("polygenelubricants") == -(2**31)  # the famous overflow
    assert java_string_hash("") == 0


def test_roundrobin_deals_partitions_in_hash_order_across_all_threads() -> None:
    c = ctx(C1, {C1: {"a": 1, "b": 1}, C2: {"a": 1, "b": 1}}, {"a": 3, "b": 2})
    # "[a,p]" hashes sort before "[b,p]" (they differ by 31^3 in the second character).
    assert owners(roundrobin_assign(c)) == {
        ("a", 0): f"{C1}-0",
        ("a", 1): f"{C2}-0",
        ("a", 2): f"{C1}-0",
        ("b", 0): f"{C2}-0",
        ("b", 1): f"{C1}-0",
    }


def test_roundrobin_skips_threads_not_subscribed_to_the_topic() -> None:
    c = ctx(C1, {C1: {"a": 1}, C2: {"a": 1, "b": 1}}, {"a": 3, "b": 2})
    got = owners(roundrobin_assign(c))
    assert [got[("a", p)] for p in range(3)] == [f"{C1}-0", f"{C2}-0", f"{C1}-0"]
    assert [got[("b", p)] for p in range(2)] == [f"{C2}-0", f"{C2}-0"]


def test_roundrobin_is_balanced_within_one_and_identical_for_every_member() -> None:
    subs = {C1: {"t": 2}, C2: {"t": 2}, C3: {"t": 1}}
    results = [owners(roundrobin_assign(ctx(me, subs, {"t": 11}))) for me in subs]
    assert results[0] == results[1] == results[2]
    counts: dict[str, int] = {}
    for thread in results[0].values():
        counts[thread] = counts.get(thread, 0) + 1
    assert len(counts) == 5 and max(counts.values()) - min(counts.values()) <= 1


def test_strategy_names_pick_the_assignor() -> None:
    c = ctx(C1, {C1: {"t": 2}}, {"t": 4})
    assert assign("roundrobin", c) == roundrobin_assign(c)
    assert assign("range", c) == range_assign(c)
    assert owners(assign("roundrobin", c)) == {
        ("t", 0): f"{C1}-0",
        ("t", 1): f"{C1}-1",
        ("t", 2): f"{C1}-0",
        ("t", 3): f"{C1}-1",
    }
