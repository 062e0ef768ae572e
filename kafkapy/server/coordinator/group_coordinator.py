"""GroupCoordinator: Kafka 2.8's group coordinator on the broker's event loop, built from
collaborators with one responsibility each:

  GroupMetadataManager (group_metadata_manager.py)  groups and offsets in __consumer_offsets
  Rebalancer (group_rebalance.py)                   the rebalance and the members' sessions
  GroupMembership (group_membership.py)             JoinGroup, SyncGroup, Heartbeat, LeaveGroup
  GroupOffsets (group_offsets.py)                   offset commits and fetches, group admin

This class owns their lifecycle (startup, shutdown, __consumer_offsets leadership) and the
request validation they share; the API handlers call the request methods it exposes.
Results are values: error codes, per-partition error maps and the generated response structs
(JoinGroupResponse, SyncGroupResponse, DescribedGroup), which the API handlers adjust to each
version.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    InvalidGroupIdException,
    NotCoordinatorException,
)
from kafkapy.server.coordinator.group_membership import GroupMembership
from kafkapy.server.coordinator.group_metadata_manager import GroupMetadataManager
from kafkapy.server.coordinator.group_offsets import GroupOffsets
from kafkapy.server.coordinator.group_rebalance import Rebalancer
from kafkapy.server.coordinator.timers import Timers
from kafkapy.server.coordinator.txn_offsets import PendingTxnOffsets

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")


class GroupCoordinator:
    LOAD_IN_PROGRESS = CoordinatorLoadInProgressException.code

    def __init__(self, broker_id: int, config: Any, replica_manager: Any) -> None:
        self.broker_id = broker_id
        self.config = config
        self.manager = GroupMetadataManager(broker_id, config, replica_manager)
        self.timers = Timers()
        self.active = False
        self._expiry_task: asyncio.Task[None] | None = None
        self.offsets_topic_creation: asyncio.Future[None] | None = None  # FindCoordinator's, shared
        self.pending_txn_offsets: PendingTxnOffsets = self.manager.pending_txn_offsets
        self.rebalance = Rebalancer(config, self.manager, self.timers)
        self.manager.on_group_loaded = self.rebalance.on_group_loaded
        self.manager.on_group_unloaded = self.rebalance.on_group_unloaded
        self.membership = GroupMembership(
            config, self.manager, self.timers, self.rebalance, self.validate_group
        )
        self.offsets = GroupOffsets(
            config, self.manager, self.rebalance, self.validate_group, lambda: self.active
        )
        # The requests the API handlers make, answered by the collaborator that owns each.
        self.join_group = self.membership.join_group
        self.sync_group = self.membership.sync_group
        self.heartbeat = self.membership.heartbeat
        self.leave_group = self.membership.leave_group
        self.commit_offsets = self.offsets.commit_offsets
        self.commit_txn_offsets = self.offsets.commit_txn_offsets
        self.complete_txn_offsets = self.offsets.complete_txn_offsets
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = self.offsets.delete_offsets
        self.describe_group = self.offsets.describe_group
        self.list_groups = self.offsets.list_groups
        self.delete_groups = self.offsets.delete_groups

    # -- lifecycle ------------------------------------------------------------------------------

    def startup(self) -> None:
        self.active = True
        self._expiry_task = asyncio.ensure_future(self._expire_offsets_periodically())
        log.info("[GroupCoordinator %d]: Startup complete.", self.broker_id)

    def shutdown(self) -> None:
        self.active = False
        if self._expiry_task is not None:
            self._expiry_task.cancel()
        for partition in sorted(self.manager.owned_partitions | self.manager.loading_partitions):
            self.manager.unload_partition(partition)
        self.timers.cancel_all()
        log.info("[GroupCoordinator %d]: Shutdown complete.", self.broker_id)

    def on_elected(self, partition: int) -> None:
        """This broker now leads __consumer_offsets-`partition`: load its groups."""
        self.manager.schedule_load(partition)

    def on_resigned(self, partition: int) -> None:
        if partition in self.manager.owned_partitions or partition in self.manager.loading_partitions:
            self.manager.unload_partition(partition)

    async def _expire_offsets_periodically(self) -> None:
        interval_s = int(self.config.offsets_retention_check_interval_ms) / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.manager.cleanup_expired_offsets()
            except Exception:
                log.exception("Error expiring offsets")

    # -- validation shared by membership and offsets --------------------------------------------

    def validate_group(self, group_id: str | None, membership: bool = False) -> int:
        """Kafka's validateGroupStatus: the error for a request about `group_id`, or 0."""
        if group_id is None or (membership and group_id == ""):
            return InvalidGroupIdException.code
        if not self.active:
            return CoordinatorNotAvailableException.code
        if self.manager.is_group_loading(group_id):
            return CoordinatorLoadInProgressException.code
        if not self.manager.is_group_local(group_id):
            return NotCoordinatorException.code
        return 0
