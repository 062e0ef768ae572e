"""The legacy (Kafka 0.8-era) high-level consumer: groups coordinated through ZooKeeper.

See connector.py for the API; rebalance.py for how partitions move between group members.
"""

from kafkapy.consumer_legacy.assignors import AssignmentContext, range_assign, roundrobin_assign
from kafkapy.consumer_legacy.config import ConsumerConfig, InvalidConfigException
from kafkapy.consumer_legacy.connector import MessageStreamsExistException, ZookeeperConsumerConnector
from kafkapy.consumer_legacy.rebalance import ConsumerRebalanceFailedException, ConsumerRebalanceListener
from kafkapy.consumer_legacy.stream import ConsumerTimeoutException, KafkaStream, MessageAndMetadata
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId, TopicCount, make_consumer_id
from kafkapy.consumer_legacy.topic_filter import Blacklist, TopicFilter, Whitelist

__all__ = [
    "AssignmentContext",
    "Blacklist",
    "ConsumerConfig",
    "ConsumerRebalanceFailedException",
    "ConsumerRebalanceListener",
    "ConsumerThreadId",
    "ConsumerTimeoutException",
    "InvalidConfigException",
    "KafkaStream",
    "MessageAndMetadata",
    "MessageStreamsExistException",
    "TopicCount",
    "TopicFilter",
    "Whitelist",
    "ZookeeperConsumerConnector",
    "make_consumer_id",
    "range_assign",
    "roundrobin_assign",
]
