"""Leader/ISR values as the controller uses them.

The value classes themselves (TopicPartition, ReplicaAssignment, LeaderAndIsr,
LeaderIsrAndControllerEpoch) belong to the /state and /brokers/topics znode definitions in
kafkapy.zk.topic_znodes; this module re-exports them and adds what only the controller
needs: Kafka's sentinels, the election helpers of `kafka.api.LeaderAndIsr`, and the log format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kafkapy.protocol.constants import (
    EPOCH_DURING_DELETE,
    INITIAL_LEADER_EPOCH,
    INITIAL_PARTITION_EPOCH,
    LEADER_DURING_DELETE,
)
from kafkapy.zk.topic_znodes import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

__all__ = [
    "LeaderAndIsr",
    "LeaderIsrAndControllerEpoch",
    "PartitionAndReplica",
    "ReplicaAssignment",
    "TopicPartition",
    "describe",
    "during_delete",
    "initial_leader_and_isr",
    "new_leader",
]


class PartitionAndReplica(NamedTuple):
    topic_partition: TopicPartition
    replica: int

    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    def __str__(self) -> str:
        tp = self.topic_partition
        return f"[Topic={tp.topic},Partition={tp.partition},Replica={self.replica}]"


def initial_leader_and_isr(live_replicas: Sequence[int]) -> LeaderAndIsr:
    """NewPartition -> OnlinePartition: first live replica leads, all live replicas are in sync."""
    return LeaderAndIsr(live_replicas[0], INITIAL_LEADER_EPOCH, tuple(live_replicas), INITIAL_PARTITION_EPOCH)


def new_leader(current: LeaderAndIsr, leader: int) -> LeaderAndIsr:
    """A new leader with the same ISR; the leader epoch moves on (Kafka's `newLeader`)."""
    return current.new_leader_and_isr(leader, current.isr)


def during_delete(isr: Sequence[int]) -> LeaderAndIsr:
    """What UpdateMetadata advertises for a partition whose topic is being deleted."""
    return LeaderAndIsr(LEADER_DURING_DELETE, EPOCH_DURING_DELETE, tuple(isr), INITIAL_PARTITION_EPOCH)


def describe(lai: LeaderAndIsr) -> str:
    """Kafka's LeaderAndIsr.toString, which operators grep for in state-change.log."""
    isr = ",".join(str(r) for r in lai.isr)
    return f"LeaderAndIsr(leader={lai.leader}, leaderEpoch={lai.leader_epoch}, isr={isr}, zkVersion={lai.zk_version})"
