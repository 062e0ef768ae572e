"""`--describe` output, as Kafka 2.8's TopicCommand prints it, and which lines the report
options (--under-replicated-partitions, ...) keep. Pure: both topic services fill these in.

    Topic: t\tTopicId: <id>\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: segment.bytes=1000
    \tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0

TopicId is left out when the topic has none (a topic created before Kafka 2.8); a topic marked
for deletion (ZooKeeper mode only) ends both kinds of line with "\tMarkedForDeletion: true".
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from kafkapy.tools.topic_command.options import TopicCommandOptions

MIN_IN_SYNC_REPLICAS = "min.insync.replicas"


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids))


@dataclass(frozen=True, slots=True)
class TopicDescription:
    topic: str
    topic_id: str | None  # Kafka's Uuid.toString (url-safe base64); None for no id
    partition_count: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]  # the non-default configs only, in the order given
    marked_for_deletion: bool = False

    def format(self) -> str:
        line = f"Topic: {self.topic}"
        if self.topic_id:
            line += f"\tTopicId: {self.topic_id}"
        line += f"\tPartitionCount: {self.partition_count}"
        line += f"\tReplicationFactor: {self.replication_factor}"
        # Kafka prints "Configs: " (with its space) even when there are none.
        line += "\tConfigs: " + ",".join(f"{k}={v}" for k, v in self.configs)
        if self.marked_for_deletion:
            line += "\tMarkedForDeletion: true"
        return line


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    topic: str
    partition: int
    leader: int | None  # None: no leader ("none")
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # The topic's min.insync.replicas; None in ZooKeeper mode, where Kafka does not read it.
    min_isr: int | None = None
    marked_for_deletion: bool = False

    @property
    def is_under_replicated(self) -> bool:
        return len(self.replicas) - len(self.isr) > 0

    @property
    def is_under_min_isr(self) -> bool:
        return self.leader is None or (self.min_isr is not None and len(self.isr) < self.min_isr)

    @property
    def is_at_min_isr(self) -> bool:
        return self.min_isr is not None and len(self.isr) == self.min_isr

    def is_unavailable(self, live_brokers: Set[int]) -> bool:
        return self.leader is None or self.leader not in live_brokers

    def format(self) -> str:
        line = (
            f"\tTopic: {self.topic}\tPartition: {self.partition}"
            f"\tLeader: {'none' if self.leader is None else self.leader}"
            f"\tReplicas: {_ids(self.replicas)}\tIsr: {_ids(self.isr)}"
        )
        if self.marked_for_deletion:
            line += "\tMarkedForDeletion: true"
        return line


@dataclass(frozen=True, slots=True)
class DescribeOptions:
    """Which parts of --describe to print, from the report options."""

    under_replicated: bool
    unavailable: bool
    under_min_isr: bool
    at_min_isr: bool
    only_overridden_configs: bool
    live_brokers: frozenset[int]

    @classmethod
    def from_options(cls, opts: TopicCommandOptions, live_brokers: Set[int]) -> DescribeOptions:
        return cls(
            under_replicated=opts.has("under-replicated-partitions"),
            unavailable=opts.has("unavailable-partitions"),
            under_min_isr=opts.has("under-min-isr-partitions"),
            at_min_isr=opts.has("at-min-isr-partitions"),
            only_overridden_configs=opts.report_overridden_configs,
            live_brokers=frozenset(live_brokers),
        )

    @property
    def describe_configs(self) -> bool:
        """The topic line is printed unless a partition report was asked for."""
        return not (self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr)

    @property
    def describe_partitions(self) -> bool:
        return not self.only_overridden_configs

    def should_print_topic(self, description: TopicDescription) -> bool:
        return self.describe_configs and (not self.only_overridden_configs or bool(description.configs))

    def should_print_partition(self, p: PartitionDescription) -> bool:
        return (
            self.describe_configs
            or (self.under_replicated and p.is_under_replicated)
            or (self.unavailable and p.is_unavailable(self.live_brokers))
            or (self.under_min_isr and p.is_under_min_isr)
            or (self.at_min_isr and p.is_at_min_isr)
        )


def describe_lines(
    options: DescribeOptions, topic: TopicDescription, partitions: Sequence[PartitionDescription]
) -> list[str]:
    """The lines one topic contributes to --describe, partitions in partition order."""
    lines = [topic.format()] if options.should_print_topic(topic) else []
    if options.describe_partitions:
        lines += [
            p.format()
            for p in sorted(partitions, key=lambda p: p.partition)
            if options.should_print_partition(p)
        ]
    return lines
