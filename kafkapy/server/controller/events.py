"""The controller's events: frozen dataclasses, one per thing that can happen to the cluster.

ZooKeeper watch callbacks, the broker's API handlers and timers only construct one of these and
put it on the ControllerEventManager; all work happens in `KafkaController.process`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

from kafkapy.server.controller.leader_and_isr import ReplicaAssignment, TopicPartition


class ControllerEvent:
    """Base class; `name` is what logs and the event-queue metrics show."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, slots=True)
class Startup(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class ShutdownEventThread(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class ControllerChange(ControllerEvent):
    """/controller was created or changed: someone else may be the controller now."""


@dataclass(frozen=True, slots=True)
class Reelect(ControllerEvent):
    """/controller was deleted: the previous controller is gone, run the election."""


@dataclass(frozen=True, slots=True)
class Expire(ControllerEvent):
    """The ZooKeeper session expired: resign before the new session starts."""


@dataclass(frozen=True, slots=True)
class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session started: re-register this broker and run the election."""


@dataclass(frozen=True, slots=True)
class BrokerChange(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class BrokerModifications(ControllerEvent):
    broker_id: int


@dataclass(frozen=True, slots=True)
class TopicChange(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class PartitionModifications(ControllerEvent):
    topic: str


@dataclass(frozen=True, slots=True)
class TopicDeletion(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    replica_id: int
    request_error: int
    # partition -> error code, only for partitions of topics being deleted
    partition_errors: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    broker_id: int
    error_code: int
    partition_errors: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IsrChangeNotification(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class LogDirEventNotification(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class ReplicaLeaderElection(ControllerEvent):
    """Preferred replica election; `partitions=None` means "read /admin/preferred_replica_election"."""

    partitions: frozenset[TopicPartition] | None = None
    auto_triggered: bool = False


@dataclass(frozen=True, slots=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    pass


@dataclass(frozen=True, slots=True)
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created or changed."""


@dataclass(frozen=True, slots=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed: its target may be in sync now."""

    partition: TopicPartition


@dataclass(frozen=True, slots=True, eq=False)
class ApiPartitionReassignment(ControllerEvent):
    """AlterPartitionReassignments (KIP-455): partition -> target replicas, None to cancel."""

    reassignments: Mapping[TopicPartition, tuple[int, ...] | None]
    # Completed with partition -> error (None for success); NotControllerException if not active.
    future: Future[dict[TopicPartition, Exception | None]] = field(default_factory=Future)


@dataclass(frozen=True, slots=True, eq=False)
class ListPartitionReassignments(ControllerEvent):
    """ListPartitionReassignments (KIP-455); `partitions` None lists every ongoing one."""

    partitions: frozenset[TopicPartition] | None = None
    # Completed with partition -> its in-flight assignment (replicas, adding, removing).
    future: Future[dict[TopicPartition, ReplicaAssignment]] = field(default_factory=Future)


class ElectionType(enum.IntEnum):
    """ElectLeaders' election_type (org.apache.kafka.common.ElectionType)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True, eq=False)
class ElectLeaders(ControllerEvent):
    """ElectLeaders (43) from an admin client; `partitions` None means every partition."""

    election_type: ElectionType
    partitions: frozenset[TopicPartition] | None = None
    # Completed with partition -> its new leader, or the error that partition gets in the response.
    future: Future[dict[TopicPartition, int | Exception]] = field(default_factory=Future)


@dataclass(frozen=True, slots=True, eq=False)
class ControlledShutdown(ControllerEvent):
    broker_id: int
    broker_epoch: int
    # Completed with the set of partitions the broker still leads, or with the error.
    future: Future[set[TopicPartition]] = field(default_factory=Future)
