"""Znodes under /brokers/topics: replica assignments and partition leader/ISR state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkapy.common.topic_partition import (
    TopicPartition as TopicPartition,  # re-exported: the ZooKeeper data model names it
)
from kafkapy.protocol.constants import INITIAL_PARTITION_EPOCH
from kafkapy.zk._json import decode_json, encode_json
from kafkapy.zk.cluster_znodes import BrokersZNode
from kafkapy.zk.errors import ZkDataError


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """One partition's replicas, plus what an in-flight reassignment adds and removes (KIP-455)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicIdReplicaAssignment:
    topic: str
    topic_id: str | None
    assignment: dict[int, ReplicaAssignment]

    def replicas(self) -> dict[int, list[int]]:
        """{partition: replicas}, the plain view most callers want."""
        return {p: list(a.replicas) for p, a in sorted(self.assignment.items())}


class TopicsZNode:
    @staticmethod
    def path() -> str:
        return f"{BrokersZNode.path()}/topics"


class TopicZNode:
    """/brokers/topics/<topic>: version 3 carries the topic id (Kafka 2.8); 1 and 2 do not."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.path()}/{topic}"

    @staticmethod
    def encode(topic_id: str | None, assignment: Mapping[int, ReplicaAssignment | Sequence[int]]) -> bytes:
        partitions: dict[str, list[int]] = {}
        adding: dict[str, list[int]] = {}
        removing: dict[str, list[int]] = {}
        for p in sorted(assignment):
            a = assignment[p]
            ra = a if isinstance(a, ReplicaAssignment) else ReplicaAssignment(tuple(a))
            partitions[str(p)] = list(ra.replicas)
            if ra.adding_replicas:
                adding[str(p)] = list(ra.adding_replicas)
            if ra.removing_replicas:
                removing[str(p)] = list(ra.removing_replicas)
        # Key order is that of Kafka 2.8's mutable.HashMap with these keys.
        js: dict[str, Any] = {"removing_replicas": removing, "partitions": partitions}
        if topic_id is not None:
            js["topic_id"] = topic_id
        js["adding_replicas"] = adding
        js["version"] = 3
        return encode_json(js)

    @staticmethod
    def decode(topic: str, data: bytes) -> TopicIdReplicaAssignment:
        js = decode_json(data)
        if js is None:
            return TopicIdReplicaAssignment(topic, None, {})
        try:
            adding = js.get("adding_replicas") or {}
            removing = js.get("removing_replicas") or {}
            assignment = {
                int(p): ReplicaAssignment(
                    tuple(replicas), tuple(adding.get(p, ())), tuple(removing.get(p, ()))
                )
                for p, replicas in (js.get("partitions") or {}).items()
            }
            return TopicIdReplicaAssignment(topic, js.get("topic_id"), assignment)
        except (AttributeError, TypeError, ValueError) as e:
            raise ZkDataError(f"Failed to parse assignment of topic {topic}: {data!r}") from e


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionsZNode.path(tp.topic)}/{tp.partition}"


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """Leader, leader epoch and ISR of a partition, with the zk version of the state znode
    they were read from (the version a conditional update must match)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = INITIAL_PARTITION_EPOCH

    # Built directly rather than with dataclasses.replace (a third of its cost): the controller
    # makes two per partition whose leader or ISR it changes, 20k in a 10k-partition controlled
    # shutdown, on its own thread.
    def new_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        """A new leader or ISR chosen by the controller: the leader epoch moves on."""
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr), self.zk_version)

    def new_isr(self, isr: Sequence[int]) -> LeaderAndIsr:
        """An ISR shrink/expand by the leader: the leader epoch stays (Kafka 2.8 behaviour)."""
        return LeaderAndIsr(self.leader, self.leader_epoch, tuple(isr), self.zk_version)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        return LeaderAndIsr(self.leader, self.leader_epoch, self.isr, zk_version)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    leader_and_isr: LeaderAndIsr
    controller_epoch: int


class TopicPartitionStateZNode:
    """/brokers/topics/<t>/partitions/<p>/state."""

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionZNode.path(tp)}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        lai = state.leader_and_isr
        # Key order is the one Kafka's immutable five-entry HashMap produces.
        return encode_json(
            {
                "controller_epoch": state.controller_epoch,
                "leader": lai.leader,
                "version": 1,
                "leader_epoch": lai.leader_epoch,
                "isr": list(lai.isr),
            }
        )

    @staticmethod
    def decode(data: bytes, zk_version: int) -> LeaderIsrAndControllerEpoch | None:
        js = decode_json(data)
        if js is None:
            return None
        try:
            lai = LeaderAndIsr(
                int(js["leader"]), int(js["leader_epoch"]), tuple(int(b) for b in js["isr"]), zk_version
            )
            return LeaderIsrAndControllerEpoch(lai, int(js["controller_epoch"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"Failed to parse partition state {data!r}") from e
