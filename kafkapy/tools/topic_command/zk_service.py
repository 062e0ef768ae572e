"""`--zookeeper` mode: read and write Kafka's znodes directly, as Kafka 2.8's
ZookeeperTopicService did. The tool only records requests (a topic's assignment, a deletion
marker, a config change notification); the controller acts on them later, which is why
delete prints "marked for deletion" rather than "deleted"."""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError

from kafkapy.protocol.constants import NO_LEADER
from kafkapy.protocol.errors import InvalidTopicException, TopicExistsException
from kafkapy.tools.topic_command.describe import (
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
from kafkapy.zk.admin_zk_client import AdminZkClient, RackAwareMode
from kafkapy.zk.config_znodes import ConfigType
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.topic_name import is_internal
from kafkapy.zk.topic_znodes import TopicPartition
from kafkapy.zk.zk_auth import tool_zk_security

# Kafka's TopicCommand opens its ZooKeeper session with 30 s session and connection timeouts.
ZK_TIMEOUT_MS = 30_000

DEPRECATED_CONFIG_WARNING = (
    "WARNING: Altering topic configuration from this script has been deprecated and may be removed in "
    "future releases.",
    "         Going forward, please use kafka-configs.sh for this functionality",
)
PARTITION_KEY_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition "
    "logic or ordering of the messages will be affected"
)


class ZookeeperTopicService(TopicService):
    def __init__(self, zk: KafkaZkClient, out: Printer) -> None:
        super().__init__(out)
        self.zk = zk
        self.admin = AdminZkClient(zk)

    @classmethod
    def connect(cls, zk_connect: str, out: Printer, timeout_ms: int = ZK_TIMEOUT_MS) -> ZookeeperTopicService:
        zk = KafkaZkClient(
            zk_connect, session_timeout_ms=timeout_ms, connection_timeout_ms=timeout_ms, **tool_zk_security()
        )
        zk.start()
        return cls(zk, out)

    def close(self) -> None:
        self.zk.close()

    def get_topics(self, include: str | None, exclude_internal: bool = False) -> list[str]:
        return select_topics(self.zk.get_all_topics_in_cluster(), include, exclude_internal)

    def create(self, topic: CommandTopicPartition) -> None:
        try:
            if topic.replica_assignment is not None:
                self.admin.create_topic(
                    topic.name, configs=topic.configs_to_add, replica_assignment=topic.replica_assignment
                )
            else:
                # check_args made --partitions and --replication-factor required here.
                mode = RackAwareMode.ENFORCED if topic.rack_aware else RackAwareMode.DISABLED
                self.admin.create_topic(
                    topic.name,
                    topic.partitions or 0,
                    topic.replication_factor or 0,
                    topic.configs_to_add,
                    rack_aware_mode=mode,
                )
        except TopicExistsException:
            if not topic.if_not_exists:
                raise
            return
        self.out(f"Created topic {topic.name}.")

    def list_topics(self, opts: TopicCommandOptions) -> None:
        for topic in self.get_topics(opts.topic, opts.exclude_internal):
            if self.zk.is_topic_marked_for_deletion(topic):
                self.out(f"{topic} - marked for deletion")
            else:
                self.out(topic)

    def alter_topic(self, opts: TopicCommandOptions) -> None:
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        tp = CommandTopicPartition.from_options(opts)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        for topic in topics:
            if opts.has("config") or opts.has("delete-config"):
                self._alter_configs(topic, tp)
            if tp.partitions is not None:
                self._add_partitions(topic, tp)

    def _alter_configs(self, topic: str, tp: CommandTopicPartition) -> None:
        for line in DEPRECATED_CONFIG_WARNING:
            self.out(line)
        configs = self.admin.fetch_entity_config(ConfigType.TOPIC, topic)
        configs.update(tp.configs_to_add)
        for name in tp.configs_to_delete:
            configs.pop(name, None)
        self.admin.change_topic_config(topic, configs)
        self.out(f"Updated config for topic {topic}.")

    def _add_partitions(self, topic: str, tp: CommandTopicPartition) -> None:
        if is_internal(topic):
            raise TopicCommandError(
                f"The number of partitions for the internal topic {topic} cannot be changed."
            )
        self.out(PARTITION_KEY_WARNING)
        existing = self.zk.get_topic_assignment(topic)
        if existing is None or not existing.assignment:
            raise InvalidTopicException(f"The topic {topic} does not exist")
        # --replica-assignment lists every partition; only those past the existing ones are new.
        new = {p: r for p, r in (tp.replica_assignment or {}).items() if p >= len(existing.assignment)}
        self.admin.add_partitions(topic, tp.partitions or 1, new or None)
        self.out("Adding partitions succeeded!")

    def describe_topic(self, opts: TopicCommandOptions) -> None:
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        live = {b.id for b in self.zk.get_all_brokers_in_cluster()}
        options = DescribeOptions.from_options(opts, live)
        for topic in topics:
            for line in self._describe_one(topic, options):
                self.out(line)

    def _describe_one(self, topic: str, options: DescribeOptions) -> list[str]:
        assignment = self.zk.get_topic_assignment(topic)
        if assignment is None:  # deleted since we listed it
            return [f"Topic {topic} doesn't exist!"]
        marked = self.zk.is_topic_marked_for_deletion(topic)
        replicas = assignment.replicas()
        first = next(iter(replicas.values()), [])
        # Only read the configs when the topic line is printed, as Kafka does.
        configs = self.admin.fetch_entity_config(ConfigType.TOPIC, topic) if options.describe_configs else {}
        description = TopicDescription(
            topic, assignment.topic_id, len(replicas), len(first), tuple(configs.items()), marked
        )
        states = self.zk.get_topic_partition_states([TopicPartition(topic, p) for p in replicas])
        partitions = []
        for p, assigned in replicas.items():
            state = states.get(TopicPartition(topic, p))
            leader, isr = (
                (None, ()) if state is None else (state.leader_and_isr.leader, state.leader_and_isr.isr)
            )
            partitions.append(
                PartitionDescription(
                    topic,
                    p,
                    None if leader == NO_LEADER else leader,
                    tuple(assigned),
                    tuple(isr),
                    marked_for_deletion=marked,
                )
            )
        return describe_lines(options, description, partitions)

    def delete_topic(self, opts: TopicCommandOptions) -> None:
        topics = self.get_topics(opts.topic, opts.exclude_internal)
        ensure_topic_exists(topics, opts.topic, not opts.if_exists)
        for topic in topics:
            if is_internal(topic):
                raise AdminOperationError(
                    f"Topic {topic} is a kafka internal topic and is not allowed to be marked for deletion."
                )
            try:
                self.zk.create_delete_topic_path(topic)
            except NodeExistsError:
                self.out(f"Topic {topic} is already marked for deletion.")
                continue
            except Exception as e:
                raise AdminOperationError(f"Error while deleting topic {topic}") from e
            self.out(f"Topic {topic} is marked for deletion.")
            self.out("Note: This will have no impact if delete.topic.enable is not set to true.")
