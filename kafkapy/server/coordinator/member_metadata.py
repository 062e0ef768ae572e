"""One member of a classic-protocol group, and the consumer protocol's embedded formats.

A member's protocols are opaque to the coordinator except for the "consumer" protocol type,
whose subscription (the topics) matters for OffsetDelete and offset expiry, and whose
assignment the consumer-groups tool shows. Both are Kafka's ConsumerProtocol structs:

    Subscription  version int16, topics [string], user_data nullable bytes, (v1+) owned partitions
    Assignment    version int16, partitions [topic string, [int32]], user_data nullable bytes
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import Any

CONSUMER_PROTOCOL_TYPE = "consumer"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


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
    awaiting_join: asyncio.Future[Any] | None = None
    awaiting_sync: asyncio.Future[Any] | None = None
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


# -- consumer protocol --------------------------------------------------------------------------


class _Cursor:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def unpack(self, s: struct.Struct) -> int:
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(v)

    def string(self) -> str:
        n = self.unpack(_I16)
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError("bad string in consumer protocol data")
        s = self.buf[self.pos : self.pos + n].decode()
        self.pos += n
        return s


def subscribed_topics(subscription: bytes) -> set[str] | None:
    """The topics of a consumer protocol subscription; None if it cannot be parsed."""
    try:
        c = _Cursor(subscription)
        c.unpack(_I16)  # version
        return {c.string() for _ in range(c.unpack(_I32))}
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def assigned_partitions(assignment: bytes) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a consumer protocol assignment; [] if empty or unparsable."""
    if not assignment:
        return []
    try:
        c = _Cursor(assignment)
        c.unpack(_I16)  # version
        out: list[tuple[str, int]] = []
        for _ in range(c.unpack(_I32)):
            topic = c.string()
            out.extend((topic, c.unpack(_I32)) for _ in range(c.unpack(_I32)))
        return out
    except (struct.error, ValueError, UnicodeDecodeError):
        return []


def encode_assignment(partitions: dict[str, list[int]], version: int = 0) -> bytes:
    """A consumer protocol assignment (tests build members' assignments with it)."""
    out = bytearray(_I16.pack(version) + _I32.pack(len(partitions)))
    for topic, parts in partitions.items():
        data = topic.encode()
        out += _I16.pack(len(data)) + data + _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
    out += _I32.pack(-1)  # user data: null
    return bytes(out)


def encode_subscription(topics: list[str], version: int = 0) -> bytes:
    out = bytearray(_I16.pack(version) + _I32.pack(len(topics)))
    for t in topics:
        data = t.encode()
        out += _I16.pack(len(data)) + data
    out += _I32.pack(-1)
    return bytes(out)
