"""TopicPartition: the key of a partition's log, and the name of its directory.

A NamedTuple: several are built per produce request, and a tuple is far cheaper to create and
hash than a frozen dataclass; it also equals a plain ("topic", 0) tuple. The broker, the
ZooKeeper layer, the controller, the clients and the tools all use this one class (Kafka's
org.apache.kafka.common.TopicPartition; `str()` is Kafka's `topic-partition` too).
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition:
        """Parse `<topic>-<partition>`; topic names may hold '-', so split on the last one."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"Found directory {name}, '{name}' is not in the form of topic-partition")
        return cls(topic, int(partition))
