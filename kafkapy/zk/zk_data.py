"""Cluster-wide path lists (Kafka's `ZkData` object)."""

from __future__ import annotations

from kafkapy.zk.admin_znodes import (
    AdminZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    ProducerIdBlockZNode,
)
from kafkapy.zk.cluster_znodes import (
    BrokerIdsZNode,
    BrokerSequenceIdZNode,
    BrokersZNode,
    ClusterZNode,
    ControllerEpochZNode,
    ControllerZNode,
)
from kafkapy.zk.config_znodes import (
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigType,
    ConfigZNode,
)
from kafkapy.zk.consumer_znodes import ConsumerPathZNode
from kafkapy.zk.topic_znodes import TopicsZNode

# Persistent paths every broker makes sure exist at startup, in Kafka's order.
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    ConsumerPathZNode.path(),  # the old consumer's root: it writes under it, it never creates it
    BrokerIdsZNode.path(),
    TopicsZNode.path(),
    ConfigEntityChangeNotificationZNode.path(),
    DeleteTopicsZNode.path(),
    BrokerSequenceIdZNode.path(),
    IsrChangeNotificationZNode.path(),
    ProducerIdBlockZNode.path(),
    LogDirEventNotificationZNode.path(),
) + tuple(ConfigEntityTypeZNode.path(t) for t in ConfigType.ALL)

# Top-level paths Kafka owns (it would secure these with ACLs when zookeeper.set.acl=true).
ROOT_PATHS: tuple[str, ...] = (
    AdminZNode.path(),
    BrokersZNode.path(),
    ClusterZNode.path(),
    ConfigZNode.path(),
    ControllerZNode.path(),
    ControllerEpochZNode.path(),
    IsrChangeNotificationZNode.path(),
    ProducerIdBlockZNode.path(),
    LogDirEventNotificationZNode.path(),
)
