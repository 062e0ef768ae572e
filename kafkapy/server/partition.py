"""Partition: one topic partition's replica on this broker, leader or follower.

The leader tracks every follower's fetch position and decides, as Kafka 2.8's Partition does:
- the high watermark: the smallest log end offset among the "maximal" ISR (the ISR plus a
  change still being written to ZooKeeper) and the followers caught up within
  replica.lag.time.max.ms, never moving backwards;
- ISR expansion: a follower outside the ISR whose log end offset reached both the high
  watermark and the offset where this leader's epoch began;
- ISR shrinking: a follower in the ISR whose log end offset differs from the leader's and who
  was last caught up more than replica.lag.time.max.ms ago.
The decisions are pure (times come in as arguments); writing an ISR change to ZooKeeper is the
IsrManager's job, and while one is in flight (`pending_isr`) no other change is proposed.

Everything here runs on the event loop; followers' appends happen in the fetcher threads and
touch only the Log, which has its own lock.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.constants import (
    NO_PARTITION_LEADER_EPOCH,
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    UNKNOWN_OFFSET,
    ZERO_UUID,
)
from kafkapy.protocol.errors import (
    FencedLeaderEpochException,
    NotEnoughReplicasAfterAppendException,
    NotEnoughReplicasException,
    NotLeaderOrFollowerException,
    UnknownLeaderEpochException,
)
from kafkapy.protocol.generated.leader_and_isr_request import LeaderAndIsrPartitionState
from kafkapy.server.log.leader_epoch_cache import OffsetAndEpoch

if TYPE_CHECKING:
    from kafkapy.server.log.log import Log

log = logging.getLogger("kafkapy.cluster.Partition")
state_change_log = logging.getLogger("state.change.logger")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class RemoteReplica:
    """The leader's view of one follower, updated by that follower's fetches."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    # The follower's log start offset as its last fetch reported it: DeleteRecords waits for it.
    log_start_offset: int = UNKNOWN_OFFSET

    def update_fetch_state(self, fetch_offset: int, fetch_ms: int, leader_end_offset: int) -> None:
        # A follower that reached the leader's end offset as of this fetch, or the end offset the
        # leader had at its previous fetch, was caught up then: frequent small produces must not
        # keep a follower that always trails by one request out of the ISR.
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, fetch_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_ms = fetch_ms

    def reset(self, leader_end_offset: int, at_ms: int, caught_up_ms: int, new_epoch: bool) -> None:
        """A LeaderAndIsr for this leader: catch-up times start over (a replica the controller
        took out of the ISR no longer holds the high watermark back); in a new leader epoch the
        follower's position is also unknown until it fetches again."""
        if new_epoch:
            self.log_end_offset = UNKNOWN_OFFSET
            self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_ms = at_ms
        self.last_caught_up_ms = caught_up_ms


