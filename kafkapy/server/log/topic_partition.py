"""Kept so that imports of the old path (branches written before the move) still resolve;
TopicPartition lives in kafkapy/common/topic_partition.py."""

from kafkapy.common.topic_partition import TopicPartition

__all__ = ["TopicPartition"]
