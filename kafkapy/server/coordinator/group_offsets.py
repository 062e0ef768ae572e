"""The coordinator's lifecycle, request validation, offsets and group administration.

OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and DeleteGroups, with Kafka
2.8's rules: commits need the member's current generation unless the group only stores offsets
(generation -1 on an empty group: consumers that use assign()); offsets deleted or expired and
deleted groups leave tombstones in __consumer_offsets. The membership protocol itself is in
group_coordinator.py, which builds the GroupCoordinator on this class.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    FencedInstanceIdException,
    GroupIdNotFoundException,
    GroupNotEmptyException,
    GroupSubscribedToTopicException,
    IllegalGenerationException,
    InvalidGroupIdException,
    NotCoordinatorException,
    OffsetMetadataTooLarge,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_metadata_manager import GroupMetadataManager
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata
from kafkapy.server.coordinator.timers import Timers
from kafkapy.server.coordinator.txn_offsets import (
    PendingTxnOffsets,
    complete_txn_offsets,
    store_txn_offsets,
    txn_offset_commit_group,
)

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState
TopicPartitionKey = tuple[str, int]


def join_error(member_id: str, error: int) -> dict[str, Any]:
    return {
        "error_code": error,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


class GroupOffsetsMixin:
    LOAD_IN_PROGRESS = CoordinatorLoadInProgressException.code

    def __init__(self, broker_id: int, config: Any, replica_manager: Any) -> None:
        self.broker_id = broker_id
        self.config = config
        self.manager = GroupMetadataManager(broker_id, config, replica_manager)
        self.manager.on_group_loaded = self._on_group_loaded  # type: ignore[attr-defined]
        self.manager.on_group_unloaded = self._on_group_unloaded  # type: ignore[attr-defined]
        self.timers = Timers()
        self.initial_delay: set[str] = set()  # groups whose first rebalance waits for more members
        self.active = False
        self._expiry_task: asyncio.Task[None] | None = None
        self.offsets_topic_creation: asyncio.Future[None] | None = None  # FindCoordinator's, shared
        self.pending_txn_offsets: PendingTxnOffsets = self.manager.pending_txn_offsets

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

    # -- OffsetCommit ---------------------------------------------------------------------------

    async def commit_offsets(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
        offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    ) -> dict[TopicPartitionKey, int]:  # fmt: skip
        err = self.validate_group(group_id)
        if err:
            return dict.fromkeys(offsets, err)
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:  # a commit from an older generation of a group we no longer have
                return dict.fromkeys(offsets, IllegalGenerationException.code)
            group = self.manager.add_group(GroupMetadata(group_id))
        if group.is_state(S.DEAD):
            err = CoordinatorNotAvailableException.code
        elif group.is_static_member_fenced(member_id, instance_id):
            err = FencedInstanceIdException.code
        elif generation_id < 0 and group.is_state(S.EMPTY):
            return await self._store_offsets(group, offsets)
        elif group.is_state(S.COMPLETING_REBALANCE):
            err = RebalanceInProgressException.code
        elif not group.has(member_id):
            err = UnknownMemberIdException.code
        elif generation_id != group.generation_id:
            err = IllegalGenerationException.code
        if err:
            return dict.fromkeys(offsets, err)
        member = group.get(member_id)
        self._schedule_heartbeat(group, member, member.session_timeout_ms)  # type: ignore[attr-defined]
        return await self._store_offsets(group, offsets)

    async def _store_offsets(
        self, group: GroupMetadata, offsets: dict[TopicPartitionKey, OffsetAndMetadata]
    ) -> dict[TopicPartitionKey, int]:
        limit = int(self.config.offset_metadata_max_bytes)
        result: dict[TopicPartitionKey, int] = {}
        valid = {}
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode()) > limit:
                result[tp] = OffsetMetadataTooLarge.code
            else:
                valid[tp] = om
        if valid:
            code = await self.manager.store_offsets(group, valid)
            result.update(dict.fromkeys(valid, code))
        return {tp: result[tp] for tp in offsets}

    # -- TxnOffsetCommit (txn_offsets.py) ------------------------------------------------------

    async def commit_txn_offsets(
        self, group_id: str, producer_id: int, producer_epoch: int,
        offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    ) -> dict[TopicPartitionKey, int]:  # fmt: skip
        err = self.validate_group(group_id)
        if err:
            return dict.fromkeys(offsets, err)
        group = txn_offset_commit_group(self.manager, group_id)
        code = await store_txn_offsets(
            self.manager, self.pending_txn_offsets, group, producer_id, producer_epoch, offsets
        )
        return dict.fromkeys(offsets, code)

    def complete_txn_offsets(self, producer_id: int, partition: int, committed: bool) -> None:
        complete_txn_offsets(self.manager, self.pending_txn_offsets, producer_id, partition, committed)

    # -- OffsetFetch and OffsetDelete -----------------------------------------------------------

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartitionKey] | None
    ) -> tuple[int, dict[TopicPartitionKey, OffsetAndMetadata | None]]:
        """(error, offsets); `partitions=None` asks for every partition the group has an offset for."""
        err = self.validate_group(group_id)
        if err:
            return err, {}
        group = self.manager.get_group(group_id)
        stored = group.offsets if group is not None and not group.is_state(S.DEAD) else {}
        if partitions is None:
            return 0, dict(sorted(stored.items()))
        return 0, {tp: stored.get(tp) for tp in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartitionKey]
    ) -> tuple[int, dict[TopicPartitionKey, int]]:
        err = self.validate_group(group_id)
        if err:
            return err, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_state(S.DEAD):
            return GroupIdNotFoundException.code, {}
        errors: dict[TopicPartitionKey, int] = {}
        if group.is_state(S.EMPTY):
            deletable = list(partitions)
        else:
            subscribed = group.subscribed_topics()
            if subscribed is None:  # not a consumer group: we cannot tell what it uses
                return GroupNotEmptyException.code, {}
            deletable = [tp for tp in partitions if tp[0] not in subscribed]
            errors.update(
                {tp: GroupSubscribedToTopicException.code for tp in partitions if tp[0] in subscribed}
            )
        removed = [tp for tp in deletable if group.offsets.pop(tp, None) is not None]
        code = await self.manager.write_tombstones(group_id, removed)
        errors.update(dict.fromkeys(deletable, code))
        # Partition errors stay per partition; the group itself was found and usable.
        return 0, {tp: errors[tp] for tp in partitions}

    # -- DescribeGroups, ListGroups, DeleteGroups -----------------------------------------------

    def describe_group(self, group_id: str) -> tuple[int, dict[str, Any]]:
        err = self.validate_group(group_id)
        group = self.manager.get_group(group_id) if not err else None
        if group is None:
            return err, {"group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": []}
        stable = group.is_state(S.STABLE)
        protocol = group.protocol_name if stable else None
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata(protocol) if protocol is not None else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ]
        return 0, {
            "group_state": str(group.state),
            "protocol_type": group.protocol_type or "",
            "protocol_data": protocol or "",
            "members": members,
        }

    def list_groups(self, states: set[str] | None) -> tuple[int, list[GroupMetadata]]:
        if not self.active:
            return CoordinatorNotAvailableException.code, []
        wanted = {s.lower() for s in states} if states else None
        groups = [
            g for g in self.manager.current_groups() if wanted is None or str(g.state).lower() in wanted
        ]
        err = CoordinatorLoadInProgressException.code if self.manager.is_loading() else 0
        return err, groups

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        result: dict[str, int] = {}
        for group_id in group_ids:
            err = self.validate_group(group_id)
            if err:
                result[group_id] = err
                continue
            group = self.manager.get_group(group_id)
            if group is None or group.is_state(S.DEAD):
                result[group_id] = GroupIdNotFoundException.code
            elif not group.is_state(S.EMPTY):
                result[group_id] = GroupNotEmptyException.code
            else:
                group.transition_to(S.DEAD)
                self.manager.groups.pop(group_id, None)
                partitions = list(group.offsets)
                group.offsets.clear()
                code = await self.manager.write_tombstones(group_id, partitions, include_group=True)
                result[group_id] = code
                log.info("Deleted group %s (%d offsets)", group_id, len(partitions))
        return result
