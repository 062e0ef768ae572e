"""Partition: one topic partition's replica on this broker, leader or follower.

The leader tracks the ISR and the high watermark (the smallest log end offset among the ISR).
Followers' fetch positions arrive through `update_follower_fetch_state` (the replica fetchers of
the replication work slot in there); with the leader alone in the ISR, the high watermark
follows the log end offset on every append.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkapy.protocol.errors import (
    NotEnoughReplicasException,
    NotLeaderOrFollowerException,
)
from kafkapy.server.log.topic_partition import TopicPartition

state_change_log = logging.getLogger("state.change.logger")


@dataclass(slots=True)
class RemoteReplica:
    broker_id: int
    log_end_offset: int = -1
    last_caught_up_ms: int = 0


@dataclass(slots=True)
class Partition:
    tp: TopicPartition
    local_broker_id: int
    log: Any  # kafkapy.server.log.log.Log
    topic_id: uuid.UUID = field(default_factory=lambda: uuid.UUID(int=0))
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    controller_epoch: int = -1
    assignment: tuple[int, ...] = ()
    isr: frozenset[int] = frozenset()
    remote_replicas: dict[int, RemoteReplica] = field(default_factory=dict)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    def make_leader(self, state: Any, controller_epoch: int, topic_id: uuid.UUID) -> bool:
        """Apply a LeaderAndIsr partition state naming this broker leader; True if it is new."""
        was_leader = self.is_leader
        self._apply_state(state, controller_epoch, topic_id)
        now = int(time.time() * 1000)
        self.remote_replicas = {
            r: self.remote_replicas.get(r, RemoteReplica(r, -1, now))
            for r in self.assignment
            if r != self.local_broker_id
        }
        self.maybe_increment_high_watermark()
        return not was_leader

    def make_follower(self, state: Any, controller_epoch: int, topic_id: uuid.UUID) -> bool:
        changed = self.leader_id != state.leader
        self._apply_state(state, controller_epoch, topic_id)
        self.remote_replicas = {}
        return changed

    def _apply_state(self, state: Any, controller_epoch: int, topic_id: uuid.UUID) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = controller_epoch
        self.assignment = tuple(state.replicas)
        self.isr = frozenset(state.isr)
        if topic_id.int:
            self.topic_id = topic_id

    # -- leader side ----------------------------------------------------------------------------

    def append_records_to_leader(self, records: Any, required_acks: int) -> Any:
        if not self.is_leader:
            raise NotLeaderOrFollowerException(
                f"Leader not local for partition {self.tp} on broker {self.local_broker_id}"
            )
        min_isr = self.log.config.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasException(
                f"The size of the current ISR {sorted(self.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.tp}"
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self) -> bool:
        leo = self.log.log_end_offset
        for r in self.isr:
            if r != self.local_broker_id:
                remote = self.remote_replicas.get(r)
                leo = min(leo, remote.log_end_offset if remote else -1)
        if leo > self.log.high_watermark:
            self.log.high_watermark = leo
            return True
        return False

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> bool:
        remote = self.remote_replicas.get(replica_id)
        if remote is None:
            return False
        remote.log_end_offset = fetch_offset
        if fetch_offset >= self.log.log_end_offset:
            remote.last_caught_up_ms = int(time.time() * 1000)
        return self.maybe_increment_high_watermark()

    def check_enough_replicas_reached(self, required_offset: int) -> tuple[bool, int]:
        """For acks=all: (done, error code). Done once the high watermark passes the offset."""
        if not self.is_leader:
            return True, NotLeaderOrFollowerException.code
        if self.log.high_watermark >= required_offset:
            if len(self.isr) < self.log.config.min_insync_replicas:
                return True, 20  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return True, 0
        return False, 0
