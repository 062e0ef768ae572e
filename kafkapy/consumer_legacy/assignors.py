"""Partition assignment for the legacy consumer: Kafka's RangeAssignor and RoundRobinAssignor.

Pure functions of an AssignmentContext (what the consumer read from ZooKeeper), tested
without ZooKeeper. Both return {consumer id: {(topic, partition): ConsumerThreadId}} for every
consumer of the group, with an empty map for consumers that get nothing.

range      per topic, partitions in numeric order over the topic's threads in string order;
           the first `partitions % threads` threads get one extra partition.
roundrobin all partitions of all subscribed topics, ordered by the Java hashCode of
           "[topic,partition]" (Kafka's TopicAndPartition.toString), dealt to the sorted set of all
           thread ids in turn, skipping threads not subscribed to the partition's topic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkapy.common.java_hash import java_string_hash
from kafkapy.consumer_legacy.config import ROUNDROBIN
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId

log = logging.getLogger(__name__)

TopicAndPartition = tuple[str, int]
Assignment = dict[str, dict[TopicAndPartition, ConsumerThreadId]]


@dataclass(frozen=True)
class AssignmentContext:
    consumer_id: str
    # This consumer's thread ids per topic it subscribes to.
    my_topic_thread_ids: Mapping[str, set[ConsumerThreadId]]
    # Every consumer thread of the group per topic, sorted (Kafka's getConsumersPerTopic).
    consumers_for_topic: Mapping[str, Sequence[ConsumerThreadId]]
    partitions_for_topic: Mapping[str, Sequence[int]]
    consumers: Sequence[str] = field(default_factory=list)  # the group's consumer ids, sorted


def _empty_for_all(ctx: AssignmentContext, result: Assignment) -> Assignment:
    for consumer in ctx.consumers:
        result.setdefault(consumer, {})
    return result


def range_assign(ctx: AssignmentContext) -> Assignment:
    result: Assignment = {}
    for topic in ctx.my_topic_thread_ids:
        consumers = list(ctx.consumers_for_topic.get(topic, ()))
        partitions = list(ctx.partitions_for_topic.get(topic, ()))
        if not consumers:
            continue
        per_consumer, with_extra = divmod(len(partitions), len(consumers))
        for position, thread in enumerate(consumers):
            start = per_consumer * position + min(position, with_extra)
            count = per_consumer + (1 if position + 1 <= with_extra else 0)
            if count <= 0:
                log.warning("No broker partitions consumed by consumer thread %s for topic %s", thread, topic)
                continue
            for partition in partitions[start : start + count]:
                result.setdefault(thread.consumer, {})[(topic, partition)] = thread
    return _empty_for_all(ctx, result)


def roundrobin_assign(ctx: AssignmentContext) -> Assignment:
    result: Assignment = {}
    if ctx.consumers_for_topic:
        all_threads = sorted({t for threads in ctx.consumers_for_topic.values() for t in threads})
        subscribed = {topic: set(threads) for topic, threads in ctx.consumers_for_topic.items()}
        partitions = sorted(
            ((topic, p) for topic, ps in ctx.partitions_for_topic.items() for p in ps),
            # Kafka's sort is stable over a hash map's order; (topic, partition) breaks hash ties.
            key=lambda tp: (java_string_hash(f"[{tp[0]},{tp[1]}]"), tp[0], tp[1]),
        )
        # One circular cursor over all threads, advanced past skipped threads and past the
        # chosen one, exactly like Kafka's circularIterator.dropWhile(...).next.
        cursor = 0
        for topic, partition in partitions:
            wanted = subscribed.get(topic)
            if not wanted:
                continue
            while all_threads[cursor % len(all_threads)] not in wanted:
                cursor += 1
            thread = all_threads[cursor % len(all_threads)]
            cursor += 1
            result.setdefault(thread.consumer, {})[(topic, partition)] = thread
    return _empty_for_all(ctx, result)


def assign(strategy: str, ctx: AssignmentContext) -> Assignment:
    """Kafka's PartitionAssignor.createInstance: "roundrobin", anything else is range."""
    return roundrobin_assign(ctx) if strategy == ROUNDROBIN else range_assign(ctx)
