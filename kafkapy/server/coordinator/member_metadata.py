"""One member of a classic-protocol group.

A member's protocols are opaque to the coordinator except for the "consumer" protocol type,
whose subscription (the topics) matters for OffsetDelete and offset expiry; it is read with
the one consumer protocol codec, kafkapy/protocol/consumer_protocol.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkapy.protocol.generated.join_group_response import JoinGroupResponse
    from kafkapy.protocol.generated.sync_group_response import SyncGroupResponse

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(slots=True, eq=False)
class MemberMetadata:
    member_id: str
    group_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's order of preference
    assignment: bytes = b""
    # Futures the JoinGroup / SyncGroup handlers wait on while the member is parked.
    awaiting_join: asyncio.Future[JoinGroupResponse] | None = None
    awaiting_sync: asyncio.Future[SyncGroupResponse] | None = None
    # A member that joined but has not yet received its first JoinGroup answer: it cannot
    # heartbeat, so it only gets the new-member join timeout.
    is_new: bool = False
    heartbeat_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    last_heartbeat_ms: int = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None and not self.awaiting_join.done()

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None and not self.awaiting_sync.done()

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"Member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata: a JoinGroup that changes nothing."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"Member {self.member_id} does not support any of the candidate protocols")
