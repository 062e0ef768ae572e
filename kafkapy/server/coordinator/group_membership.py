"""GroupMembership: the classic group protocol's requests, JoinGroup, SyncGroup, Heartbeat and
LeaveGroup (Kafka 2.8's GroupCoordinator handlers), on the broker's event loop.

A JoinGroup or SyncGroup that must wait (for the other members, or for the leader's assignment)
gets a future that the rebalance resolves; the handler awaits it, and the connection stays
muted meanwhile, as in Kafka. The rebalance steps and the session timeouts are the Rebalancer's
(group_rebalance.py); a member parked in SyncGroup waits until the leader's assignment is
written to __consumer_offsets.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    FencedInstanceIdException,
    GroupMaxSizeReachedException,
    IllegalGenerationException,
    InconsistentGroupProtocolException,
    InvalidSessionTimeoutException,
    MemberIdRequiredException,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.protocol.generated.join_group_response import JoinGroupResponse
from kafkapy.protocol.generated.sync_group_response import SyncGroupResponse
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_metadata_manager import GroupMetadataManager
from kafkapy.server.coordinator.group_rebalance import Rebalancer, join_error, sync_result
from kafkapy.server.coordinator.member_metadata import MemberMetadata
from kafkapy.server.coordinator.timers import Timers

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState
# A new member cannot heartbeat before its first JoinGroup answer and a parked JoinGroup hides
# disconnects, so new members that never complete the join are dropped after this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

Protocols = list[tuple[str, bytes]]
# A JoinGroup answer now, or the future the rebalance completes with it.
JoinAnswer = JoinGroupResponse | asyncio.Future[JoinGroupResponse]
# GroupCoordinator.validate_group: (group id, is a membership request) -> error code or 0
Validate = Callable[[str | None, bool], int]


class GroupMembership:
    def __init__(
        self, config: Any, manager: GroupMetadataManager, timers: Timers, rebalance: Rebalancer,
        validate: Validate,
    ) -> None:  # fmt: skip
        self._config = config
        self._manager = manager
        self._timers = timers
        self._rebalance = rebalance
        self._validate = validate

    # -- JoinGroup ------------------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
    ) -> JoinGroupResponse:
        err = self._validate(group_id, True)
        if err:
            return join_error(member_id, err)
        c = self._config
        if not c.group_min_session_timeout_ms <= session_timeout_ms <= c.group_max_session_timeout_ms:
            return join_error(member_id, InvalidSessionTimeoutException.code)
        unknown = member_id == ""
        group = self._manager.get_group(group_id)
        if group is None:
            if not unknown:
                return join_error(member_id, UnknownMemberIdException.code)
            group = self._manager.add_group(GroupMetadata(group_id))
        if (unknown or not group.has(member_id)) and len(group.members) >= c.group_max_size:
            return join_error(member_id, GroupMaxSizeReachedException.code)
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        if unknown:
            result = self._join_unknown(group, instance_id, require_known_member_id, *args)
        else:
            result = self._join_known(group, member_id, instance_id, *args)
        if isinstance(result, asyncio.Future):
            return await result
        return result

    def _join_unknown(
        self, group: GroupMetadata, instance_id: str | None, require_known: bool, client_id: str,
        client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: Protocols,
    ) -> JoinAnswer:  # fmt: skip
        if group.is_state(S.DEAD):
            return join_error("", CoordinatorNotAvailableException.code)
        if not group.supports_protocols(protocol_type, [p for p, _ in protocols]):
            return join_error("", InconsistentGroupProtocolException.code)
        new_id = f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                return self._rejoin_static_member(group, old_id, new_id, instance_id, protocols)
            return self._add_member_and_rebalance(group, new_id, instance_id, *args)
        if require_known:
            # KIP-394: hand out the id first; the member joins for real with it, so a client that
            # times out and retries does not leave a defunct member behind.
            group.pending_members.add(new_id)
            self._timers.schedule(
                ("pending", group.group_id, new_id),
                session_timeout_ms,
                self._rebalance.expire_pending,
                group,
                new_id,
            )
            return join_error(new_id, MemberIdRequiredException.code)
        return self._add_member_and_rebalance(group, new_id, None, *args)

    def _join_known(
        self, group: GroupMetadata, member_id: str, instance_id: str | None, client_id: str,
        client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: Protocols,
    ) -> JoinAnswer:  # fmt: skip
        if group.is_state(S.DEAD):
            return join_error(member_id, CoordinatorNotAvailableException.code)
        if not group.supports_protocols(protocol_type, [p for p, _ in protocols]):
            return join_error(member_id, InconsistentGroupProtocolException.code)
        if member_id in group.pending_members:
            args = (
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            return self._add_member_and_rebalance(group, member_id, instance_id, *args)
        if group.is_static_member_fenced(member_id, instance_id):
            return join_error(member_id, FencedInstanceIdException.code)
        if not group.has(member_id) or group.is_state(S.EMPTY):
            return join_error(member_id, UnknownMemberIdException.code)
        member = group.get(member_id)
        if group.is_state(S.COMPLETING_REBALANCE) and member.matches(protocols):
            # It lost our JoinGroup answer: hand the same one out again.
            return self._rebalance.join_result(group, member)
        if group.is_state(S.STABLE) and not group.is_leader(member_id) and member.matches(protocols):
            return self._rebalance.join_result(group, member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self._update_member_and_rebalance(group, member, protocols, "Updating metadata for member")

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, instance_id: str | None, client_id: str, client_host: str,
        rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str, protocols: Protocols,
    ) -> asyncio.Future[JoinGroupResponse]:  # fmt: skip
        member = MemberMetadata(
            member_id, group.group_id, instance_id, client_id, client_host, rebalance_timeout_ms,
            session_timeout_ms, protocol_type, protocols, is_new=True,
        )  # fmt: skip
        future = member.awaiting_join = asyncio.get_running_loop().create_future()
        if group.is_state(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._timers.cancel(("pending", group.group_id, member_id))
        self._rebalance.schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance.maybe_prepare_rebalance(
            group, f"Adding new member {member_id} with group instance id {instance_id}"
        )
        self._rebalance.check_join_complete(group)
        return future

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: MemberMetadata, protocols: Protocols, reason: str
    ) -> asyncio.Future[JoinGroupResponse]:
        member.protocols = protocols
        if member.is_awaiting_join:  # a retried JoinGroup replaces the parked one
            member.awaiting_join.set_result(join_error(member.member_id, RebalanceInProgressException.code))  # type: ignore[union-attr]
        future = member.awaiting_join = asyncio.get_running_loop().create_future()
        self._rebalance.maybe_prepare_rebalance(group, f"{reason} {member.member_id}")
        self._rebalance.check_join_complete(group)
        return future

    def _rejoin_static_member(
        self, group: GroupMetadata, old_id: str, new_id: str, instance_id: str, protocols: Protocols
    ) -> JoinAnswer:
        """A static member restarted: the new id takes over the old one's place (KIP-345)."""
        current_leader = group.leader_id
        self._timers.cancel(("hb", group.group_id, old_id))
        old = group.get(old_id)
        if old.is_awaiting_join:
            old.awaiting_join.set_result(join_error(old_id, FencedInstanceIdException.code))  # type: ignore[union-attr]
        if old.is_awaiting_sync:
            old.awaiting_sync.set_result(sync_result(FencedInstanceIdException.code))  # type: ignore[union-attr]
        member = group.replace_static_member(instance_id, old_id, new_id)
        if group.is_state(S.STABLE) and member.matches(protocols):
            # Nothing changes for the others: no rebalance; it gets its old assignment in SyncGroup.
            # The old leader id in the answer keeps a restarted leader from assigning again.
            self._rebalance.schedule_heartbeat(group, member, member.session_timeout_ms)
            result = self._rebalance.join_result(group, member)
            result.leader = current_leader or ""
            result.members = []
            return result
        return self._update_member_and_rebalance(group, member, protocols, "Static member rejoined")

    # -- SyncGroup ------------------------------------------------------------------------------

    async def sync_group(
        self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
        protocol_name: str | None, instance_id: str | None, assignments: dict[str, bytes],
    ) -> SyncGroupResponse:  # fmt: skip
        err = self._validate(group_id, True)
        group = self._manager.get_group(group_id) if not err else None
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
            self._rebalance.schedule_heartbeat(group, member, member.session_timeout_ms)
            return sync_result(0, group, member.assignment)
        # CompletingRebalance: park until the leader's assignment is written.
        if member.is_awaiting_sync:
            member.awaiting_sync.set_result(sync_result(RebalanceInProgressException.code))  # type: ignore[union-attr]
        future = member.awaiting_sync = asyncio.get_running_loop().create_future()
        if group.is_leader(member_id):
            full = {mid: assignments.get(mid, b"") for mid in group.members}
            asyncio.ensure_future(self._store_assignment(group, group.generation_id, full))
        result: SyncGroupResponse = await future
        return result

    async def _store_assignment(
        self, group: GroupMetadata, generation: int, assignment: dict[str, bytes]
    ) -> None:
        code = await self._manager.store_group(group, assignment)
        if (
            not group.is_state(S.COMPLETING_REBALANCE)
            or group.generation_id != generation
            or self._manager.get_group(group.group_id) is not group
        ):
            return  # the group moved on while we wrote; the new rebalance decides
        if code:
            self._rebalance.propagate_assignment_error(group, code)
            self._rebalance.maybe_prepare_rebalance(
                group, f"Error {code} when storing group assignment during SyncGroup"
            )
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
            if member.is_awaiting_sync:
                member.awaiting_sync.set_result(sync_result(0, group, member.assignment))  # type: ignore[union-attr]
            self._rebalance.schedule_heartbeat(group, member, member.session_timeout_ms)
        group.transition_to(S.STABLE)
        log.info("Assignment received from leader for group %s for generation %d", group.group_id, generation)

    # -- Heartbeat and LeaveGroup ---------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> int:
        err = self._validate(group_id, True)
        if err == CoordinatorLoadInProgressException.code:
            return 0  # the group is still loading: answer blindly, as Kafka does
        if err:
            return err
        group = self._manager.get_group(group_id)
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
        self._rebalance.schedule_heartbeat(group, member, member.session_timeout_ms)
        return RebalanceInProgressException.code if group.is_state(S.PREPARING_REBALANCE) else 0

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """(top-level error, [(member id, instance id, error)]) for LeaveGroup v0-v5."""
        err = self._validate(group_id, True)
        if err:
            return err, []
        group = self._manager.get_group(group_id)
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
                self._rebalance.expire_pending(group, member_id)
                code = 0
            elif not group.has(member_id):
                code = UnknownMemberIdException.code
            else:
                log.info(
                    "Member %s has left group %s through explicit LeaveGroup request", member_id, group_id
                )
                self._rebalance.remove_member_and_update_group(
                    group, group.get(member_id), "removing member on LeaveGroup"
                )
                code = 0
            results.append((member_id, instance_id, code))
        return 0, results
