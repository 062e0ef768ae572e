"""The async producer: `KafkaProducer(config).send(topic, value, key=...)` returns a future."""

from kafkapy.producer.accumulator import BufferExhaustedError
from kafkapy.producer.batch import FutureRecordMetadata, RecordMetadata
from kafkapy.producer.config import ProducerConfig
from kafkapy.producer.partitioner import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    murmur2,
    murmur2_partition,
    to_positive,
)
from kafkapy.producer.producer import KafkaProducer

__all__ = [
    "BufferExhaustedError",
    "DefaultPartitioner",
    "FutureRecordMetadata",
    "KafkaProducer",
    "ProducerConfig",
    "RecordMetadata",
    "RoundRobinPartitioner",
    "UniformStickyPartitioner",
    "murmur2",
    "murmur2_partition",
    "to_positive",
]
