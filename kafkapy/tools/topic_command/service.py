"""What both topic services share (Kafka's TopicService trait): one method per action."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from kafkapy.tools.topic_command.options import CommandTopicPartition, TopicCommandOptions, config_warnings
from kafkapy.zk.topic_name import COLLISION_WARNING, has_collision_chars

Printer = Callable[[str], None]


class TopicService(ABC):
    def __init__(self, out: Printer) -> None:
        self.out = out

    def create_topic(self, opts: TopicCommandOptions) -> None:
        topic = CommandTopicPartition.from_options(opts)
        for warning in config_warnings(topic.configs_to_add):
            self.out(warning)
        if has_collision_chars(topic.name):
            self.out(COLLISION_WARNING)
        self.create(topic)

    @abstractmethod
    def create(self, topic: CommandTopicPartition) -> None: ...

    @abstractmethod
    def list_topics(self, opts: TopicCommandOptions) -> None: ...

    @abstractmethod
    def alter_topic(self, opts: TopicCommandOptions) -> None: ...

    @abstractmethod
    def describe_topic(self, opts: TopicCommandOptions) -> None: ...

    @abstractmethod
    def delete_topic(self, opts: TopicCommandOptions) -> None: ...

    @abstractmethod
    def close(self) -> None: ...
