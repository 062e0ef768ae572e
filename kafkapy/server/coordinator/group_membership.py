"""SyncGroup, Heartbeat, LeaveGroup, session timeouts, and what unloading a group does to its members.

The second half of the classic group protocol (group_coordinator.py has JoinGroup and the
rebalance itself). A member parked in SyncGroup waits on a future that the leader's assignment
resolves once it is written to __consumer_offsets; session timeouts are loop timers per member,
pushed back by every heartbeat, join, sync and commit.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    FencedInstanceIdException,
    IllegalGenerationException,
    InconsistentGroupProtocolException,
    NotCoordinatorException,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_offsets import GroupOffsetsMixin, join_error
from kafkapy.server.coordinator.member_metadata import MemberMetadata

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState


class GroupMembershipMixin(GroupOffsetsMixin):
    """Needs `_maybe_prepare_rebalance` and `_check_join_complete` from GroupCoordinator."""

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        raise NotImplementedError

    def _check_join_complete(self, group: GroupMetadata) -> None:
        raise NotImplementedError

    # -- SyncGroup ------------------------------------------------------------------------------

    async def sync_group(
        self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
        protocol_name: str | None, instance_id: str | None, assignments: dict[str, bytes],
    ) -> dict[str, Any]:  # fmt: skip
        err = self.validate_group(group_id, membership=True)
        group = self.manager.get_group(group_id) if not err else None
        if not err and group is None:
            err = UnknownMemberIdException.code
        if err or group is None:
            return sync_result(err)
        if group.is_state(S.DEAD):
            return sync_result(CoordinatorNotAvailableException.code)
        if group.is_static_member_fenced(member_id, instance_id):
            return sync_result(FencedInstanceIdException.code)
        if not group.has(member_id):
            return sync_result(UnknownMemberIdException.code)
        if generation_id != group.generation_id:
            return sync_result(IllegalGenerationException.code)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return sync_result(InconsistentGroupProtocolException.code)
        if group.is_state(S.PREPARING_REBALANCE):
            return sync_result(RebalanceInProgressException.code)
        member = group.get(member_id)
        if group.is_state(S.STABLE):
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return sync_result(0, group, member.assignment)
        # CompletingRebalance: park until the leader's assignment is written.
        if member.is_awaiting_sync:
            member.awaiting_sync.set_result(sync_result(RebalanceInProgressException.code))  # type: ignore[union-attr]
        future = member.awaiting_sync = asyncio.get_running_loop().create_future()
        if group.is_leader(member_id):
            full = {mid: assignments.get(mid, b"") for mid in group.members}
            asyncio.ensure_future(self._store_assignment(group, group.generation_id, full))
        return await future

    async def _store_assignment(
        self, group: GroupMetadata, generation: int, assignment: dict[str, bytes]
    ) -> None:
        code = await self.manager.store_group(group, assignment)
        if (
            not group.is_state(S.COMPLETING_REBALANCE)
            or group.generation_id != generation
            or self.manager.get_group(group.group_id) is not group
        ):
            return  # the group moved on while we wrote; the new rebalance decides
        if code:
            self._propagate_assignment_error(group, code)
            self._maybe_prepare_rebalance(
                group, f"Error {code} when storing group assignment during SyncGroup"
            )
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(0, group, member.assignment))  # type: ignore[union-attr]
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        group.transition_to(S.STABLE)
        log.info("Assignment received from leader for group %s for generation %d", group.group_id, generation)

    def _propagate_assignment_error(self, group: GroupMetadata, code: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(code))  # type: ignore[union-attr]

    # -- Heartbeat and LeaveGroup ---------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> int:
        err = self.validate_group(group_id, membership=True)
        if err == self.LOAD_IN_PROGRESS:
            return 0  # the group is still loading: answer blindly, as Kafka does
        if err:
            return err
        group = self.manager.get_group(group_id)
        if group is None:
            return UnknownMemberIdException.code
        if group.is_state(S.DEAD):
            return CoordinatorNotAvailableException.code
        if group.is_state(S.EMPTY):
            return UnknownMemberIdException.code
        if group.is_static_member_fenced(member_id, instance_id):
            return FencedInstanceIdException.code
        if not group.has(member_id):
            return UnknownMemberIdException.code
        if generation_id != group.generation_id:
            return IllegalGenerationException.code
        member = group.get(member_id)
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        return RebalanceInProgressException.code if group.is_state(S.PREPARING_REBALANCE) else 0

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """(top-level error, [(member id, instance id, error)]) for LeaveGroup v0-v5."""
        err = self.validate_group(group_id, membership=True)
        if err:
            return err, []
        group = self.manager.get_group(group_id)
        if group is None:
            return 0, [(m, i, UnknownMemberIdException.code) for m, i in leaving]
        if group.is_state(S.DEAD):
            return CoordinatorNotAvailableException.code, []
        results = []
        for member_id, instance_id in leaving:
            if member_id == "" and instance_id is not None:
                member_id = group.static_member_id(instance_id) or ""
            if group.is_static_member_fenced(member_id, instance_id):
                code = FencedInstanceIdException.code
            elif member_id in group.pending_members:
                self._expire_pending(group, member_id)
                code = 0
            elif not group.has(member_id):
                code = UnknownMemberIdException.code
            else:
                log.info(
                    "Member %s has left group %s through explicit LeaveGroup request", member_id, group_id
                )
                self._remove_member_and_update_group(
                    group, group.get(member_id), "removing member on LeaveGroup"
                )
                code = 0
            results.append((member_id, instance_id, code))
        return 0, results

    def _remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.timers.cancel(("hb", group.group_id, member.member_id))
        if member.is_awaiting_join:
            member.awaiting_join.set_result(join_error(member.member_id, UnknownMemberIdException.code))  # type: ignore[union-attr]
        if member.is_awaiting_sync:
            member.awaiting_sync.set_result(sync_result(UnknownMemberIdException.code))  # type: ignore[union-attr]
        group.remove(member.member_id)

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, reason: str
    ) -> None:
        self._remove_member(group, member)
        if group.is_state(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"{reason} {member.member_id}")
        elif group.is_state(S.PREPARING_REBALANCE):
            self._check_join_complete(group)

    def _expire_pending(self, group: GroupMetadata, member_id: str) -> None:
        self.timers.cancel(("pending", group.group_id, member_id))
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._check_join_complete(group)

    # -- session timeouts -----------------------------------------------------------------------

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        self.timers.schedule(
            ("hb", group.group_id, member.member_id), timeout_ms, self._heartbeat_expired, group, member
        )

    def _heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if (
            self.manager.get_group(group.group_id) is not group
            or group.members.get(member.member_id) is not member
        ):
            return
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            # Parked in a rebalance: the rebalance timeout, not the session, bounds it.
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return
        log.info(
            "Member %s in group %s has failed, removing it from the group", member.member_id, group.group_id
        )
        self._remove_member_and_update_group(group, member, "removing member on heartbeat expiration")

    # -- loading and unloading ------------------------------------------------------------------

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        for member in group.members.values():
            self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        self.timers.cancel(("join", group.group_id))
        self.initial_delay.discard(group.group_id)
        for member in list(group.members.values()):
            self.timers.cancel(("hb", group.group_id, member.member_id))
            if member.is_awaiting_join:
                member.awaiting_join.set_result(join_error(member.member_id, NotCoordinatorException.code))  # type: ignore[union-attr]
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(NotCoordinatorException.code))  # type: ignore[union-attr]
        for pending in group.pending_members:
            self.timers.cancel(("pending", group.group_id, pending))
        group.transition_to(S.DEAD)


def sync_result(error: int, group: GroupMetadata | None = None, assignment: bytes = b"") -> dict[str, Any]:
    return {
        "error_code": error,
        "protocol_type": group.protocol_type if group else None,
        "protocol_name": group.protocol_name if group else None,
        "assignment": assignment,
    }
