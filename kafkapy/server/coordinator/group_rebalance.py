"""Rebalancer: the rebalance itself and the members' sessions, on the broker's event loop.

Kafka 2.8's GroupCoordinator rebalance steps: PreparingRebalance (with the initial delay of an
empty group's first rebalance), completing the join once every member has rejoined or the
rebalance timeout passes, and the session timeouts that remove a silent member (loop timers per
member, pushed back by every heartbeat, join, sync and commit). GroupMembership (the JoinGroup,
SyncGroup, Heartbeat and LeaveGroup requests) and GroupOffsets (commits extend the session) call
it; the group metadata manager calls `on_group_loaded` / `on_group_unloaded`.

Results are values: the generated JoinGroupResponse / SyncGroupResponse bodies (`join_error`,
`join_result`, `sync_result`), which the API handlers adjust to each version.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.errors import (
    NotCoordinatorException,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.protocol.generated.join_group_response import JoinGroupResponse, JoinGroupResponseMember
from kafkapy.protocol.generated.sync_group_response import SyncGroupResponse
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_metadata_manager import GroupMetadataManager
from kafkapy.server.coordinator.member_metadata import MemberMetadata
from kafkapy.server.coordinator.timers import Timers

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState


def join_error(member_id: str, error: int) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error,
        generation_id=-1,
        protocol_type=None,
        protocol_name=None,
        leader="",
        member_id=member_id,
        members=[],
    )


def sync_result(error: int, group: GroupMetadata | None = None, assignment: bytes = b"") -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=error,
        protocol_type=group.protocol_type if group else None,
        protocol_name=group.protocol_name if group else None,
        assignment=assignment,
    )


class Rebalancer:
    def __init__(self, config: Any, manager: GroupMetadataManager, timers: Timers) -> None:
        self._config = config
        self._manager = manager
        self._timers = timers
        self._initial_delay: set[str] = set()  # groups whose first rebalance waits for more members

    # -- the rebalance --------------------------------------------------------------------------

    def join_result(self, group: GroupMetadata, member: MemberMetadata, error: int = 0) -> JoinGroupResponse:
        members = []
        if group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                JoinGroupResponseMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata(group.protocol_name),
                )
                for m in group.members.values()
            ]
        return JoinGroupResponse(
            error_code=error,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    def maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_state(S.COMPLETING_REBALANCE):
            self.propagate_assignment_error(group, RebalanceInProgressException.code)
        was_empty = group.is_state(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE)
        log.info(
            "Preparing to rebalance group %s in state PreparingRebalance with old generation %d "
            "(__consumer_offsets-%d) (reason: %s)",
            group.group_id, group.generation_id, self._manager.partition_for(group.group_id), reason,
        )  # fmt: skip
        key = ("join", group.group_id)
        if was_empty:
            delay = int(self._config.group_initial_rebalance_delay_ms)
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._initial_delay.add(group.group_id)
            self._timers.schedule(key, delay, self._initial_delay_expired, group, delay, remaining)
        else:
            self._timers.schedule(key, group.rebalance_timeout_ms(), self._complete_join, group)

    def _initial_delay_expired(self, group: GroupMetadata, delay: int, remaining: int) -> None:
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            step = min(delay, remaining)
            self._timers.schedule(
                ("join", group.group_id), step, self._initial_delay_expired, group, delay, remaining - step
            )
            return
        self._initial_delay.discard(group.group_id)
        self._complete_join(group)

    def check_join_complete(self, group: GroupMetadata) -> None:
        if (
            group.is_state(S.PREPARING_REBALANCE)
            and group.group_id not in self._initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        self._timers.cancel(("join", group.group_id))
        self._initial_delay.discard(group.group_id)
        if not group.is_state(S.PREPARING_REBALANCE) or self._manager.get_group(group.group_id) is not group:
            return
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members keep their place until their session expires
                log.info(
                    "Member %s in group %s has not rejoined; removing it", member.member_id, group.group_id
                )
                self.remove_member(group, member)
        joined = [m for m in group.members.values() if m.is_awaiting_join]
        if group.leader_id not in {m.member_id for m in joined} and joined:
            group.leader_id = joined[0].member_id
        group.init_next_generation()
        if group.is_state(S.EMPTY):
            log.info("Group %s with generation %d is now empty", group.group_id, group.generation_id)
            asyncio.ensure_future(self._store_empty_group(group))
            return
        log.info(
            "Stabilized group %s generation %d (__consumer_offsets-%d) with %d members",
            group.group_id, group.generation_id, self._manager.partition_for(group.group_id), len(group.members),
        )  # fmt: skip
        for member in group.members.values():
            if member.is_awaiting_join:
                member.awaiting_join.set_result(self.join_result(group, member))  # type: ignore[union-attr]
            member.is_new = False
            self.schedule_heartbeat(group, member, member.session_timeout_ms)

    async def _store_empty_group(self, group: GroupMetadata) -> None:
        code = await self._manager.store_group(group, {})
        if code:
            log.warning("Failed to write empty metadata for group %s: error code %d", group.group_id, code)

    def propagate_assignment_error(self, group: GroupMetadata, code: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(code))  # type: ignore[union-attr]

    # -- members and their sessions -------------------------------------------------------------

    def remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._timers.cancel(("hb", group.group_id, member.member_id))
        if member.is_awaiting_join:
            member.awaiting_join.set_result(join_error(member.member_id, UnknownMemberIdException.code))  # type: ignore[union-attr]
        if member.is_awaiting_sync:
            member.awaiting_sync.set_result(sync_result(UnknownMemberIdException.code))  # type: ignore[union-attr]
        group.remove(member.member_id)

    def remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str
    ) -> None:
        self.remove_member(group, member)
        if group.is_state(S.STABLE, S.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance(group, f"{reason} {member.member_id}")
        elif group.is_state(S.PREPARING_REBALANCE):
            self.check_join_complete(group)

    def expire_pending(self, group: GroupMetadata, member_id: str) -> None:
        self._timers.cancel(("pending", group.group_id, member_id))
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.check_join_complete(group)

    def schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        self._timers.schedule(
            ("hb", group.group_id, member.member_id), timeout_ms, self._heartbeat_expired, group, member
        )

    def _heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if (
            self._manager.get_group(group.group_id) is not group
            or group.members.get(member.member_id) is not member
        ):
            return
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            # Parked in a rebalance: the rebalance timeout, not the session, bounds it.
            self.schedule_heartbeat(group, member, member.session_timeout_ms)
            return
        log.info(
            "Member %s in group %s has failed, removing it from the group", member.member_id, group.group_id
        )
        self.remove_member_and_update_group(group, member, "removing member on heartbeat expiration")

    # -- loading and unloading ------------------------------------------------------------------

    def on_group_loaded(self, group: GroupMetadata) -> None:
        for member in group.members.values():
            self.schedule_heartbeat(group, member, member.session_timeout_ms)

    def on_group_unloaded(self, group: GroupMetadata) -> None:
        self._timers.cancel(("join", group.group_id))
        self._initial_delay.discard(group.group_id)
        for member in list(group.members.values()):
            self._timers.cancel(("hb", group.group_id, member.member_id))
            if member.is_awaiting_join:
                member.awaiting_join.set_result(join_error(member.member_id, NotCoordinatorException.code))  # type: ignore[union-attr]
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(NotCoordinatorException.code))  # type: ignore[union-attr]
        for pending in group.pending_members:
            self._timers.cancel(("pending", group.group_id, pending))
        group.transition_to(S.DEAD)
