"""Kafka's ZooKeeper data model over kazoo: one class per znode (path + encode/decode), the
KafkaZkClient that does the I/O, and the AdminZkClient that tools and admin APIs use."""

from kafkapy.zk.admin_zk_client import AdminZkClient, CreatedTopic
from kafkapy.zk.cluster_znodes import BrokerInfo, EndPoint, generate_cluster_id, generate_topic_id
from kafkapy.zk.config_znodes import ConfigType
from kafkapy.zk.errors import (
    AdminOperationError,
    TopicAlreadyMarkedForDeletionError,
    ZkDataError,
    ZooKeeperClientTimeoutError,
)
from kafkapy.zk.kafka_zk_client import KafkaZkClient, UpdateLeaderAndIsrResult
from kafkapy.zk.topic_znodes import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicIdReplicaAssignment,
    TopicPartition,
)
from kafkapy.zk.watchers import StateChangeHandler, ZNodeChangeHandler, ZNodeChildChangeHandler
from kafkapy.zk.zk_io import MATCH_ANY_VERSION

__all__ = [
    "MATCH_ANY_VERSION",
    "AdminOperationError",
    "AdminZkClient",
    "BrokerInfo",
    "ConfigType",
    "CreatedTopic",
    "EndPoint",
    "KafkaZkClient",
    "LeaderAndIsr",
    "LeaderIsrAndControllerEpoch",
    "ReplicaAssignment",
    "StateChangeHandler",
    "TopicAlreadyMarkedForDeletionError",
    "TopicIdReplicaAssignment",
    "TopicPartition",
    "UpdateLeaderAndIsrResult",
    "ZNodeChangeHandler",
    "ZNodeChildChangeHandler",
    "ZkDataError",
    "ZooKeeperClientTimeoutError",
    "generate_cluster_id",
    "generate_topic_id",
]
