"""Kafka's eager partition assignors, as pure functions the group leader runs.

    assign = ASSIGNORS["range"]
    assign({"t": 4}, {"m1": Member("m1", ("t",)), "m2": Member("m2", ("t",))})
    -> {"m1": [t-0, t-1], "m2": [t-2, t-3]}

Both order members the way Kafka's MemberInfo does (static members by group.instance.id first,
then the rest by member id), so a group of kafkapy, Java and librdkafka members agrees on
who gets what whichever of them leads. Topics missing from the metadata are skipped.

- range (RangeAssignor): per topic, the members subscribed to it get consecutive runs of
  partitions; the first `partitions % members` get one extra.
- roundrobin (RoundRobinAssignor): every partition of every subscribed topic, sorted by topic
  then partition, dealt out in turn to the sorted members, skipping members not subscribed
  to that partition's topic.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from kafkapy.common.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None


Assignor = Callable[[Mapping[str, int], Mapping[str, Member]], dict[str, list[TopicPartition]]]


def _order(member: Member) -> tuple[int, str]:
    if member.group_instance_id is not None:
        return 0, member.group_instance_id
    return 1, member.member_id


def range_assign(partitions_per_topic: Mapping[str, int], members: Mapping[str, Member]) -> dict[str, list[TopicPartition]]:  # fmt: skip
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    by_topic: dict[str, list[Member]] = {}
    for member in members.values():
        for topic in dict.fromkeys(member.topics):
            by_topic.setdefault(topic, []).append(member)
    for topic, subscribed in by_topic.items():
        count = partitions_per_topic.get(topic)
        if count is None:
            continue
        subscribed.sort(key=_order)
        per_member, extra = divmod(count, len(subscribed))
        for i, member in enumerate(subscribed):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            assignment[member.member_id].extend(
                TopicPartition(topic, p) for p in range(start, start + length)
            )
    return assignment


def round_robin_assign(partitions_per_topic: Mapping[str, int], members: Mapping[str, Member]) -> dict[str, list[TopicPartition]]:  # fmt: skip
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    if not members:
        return assignment
    topics = sorted({t for m in members.values() for t in m.topics if t in partitions_per_topic})
    turn = itertools.cycle(sorted(members.values(), key=_order))
    # Kafka's CircularIterator: peek until a member subscribed to the topic, give it the
    # partition, pass the turn on. Skipped members lose their turn, as in Kafka.
    current = next(turn)
    for topic in topics:
        for partition in range(partitions_per_topic[topic]):
            while topic not in current.topics:
                current = next(turn)
            assignment[current.member_id].append(TopicPartition(topic, partition))
            current = next(turn)
    return assignment


ASSIGNORS: Final[dict[str, Assignor]] = {"range": range_assign, "roundrobin": round_robin_assign}

# Java class names, as partition.assignment.strategy is often written in properties files.
_CLASS_NAMES: Final = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
}


def parse_strategy(value: str) -> tuple[str, ...]:
    """partition.assignment.strategy ("range,roundrobin" or Kafka class names) as our names."""
    names = tuple(_CLASS_NAMES.get(s.strip(), s.strip()) for s in value.split(",") if s.strip())
    unknown = [n for n in names if n not in ASSIGNORS]
    if unknown or not names:
        raise ValueError(f"unsupported partition.assignment.strategy {value!r} (range, roundrobin)")
    return names