@dataclass(slots=True)
class Partition:
    tp: TopicPartition
    local_broker_id: int
    log: Any  # kafkapy.server.log.log.Log
    replica_lag_time_max_ms: int = 30000
    topic_id: uuid.UUID = ZERO_UUID
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1  # the zk version of the partition's state znode
    controller_epoch: int = -1
    assignment: tuple[int, ...] = ()
    isr: frozenset[int] = frozenset()
    pending_isr: frozenset[int] | None = None  # an ISR change being written to ZooKeeper
    leader_epoch_start_offset: int = UNKNOWN_OFFSET
    remote_replicas: dict[int, RemoteReplica] = field(default_factory=dict)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the high watermark must respect: while a change is in flight, both the old
        and the new members (a shrink is not final yet, an expansion must already count)."""
        return self.isr if self.pending_isr is None else self.isr | self.pending_isr

    # -- LeaderAndIsr ---------------------------------------------------------------------------

    def make_leader(
        self,
        state: LeaderAndIsrPartitionState,
        controller_epoch: int,
        topic_id: uuid.UUID,
        at_ms: int | None = None,
    ) -> bool:
        """Apply a LeaderAndIsr partition state naming this broker leader; True if it is new."""
        at_ms = now_ms() if at_ms is None else at_ms
        was_leader = self.is_leader
        previous_epoch = self.leader_epoch
        new_epoch = state.leader_epoch > self.leader_epoch or not was_leader
        self._apply_state(state, controller_epoch, topic_id)
        leo = self.log.log_end_offset
        if new_epoch:
            self.leader_epoch_start_offset = leo
            # Cached before any record is written in it: a follower holding records of a
            # later epoch than any we have must still learn where ours began (KIP-101).
            self.log.maybe_assign_epoch_start_offset(self.leader_epoch, leo)
            state_change_log.info(
                "[Broker id=%d] Leader %s starts at leader epoch %d from offset %d with high watermark %d. "
                "Previous leader epoch was %d.", self.local_broker_id, self.tp, self.leader_epoch, leo,
                self.log.high_watermark, previous_epoch,
            )  # fmt: skip
        old = self.remote_replicas
        self.remote_replicas = {}
        for r in self.assignment:
            if r == self.local_broker_id:
                continue
            replica = old.get(r) or RemoteReplica(r)
            # Followers in the ISR get a full lag period to fetch from this leader, as in Kafka.
            replica.reset(leo, at_ms, at_ms if r in self.isr else 0, new_epoch)
            self.remote_replicas[r] = replica
        self.maybe_increment_high_watermark(at_ms)
        return not was_leader

    def make_follower(
        self, state: LeaderAndIsrPartitionState, controller_epoch: int, topic_id: uuid.UUID
    ) -> bool:
        """True if the leader or its epoch changed (the fetcher must start over)."""
        changed = self.leader_id != state.leader or state.leader_epoch != self.leader_epoch
        self._apply_state(state, controller_epoch, topic_id)
        self.remote_replicas = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET
        result: bool = changed
        return result

    def _apply_state(
        self, state: LeaderAndIsrPartitionState, controller_epoch: int, topic_id: uuid.UUID
    ) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = controller_epoch
        self.assignment = tuple(state.replicas)
        self.isr = frozenset(state.isr)
        self.pending_isr = None  # the controller's state supersedes whatever we were writing
        if topic_id.int:
            self.topic_id = topic_id

    # -- requests stamped with a leader epoch (KIP-320) ------------------------------------------

    def check_current_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's checkCurrentLeaderEpoch: a request naming an older leader epoch than ours
        comes from a client or follower with stale metadata (FENCED_LEADER_EPOCH); a newer one
        means this broker has not yet heard of the new leadership (UNKNOWN_LEADER_EPOCH). Both
        are retriable: the sender refreshes its metadata. No epoch named passes.

        Hot paths compare `current_leader_epoch != partition.leader_epoch` before calling this,
        so a matching epoch costs one integer comparison.
        """
        local = self.leader_epoch
        if current_leader_epoch == NO_PARTITION_LEADER_EPOCH or current_leader_epoch == local:
            return
        error = FencedLeaderEpochException if current_leader_epoch < local else UnknownLeaderEpochException
        raise error(
            f"Failed to find log for partition {self.tp} with leader epoch {current_leader_epoch}. "
            f"The current leader is {self.leader_id} and the current epoch {local}"
        )

    def local_log_with_epoch(self, current_leader_epoch: int, require_leader: bool) -> Log:
        """Kafka's localLogWithEpochOrException: the epoch is checked before leadership, so a
        stale client asking a former leader hears FENCED_LEADER_EPOCH."""
        if current_leader_epoch != self.leader_epoch:
            self.check_current_leader_epoch(current_leader_epoch)
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerException(
                f"Leader not local for partition {self.tp} on broker {self.local_broker_id}"
            )
        result: Log = self.log
        return result

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int, fetch_only_from_leader: bool
    ) -> OffsetAndEpoch:
        """OffsetForLeaderEpoch for this partition: where `leader_epoch` ended in our log, and
        the largest epoch <= it that we know; (UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH) when
        the log cannot place it. Raises the fencing and leadership errors."""
        found = self.local_log_with_epoch(current_leader_epoch, fetch_only_from_leader).end_offset_for_epoch(
            leader_epoch
        )
        return found if found is not None else OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)

    # -- leader side ----------------------------------------------------------------------------

    def append_records_to_leader(
        self, records: Any, required_acks: int, from_coordinator: bool = False
    ) -> Any:
        if not self.is_leader:
            raise NotLeaderOrFollowerException(
                f"Leader not local for partition {self.tp} on broker {self.local_broker_id}"
            )
        if required_acks == -1 and len(self.isr) < (min_isr := self.log.config.min_insync_replicas):
            raise NotEnoughReplicasException(
                f"The size of the current ISR {sorted(self.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.tp}"
            )
        info = self.log.append_as_leader(records, self.leader_epoch, from_coordinator=from_coordinator)
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self, at_ms: int | None = None) -> bool:
        """Move the high watermark up to what every replica that counts has; True if it moved."""
        if not self.is_leader:
            return False
        log = self.log
        new_hw = log.log_end_offset
        if self.remote_replicas:  # a single-replica partition runs this on every produce
            at_ms = now_ms() if at_ms is None else at_ms
            maximal = self.maximal_isr
            for r in self.remote_replicas.values():
                counts = r.broker_id in maximal or at_ms - r.last_caught_up_ms <= self.replica_lag_time_max_ms
                if counts and r.log_end_offset < new_hw:
                    new_hw = r.log_end_offset
        if new_hw > log.high_watermark:
            log.high_watermark = new_hw
            return True
        return False

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, at_ms: int | None = None
    ) -> tuple[bool, frozenset[int] | None]:
        """Record a follower's fetch: (high watermark moved, ISR to propose or None)."""
        remote = self.remote_replicas.get(replica_id)
        if remote is None or not self.is_leader:
            return False, None
        at_ms = now_ms() if at_ms is None else at_ms
        remote.update_fetch_state(fetch_offset, at_ms, self.log.log_end_offset)
        expanded = self.isr_to_expand(replica_id)
        return self.maybe_increment_high_watermark(at_ms), expanded

    def isr_to_expand(self, replica_id: int) -> frozenset[int] | None:
        """The ISR with `replica_id` added, if it has caught up and may join now."""
        if self.pending_isr is not None or replica_id in self.isr or replica_id not in self.assignment:
            return None
        remote = self.remote_replicas.get(replica_id)
        if remote is None:
            return None
        leo = remote.log_end_offset
        # Reaching the start of this leader's epoch means the follower truncated and refetched
        # whatever it had from an earlier leader; only then is its log a prefix of ours.
        if leo >= self.log.high_watermark and leo >= self.leader_epoch_start_offset >= 0:
            return self.isr | {replica_id}
        return None

    def out_of_sync_replicas(self, at_ms: int) -> frozenset[int]:
        """Followers in the ISR that have not caught up within replica.lag.time.max.ms."""
        if self.pending_isr is not None or not self.is_leader:
            return frozenset()
        leader_end = self.log.log_end_offset
        out = set()
        for r in self.isr - {self.local_broker_id}:
            remote = self.remote_replicas.get(r)
            if remote is None or (
                remote.log_end_offset != leader_end
                and at_ms - remote.last_caught_up_ms > self.replica_lag_time_max_ms
            ):
                out.add(r)
        return frozenset(out)

    def check_enough_replicas_reached(self, required_offset: int) -> tuple[bool, int]:
        """For acks=all: (done, error code). Done once the high watermark passes the offset."""
        if not self.is_leader:
            return True, NotLeaderOrFollowerException.code
        if self.log.high_watermark >= required_offset:
            if len(self.isr) < self.log.config.min_insync_replicas:
                return True, NotEnoughReplicasAfterAppendException.code
            return True, 0
        return False, 0

    def low_watermark(self, alive_brokers: Collection[int]) -> int:
        """Kafka's lowWatermarkIfLeader: the smallest log start offset of this replica and every
        follower on a live broker (a dead one cannot hold a DeleteRecords back)."""
        low = self.log.log_start_offset
        for r in self.remote_replicas.values():
            if r.broker_id in alive_brokers and r.log_start_offset < low:
                low = r.log_start_offset
        result: int = low
        return result

    def describe_replicas(self, ids: frozenset[int]) -> str:
        return " ".join(
            f"(brokerId: {r}, endOffset: {self.remote_replicas[r].log_end_offset})"
            for r in sorted(ids)
            if r in self.remote_replicas
        )
