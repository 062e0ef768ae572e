"""Consumer ids, consumer thread ids and TopicCount: what a legacy consumer subscribes to.

A consumer id is `<group>_<host>-<ms since epoch>-<first 8 hex digits of a random UUID's high
64 bits>`; each of its streams for a topic is a "consumer thread" `<consumer id>-<n>`. The
assignors hand partitions to these thread ids, compared as strings, so the order of
"g_h-1-abcd1234-10" and "g_h-1-abcd1234-2" is the string order, as in Kafka.

A TopicCount is a registration's subscription: static ({topic: streams}) or a whitelist /
blacklist regex with one stream count that applies to every matching topic.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import total_ordering

from kafkapy.consumer_legacy.topic_filter import Blacklist, TopicFilter, Whitelist
from kafkapy.zk.consumer_znodes import (
    PATTERN_BLACK_LIST,
    PATTERN_STATIC,
    PATTERN_WHITE_LIST,
    ConsumerRegistration,
)


@total_ordering
@dataclass(frozen=True, slots=True)
class ConsumerThreadId:
    consumer: str
    thread_id: int

    def __str__(self) -> str:
        return f"{self.consumer}-{self.thread_id}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ConsumerThreadId):
            return NotImplemented
        return str(self) < str(other)


def make_consumer_id(
    group: str, host: str | None = None, now_ms: int | None = None, uuid_msb: int | None = None
) -> str:
    """Kafka's consumerIdString: `<group>_<host>-<timestamp ms>-<uuid8>`."""
    host = socket.gethostname() if host is None else host
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    msb = (uuid.uuid4().int >> 64) if uuid_msb is None else uuid_msb
    # Java's Long.toHexString: unsigned, no leading zeros; Kafka keeps its first 8 digits.
    return f"{group}_{host}-{now_ms}-{format(msb & 0xFFFFFFFFFFFFFFFF, 'x')[:8]}"


def thread_ids_per_topic(
    consumer_id: str, topic_count_map: Mapping[str, int]
) -> dict[str, set[ConsumerThreadId]]:
    result: dict[str, set[ConsumerThreadId]] = {}
    for topic, n in topic_count_map.items():
        if n < 1:
            raise ValueError(f"stream count for {topic} must be at least 1, not {n}")
        result[topic] = {ConsumerThreadId(consumer_id, i) for i in range(n)}
    return result


@dataclass(frozen=True)
class TopicCount:
    """A consumer's subscription. `topic_count_map` is {topic: n} (static) or {regex: n}."""

    consumer_id: str
    topic_count_map: dict[str, int]
    pattern: str = PATTERN_STATIC
    topic_filter: TopicFilter | None = field(default=None, compare=False)

    @classmethod
    def static(cls, consumer_id: str, topic_count_map: Mapping[str, int]) -> TopicCount:
        return cls(consumer_id, dict(topic_count_map))

    @classmethod
    def wildcard(cls, consumer_id: str, topic_filter: TopicFilter, num_streams: int) -> TopicCount:
        pattern = PATTERN_WHITE_LIST if isinstance(topic_filter, Whitelist) else PATTERN_BLACK_LIST
        return cls(consumer_id, {topic_filter.regex: num_streams}, pattern, topic_filter)

    @classmethod
    def from_registration(cls, consumer_id: str, reg: ConsumerRegistration) -> TopicCount:
        """Another consumer's subscription as read from /consumers/<group>/ids/<id>."""
        if reg.subscription and reg.pattern in (PATTERN_WHITE_LIST, PATTERN_BLACK_LIST):
            regex, n = next(iter(reg.subscription.items()))
            flt: TopicFilter = Whitelist(regex) if reg.pattern == PATTERN_WHITE_LIST else Blacklist(regex)
            return cls.wildcard(consumer_id, flt, n)
        return cls.static(consumer_id, reg.subscription)

    @property
    def is_wildcard(self) -> bool:
        return self.topic_filter is not None

    def registration(self, timestamp: int | None = None) -> ConsumerRegistration:
        return ConsumerRegistration(dict(self.topic_count_map), self.pattern, timestamp)

    def thread_ids_per_topic(
        self, all_topics: Callable[[], Iterable[str]], exclude_internal_topics: bool = True
    ) -> dict[str, set[ConsumerThreadId]]:
        """{topic: thread ids}; a wildcard subscription expands over `all_topics()` (the topics in
        /brokers/topics), which is only called for wildcard subscriptions."""
        if self.topic_filter is None:
            return thread_ids_per_topic(self.consumer_id, self.topic_count_map)
        n = next(iter(self.topic_count_map.values()))
        topics = [t for t in all_topics() if self.topic_filter.is_topic_allowed(t, exclude_internal_topics)]
        return thread_ids_per_topic(self.consumer_id, dict.fromkeys(topics, n))
