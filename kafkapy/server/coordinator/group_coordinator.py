"""GroupCoordinator: the classic group protocol; this module has JoinGroup and the rebalance.

Kafka 2.8's GroupCoordinator on the broker's event loop. A JoinGroup or SyncGroup that must wait
(for the other members, or for the leader's assignment) gets a future that the rebalance
resolves; the handler awaits it, and the connection stays muted meanwhile, as in Kafka.
SyncGroup, Heartbeat, LeaveGroup and session timeouts are in group_membership.py, offsets and
administration in group_offsets.py, storage in group_metadata_manager.py.

Results are values: error codes and dicts the API handlers turn into each version's response.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    FencedInstanceIdException,
    GroupMaxSizeReachedException,
    InconsistentGroupProtocolException,
    InvalidSessionTimeoutException,
    MemberIdRequiredException,
    RebalanceInProgressException,
    UnknownMemberIdException,
)
from kafkapy.server.coordinator.group_membership import GroupMembershipMixin, sync_result
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState
from kafkapy.server.coordinator.group_offsets import join_error
from kafkapy.server.coordinator.member_metadata import MemberMetadata

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

S = GroupState
# A new member cannot heartbeat before its first JoinGroup answer and a parked JoinGroup hides
# disconnects, so new members that never complete the join are dropped after this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

Protocols = list[tuple[str, bytes]]


class GroupCoordinator(GroupMembershipMixin):
    # -- membership: JoinGroup ------------------------------------------------------------------

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
    ) -> dict[str, Any]:
        err = self.validate_group(group_id, membership=True)
        if err:
            return join_error(member_id, err)
        c = self.config
        if not c.group_min_session_timeout_ms <= session_timeout_ms <= c.group_max_session_timeout_ms:
            return join_error(member_id, InvalidSessionTimeoutException.code)
        unknown = member_id == ""
        group = self.manager.get_group(group_id)
        if group is None:
            if not unknown:
                return join_error(member_id, UnknownMemberIdException.code)
            group = self.manager.add_group(GroupMetadata(group_id))
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
    ) -> Any:  # fmt: skip
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
            self.timers.schedule(
                ("pending", group.group_id, new_id), session_timeout_ms, self._expire_pending, group, new_id
            )
            return join_error(new_id, MemberIdRequiredException.code)
        return self._add_member_and_rebalance(group, new_id, None, *args)

    def _join_known(
        self, group: GroupMetadata, member_id: str, instance_id: str | None, client_id: str,
        client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: Protocols,
    ) -> Any:  # fmt: skip
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
            return self._join_result(group, member)
        if group.is_state(S.STABLE) and not group.is_leader(member_id) and member.matches(protocols):
            return self._join_result(group, member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self._update_member_and_rebalance(group, member, protocols, "Updating metadata for member")

    def _join_result(self, group: GroupMetadata, member: MemberMetadata, error: int = 0) -> dict[str, Any]:
        members = []
        if group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata(group.protocol_name),
                }
                for m in group.members.values()
            ]
        return {
            "error_code": error,
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader_id or "",
            "member_id": member.member_id,
            "members": members,
        }

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, instance_id: str | None, client_id: str, client_host: str,
        rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str, protocols: Protocols,
    ) -> asyncio.Future[Any]:  # fmt: skip
        member = MemberMetadata(
            member_id, group.group_id, instance_id, client_id, client_host, rebalance_timeout_ms,
            session_timeout_ms, protocol_type, protocols, is_new=True,
        )  # fmt: skip
        future = member.awaiting_join = asyncio.get_running_loop().create_future()
        if group.is_state(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self.timers.cancel(("pending", group.group_id, member_id))
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(
            group, f"Adding new member {member_id} with group instance id {instance_id}"
        )
        self._check_join_complete(group)
        return future

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: MemberMetadata, protocols: Protocols, reason: str
    ) -> asyncio.Future[Any]:
        member.protocols = protocols
        if member.is_awaiting_join:  # a retried JoinGroup replaces the parked one
            member.awaiting_join.set_result(join_error(member.member_id, RebalanceInProgressException.code))  # type: ignore[union-attr]
        future = member.awaiting_join = asyncio.get_running_loop().create_future()
        self._maybe_prepare_rebalance(group, f"{reason} {member.member_id}")
        self._check_join_complete(group)
        return future

    def _rejoin_static_member(
        self, group: GroupMetadata, old_id: str, new_id: str, instance_id: str, protocols: Protocols
    ) -> Any:
        """A static member restarted: the new id takes over the old one's place (KIP-345)."""
        current_leader = group.leader_id
        self.timers.cancel(("hb", group.group_id, old_id))
        old = group.get(old_id)
        if old.is_awaiting_join:
            old.awaiting_join.set_result(join_error(old_id, FencedInstanceIdException.code))  # type: ignore[union-attr]
        if old.is_awaiting_sync:
            old.awaiting_sync.set_result(sync_result(FencedInstanceIdException.code))  # type: ignore[union-attr]
        member = group.replace_static_member(instance_id, old_id, new_id)
        if group.is_state(S.STABLE) and member.matches(protocols):
            # Nothing changes for the others: no rebalance; it gets its old assignment in SyncGroup.
            # The old leader id in the answer keeps a restarted leader from assigning again.
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            result = self._join_result(group, member)
            result["leader"] = current_leader or ""
            result["members"] = []
            return result
        return self._update_member_and_rebalance(group, member, protocols, "Static member rejoined")

    # -- rebalance ------------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_state(S.COMPLETING_REBALANCE):
            self._propagate_assignment_error(group, RebalanceInProgressException.code)
        was_empty = group.is_state(S.EMPTY)
        group.transition_to(S.PREPARING_REBALANCE)
        log.info(
            "Preparing to rebalance group %s in state PreparingRebalance with old generation %d "
            "(__consumer_offsets-%d) (reason: %s)",
            group.group_id, group.generation_id, self.manager.partition_for(group.group_id), reason,
        )  # fmt: skip
        key = ("join", group.group_id)
        if was_empty:
            delay = int(self.config.group_initial_rebalance_delay_ms)
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.initial_delay.add(group.group_id)
            self.timers.schedule(key, delay, self._initial_delay_expired, group, delay, remaining)
        else:
            self.timers.schedule(key, group.rebalance_timeout_ms(), self._complete_join, group)

    def _initial_delay_expired(self, group: GroupMetadata, delay: int, remaining: int) -> None:
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            step = min(delay, remaining)
            self.timers.schedule(
                ("join", group.group_id), step, self._initial_delay_expired, group, delay, remaining - step
            )
            return
        self.initial_delay.discard(group.group_id)
        self._complete_join(group)

    def _check_join_complete(self, group: GroupMetadata) -> None:
        if (
            group.is_state(S.PREPARING_REBALANCE)
            and group.group_id not in self.initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        self.timers.cancel(("join", group.group_id))
        self.initial_delay.discard(group.group_id)
        if not group.is_state(S.PREPARING_REBALANCE) or self.manager.get_group(group.group_id) is not group:
            return
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members keep their place until their session expires
                log.info(
                    "Member %s in group %s has not rejoined; removing it", member.member_id, group.group_id
                )
                self._remove_member(group, member)
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
            group.group_id, group.generation_id, self.manager.partition_for(group.group_id), len(group.members),
        )  # fmt: skip
        for member in group.members.values():
            if member.is_awaiting_join:
                member.awaiting_join.set_result(self._join_result(group, member))  # type: ignore[union-attr]
            member.is_new = False
            self._schedule_heartbeat(group, member, member.session_timeout_ms)

    async def _store_empty_group(self, group: GroupMetadata) -> None:
        code = await self.manager.store_group(group, {})
        if code:
            log.warning("Failed to write empty metadata for group %s: error code %d", group.group_id, code)
