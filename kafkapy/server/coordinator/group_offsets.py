"""GroupOffsets: offsets and group administration for the GroupCoordinator.

OffsetCommit, OffsetFetch, OffsetDelete, TxnOffsetCommit, DescribeGroups, ListGroups and
DeleteGroups, with Kafka 2.8's rules: commits need the member's current generation unless the
group only stores offsets (generation -1 on an empty group: consumers that use assign()); a
member's commit extends its session (the Rebalancer's); offsets deleted or expired and deleted
groups leave tombstones in __consumer_offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    FencedInstanceIdException,
    GroupIdNotFoundException,
    GroupNotEmptyException,
    GroupSubscribedToTopicException,
    IllegalGenerationException,
    OffsetMetadataTooLarge,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.protocol.generated.describe_groups_response import DescribedGroup, DescribedGroupMember
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_metadata_manager import GroupMetadataManager
from kafkapy.server.coordinator.group_rebalance import Rebalancer
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata
from kafkapy.server.coordinator.txn_offsets import (
    PendingTxnOffsets,
    complete_txn_offsets,
    store_txn_offsets,
    txn_offset_commit_group,
)

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState
TopicPartitionKey = tuple[str, int]
# GroupCoordinator.validate_group: (group id, is a membership request) -> error code or 0
Validate = Callable[[str | None, bool], int]


class GroupOffsets:
    def __init__(
        self, config: Any, manager: GroupMetadataManager, rebalance: Rebalancer, validate: Validate,
        is_active: Callable[[], bool],
    ) -> None:  # fmt: skip
        self._config = config
        self._manager = manager
        self._rebalance = rebalance
        self._validate = validate
        self._is_active = is_active
        self._pending_txn_offsets: PendingTxnOffsets = manager.pending_txn_offsets

    async def commit_offsets(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
        offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    ) -> dict[TopicPartitionKey, int]:  # fmt: skip
        err = self._validate(group_id, False)
        if err:
            return dict.fromkeys(offsets, err)
        group = self._manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:  # a commit from an older generation of a group we no longer have
                return dict.fromkeys(offsets, IllegalGenerationException.code)
            group = self._manager.add_group(GroupMetadata(group_id))
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
        self._rebalance.schedule_heartbeat(group, member, member.session_timeout_ms)
        return await self._store_offsets(group, offsets)

    async def _store_offsets(
        self, group: GroupMetadata, offsets: dict[TopicPartitionKey, OffsetAndMetadata]
    ) -> dict[TopicPartitionKey, int]:
        limit = int(self._config.offset_metadata_max_bytes)
        result: dict[TopicPartitionKey, int] = {}
        valid = {}
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode()) > limit:
                result[tp] = OffsetMetadataTooLarge.code
            else:
                valid[tp] = om
        if valid:
            code = await self._manager.store_offsets(group, valid)
            result.update(dict.fromkeys(valid, code))
        return {tp: result[tp] for tp in offsets}

    async def commit_txn_offsets(
        self, group_id: str, producer_id: int, producer_epoch: int,
        offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    ) -> dict[TopicPartitionKey, int]:  # fmt: skip
        err = self._validate(group_id, False)
        if err:
            return dict.fromkeys(offsets, err)
        group = txn_offset_commit_group(self._manager, group_id)
        code = await store_txn_offsets(
            self._manager, self._pending_txn_offsets, group, producer_id, producer_epoch, offsets
        )
        return dict.fromkeys(offsets, code)

    def complete_txn_offsets(self, producer_id: int, partition: int, committed: bool) -> None:
        complete_txn_offsets(self._manager, self._pending_txn_offsets, producer_id, partition, committed)

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartitionKey] | None
    ) -> tuple[int, dict[TopicPartitionKey, OffsetAndMetadata | None]]:
        """(error, offsets); `partitions=None` asks for every partition the group has an offset for."""
        err = self._validate(group_id, False)
        if err:
            return err, {}
        group = self._manager.get_group(group_id)
        stored = group.offsets if group is not None and not group.is_state(S.DEAD) else {}
        if partitions is None:
            return 0, dict(sorted(stored.items()))
        return 0, {tp: stored.get(tp) for tp in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartitionKey]
    ) -> tuple[int, dict[TopicPartitionKey, int]]:
        err = self._validate(group_id, False)
        if err:
            return err, {}
        group = self._manager.get_group(group_id)
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
        code = await self._manager.write_tombstones(group_id, removed)
        errors.update(dict.fromkeys(deletable, code))
        # Partition errors stay per partition; the group itself was found and usable.
        return 0, {tp: errors[tp] for tp in partitions}

    def describe_group(self, group_id: str) -> DescribedGroup:
        """The group's DescribeGroups entry; the handler fills in `authorized_operations`."""
        err = self._validate(group_id, False)
        group = self._manager.get_group(group_id) if not err else None
        if group is None:
            return DescribedGroup(
                error_code=err, group_id=group_id, group_state="Dead", protocol_type="", protocol_data=""
            )
        stable = group.is_state(S.STABLE)
        protocol = group.protocol_name if stable else None
        members = [
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(protocol) if protocol is not None else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        return DescribedGroup(
            error_code=0,
            group_id=group_id,
            group_state=str(group.state),
            protocol_type=group.protocol_type or "",
            protocol_data=protocol or "",
            members=members,
        )

    def list_groups(self, states: set[str] | None) -> tuple[int, list[GroupMetadata]]:
        if not self._is_active():
            return CoordinatorNotAvailableException.code, []
        wanted = {s.lower() for s in states} if states else None
        groups = [
            g for g in self._manager.current_groups() if wanted is None or str(g.state).lower() in wanted
        ]
        err = CoordinatorLoadInProgressException.code if self._manager.is_loading() else 0
        return err, groups

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        result: dict[str, int] = {}
        for group_id in group_ids:
            err = self._validate(group_id, False)
            if err:
                result[group_id] = err
                continue
            group = self._manager.get_group(group_id)
            if group is None or group.is_state(S.DEAD):
                result[group_id] = GroupIdNotFoundException.code
            elif not group.is_state(S.EMPTY):
                result[group_id] = GroupNotEmptyException.code
            else:
                group.transition_to(S.DEAD)
                self._manager.groups.pop(group_id, None)
                partitions = list(group.offsets)
                group.offsets.clear()
                code = await self._manager.write_tombstones(group_id, partitions, include_group=True)
                result[group_id] = code
                log.info("Deleted group %s (%d offsets)", group_id, len(partitions))
        return result
