"""Kafka's ControllerState values (the KafkaController ControllerState gauge) by event type."""

from __future__ import annotations

IDLE = 0
# Kafka's ControllerState ids: ControllerChange 1, BrokerChange 2, TopicChange 3, TopicDeletion 4,
# AlterPartitionReassignment 5, AutoLeaderBalance 6, ManualLeaderBalance 7, ControlledShutdown 8,
# IsrChange 9, LeaderAndIsrResponseReceived 10, ControllerShutdown 12, ListPartitionReassignment 15.
STATE_BY_EVENT: dict[str, int] = {
    "Startup": 1,
    "ControllerChange": 1,
    "Reelect": 1,
    "Expire": 1,
    "RegisterBrokerAndReelect": 1,
    "BrokerChange": 2,
    "BrokerModifications": 2,
    "TopicChange": 3,
    "PartitionModifications": 3,
    "TopicDeletion": 4,
    "TopicDeletionStopReplicaResponseReceived": 4,
    "ZkPartitionReassignment": 5,
    "PartitionReassignmentIsrChange": 5,
    "ApiPartitionReassignment": 5,
    "AutoPreferredReplicaLeaderElection": 6,
    "ReplicaLeaderElection": 7,
    "ElectLeaders": 7,
    "ControlledShutdown": 8,
    "IsrChangeNotification": 9,
    "LeaderAndIsrResponseReceived": 10,
    "ShutdownEventThread": 12,
    "ListPartitionReassignments": 15,
}
