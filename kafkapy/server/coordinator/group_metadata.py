"""GroupMetadata: one group's members, generation, protocol and committed offsets.

The group state machine is Kafka's (GroupMetadata.scala), as one table of valid previous states:

    Empty               <- PreparingRebalance            (last member gone, offsets may remain)
    PreparingRebalance  <- Empty, Stable, CompletingRebalance
    CompletingRebalance <- PreparingRebalance            (every member rejoined; waiting for the
                                                          leader's assignment in SyncGroup)
    Stable              <- CompletingRebalance
    Dead                <- every state, itself included  (deleted, expired, or unloaded)

`transition_to` refuses anything else with an error naming the group and both states, and
leaves the state unchanged. No I/O and no timers here: the coordinator owns those.
"""

from __future__ import annotations

import time
from collections import Counter
from enum import Enum
from typing import Final

from kafkapy.protocol.consumer_protocol import subscribed_topics
from kafkapy.server.coordinator.member_metadata import CONSUMER_PROTOCOL_TYPE, MemberMetadata
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


_S = GroupState
VALID_PREVIOUS_STATES: Final[dict[GroupState, frozenset[GroupState]]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.EMPTY, _S.STABLE, _S.COMPLETING_REBALANCE}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(GroupState),
}


class IllegalGroupStateTransition(Exception):
    def __init__(self, group_id: str, current: GroupState, target: GroupState) -> None:
        super().__init__(
            f"Group {group_id} should be in the {sorted(s.value for s in VALID_PREVIOUS_STATES[target])} "
            f"states before moving to {target.value} state. Instead it is in {current.value} state"
        )


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class GroupMetadata:
    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp: int | None = now_ms()
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.pending_members: set[str] = set()  # given an id with MEMBER_ID_REQUIRED, not joined yet
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.new_member_added = False  # for the initial rebalance delay of an empty group

    def __repr__(self) -> str:
        return f"GroupMetadata({self.group_id!r}, {self.state}, generation={self.generation_id})"

    # -- state ----------------------------------------------------------------------------------

    def is_state(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, target: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalGroupStateTransition(self.group_id, self.state, target)
        self.state = target
        self.state_timestamp = now_ms()

    # -- members --------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id  # type: ignore[index]
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.is_static:
            self.static_members.pop(member.group_instance_id, None)  # type: ignore[arg-type]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member whose instance id now belongs to a newer member id."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.is_awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ------------------------------------------------------------------------------

    def _candidate_protocols(self) -> set[str]:
        counts: Counter[str] = Counter()
        for m in self.members.values():
            counts.update(set(m.protocol_names()))
        return {p for p, n in counts.items() if n == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """Can a member with these protocols join? Any non-empty set while Empty; otherwise the
        same protocol type and at least one protocol every current member also supports."""
        if self.state == GroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(self._candidate_protocols() & set(protocols))

    def select_protocol(self) -> str:
        """Kafka's vote: every member votes for its most preferred common protocol."""
        candidates = self._candidate_protocols()
        if not candidates:
            raise ValueError(f"No common protocol in group {self.group_id}")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)
        self.new_member_added = False

    def subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to; None if not a consumer group or unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                sub = subscribed_topics(m.metadata(self.protocol_name))
            except KeyError:
                return None
            if sub is None:
                return None
            topics |= sub
        return topics

    # -- offsets --------------------------------------------------------------------------------

    def has_offsets(self) -> bool:
        return bool(self.offsets)
