"""`--bootstrap-server` mode: the admin API over the wire protocol, as Kafka 2.8's
AdminClientTopicService. Unlike ZooKeeper mode, alter and delete print nothing on success, and
create waits (on the broker side) until the topic has leaders."""

from __future__ import annotations

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.protocol.errors import (
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    KafkaError,
    TopicExistsException,
)
from kafkapy.tools.topic_command.describe import (
    MIN_IN_SYNC_REPLICAS,
    DescribeOptions,
    PartitionDescription,
    TopicDescription,
    describe_lines,
)
from kafkapy.tools.topic_command.options import (
    CommandTopicPartition,
    TopicCommandError,
    TopicCommandOptions,
    ensure_topic_exists,
    select_topics,
)
from kafkapy.tools.topic_command.service import Printer, TopicService

SHORT_MAX = 32767


def check_create_counts(partitions: int | None, replication_factor: int | None) -> None:
    """Kafka's TopicCommand checks before CreateTopics (None: the broker's default), raised as the
    broker error each stands for with the tool's message (the console reports the name)."""
    rf = replication_factor
    if rf is not None and not 1 <= rf <= SHORT_MAX:
        raise InvalidReplicationFactorException(
            f"The replication factor must be between 1 and {SHORT_MAX} inclusive"
        )
    if partitions is not None and partitions < 1:
        raise InvalidPartitionsException("The partitions must be greater than 0")


class AdminClientTopicService(TopicService):
    def __init__(self, admin: AdminClient, out: Printer) -> None:
        super().__init__(out)
        self.admin = admin

    def close(self) -> None:
        self.admin.close()

    def get_topics(self, include: str | None, exclude_internal: bool = False) -> list[str]:
        return select_topics(
            self.admin.list_topics(include_internal=not exclude_internal), include, exclude_internal
        )

    def create(self, topic: CommandTopicPartition) -> None:
        rf, partitions = topic.replication_factor, topic.partitions
        try:
            check_create_counts(partitions, rf)
        except KafkaError as e:
            raise TopicCommandError(e.message) from None
        # Without --partitions / --replication-factor the broker's defaults apply (-1).
        new_topic = NewTopic(
            topic.name,
            -1 if partitions is None else partitions,
            -1 if rf is None else rf,
            topic.replica_assignment,
            topic.configs_to_add,
        )
        try:
            self.admin.create_topic(new_topic)
        except TopicExistsException:
            if not topic.if_not_exists:
                raise
            return
        self.out(f"Created topic {topic.name}.")

    def list_topics(self, opts: TopicCommandOptions) -> None:
        # Kafka prints the names joined by newlines in one println: no topics, one empty line.
        self.out("\n".join(self.get_topics(opts.topic, opts.exclude_internal)))

    def alter_topic(self, opts: TopicCommandOptions) -> None:
        tp = CommandTopicPartition.from_options(opts)
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        if not topics:
            return
        current = self.admin.describe_topics(topics) if tp.replica_assignment is not None else {}
        counts = {}
        for topic in topics:
            new_replicas = None
            if tp.replica_assignment is not None:
                # --replica-assignment lists every partition; only those past the existing are new.
                start = len(current[topic].partitions)
                new_replicas = [r for p, r in sorted(tp.replica_assignment.items()) if p >= start]
            counts[topic] = (tp.partitions or 0, new_replicas)
        self.admin.create_partitions(counts)

    def describe_topic(self, opts: TopicCommandOptions) -> None:
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        if not topics:
            return
        configs = self.admin.describe_configs(topics)
        options = DescribeOptions.from_options(opts, self.admin.live_brokers())
        for name, info in sorted(self.admin.describe_topics(topics).items()):
            entries = configs.get(name, [])
            overrides = tuple((e.name, e.value or "") for e in entries if not e.is_default)
            min_isr = next((e.value for e in entries if e.name == MIN_IN_SYNC_REPLICAS), None)
            rf = len(info.partitions[0].replicas) if info.partitions else 0
            description = TopicDescription(name, info.topic_id, len(info.partitions), rf, overrides)
            partitions = [
                PartitionDescription(
                    name,
                    p.partition,
                    p.leader,
                    p.replicas,
                    p.isr,
                    int(min_isr) if min_isr is not None else None,
                )
                for p in info.partitions
            ]
            for line in describe_lines(options, description, partitions):
                self.out(line)

    def delete_topic(self, opts: TopicCommandOptions) -> None:
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        if topics:
            self.admin.delete_topics(topics)
