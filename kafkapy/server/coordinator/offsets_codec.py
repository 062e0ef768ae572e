"""The record keys and values of __consumer_offsets, in Kafka's schemas (GroupMetadataManager).

Every key and value starts with an int16 schema version; the key version says what the record
is (0/1: a committed offset, 2: a group's metadata), the value version how the value is laid
out. A record with a null value is a tombstone: compaction (and a loading coordinator) drops the
key. Strings are int16-length UTF-8 (-1 for null where nullable), bytes int32-length. No I/O.

    OffsetCommitKey v0/v1      group string, topic string, partition int32
    GroupMetadataKey v2        group string
    OffsetCommitValue v0       offset int64, metadata string, timestamp int64
                      v1       offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
                      v2       offset int64, metadata string, commit_timestamp int64
                      v3       offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    GroupMetadataValue v0      protocol_type string, generation int32, protocol nullable string,
                               leader nullable string, members [MemberMetadata v0]
                       v1      as v0, members [MemberMetadata v1]
                       v2/v3   as v0 plus current_state_timestamp int64 before members
    MemberMetadata v0          member_id, client_id, client_host strings, session_timeout int32,
                               subscription bytes, assignment bytes
                   v1/v2       adds rebalance_timeout int32 before session_timeout
                   v3          adds group_instance_id nullable string after member_id

We write what Kafka 2.3+ writes: offset key v1 with value v3 (v1 when an expire timestamp is
set, as old OffsetCommit v2-4 retention times ask), group key v2 with value v3.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from kafkapy.protocol.errors import CorruptRecordException

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int
    version: int = OFFSET_KEY_VERSION


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str
    version: int = GROUP_KEY_VERSION


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = NO_TIMESTAMP
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = NO_TIMESTAMP
    members: tuple[MemberRecord, ...] = field(default_factory=tuple)


# -- writing ----------------------------------------------------------------------------------


class _Writer:
    __slots__ = ("out",)

    def __init__(self, version: int) -> None:
        self.out = bytearray(_I16.pack(version))

    def i32(self, v: int) -> _Writer:
        self.out += _I32.pack(v)
        return self

    def i64(self, v: int) -> _Writer:
        self.out += _I64.pack(v)
        return self

    def string(self, s: str | None) -> _Writer:
        if s is None:
            self.out += _I16.pack(-1)
        else:
            data = s.encode()
            self.out += _I16.pack(len(data)) + data
        return self

    def bytes_(self, b: bytes) -> _Writer:
        self.out += _I32.pack(len(b)) + b
        return self


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return bytes(_Writer(OFFSET_KEY_VERSION).string(group).string(topic).i32(partition).out)


def group_metadata_key(group: str) -> bytes:
    return bytes(_Writer(GROUP_KEY_VERSION).string(group).out)


def offset_value(om: OffsetAndMetadata) -> bytes:
    if om.expire_timestamp is not None:
        w = _Writer(1).i64(om.offset).string(om.metadata).i64(om.commit_timestamp).i64(om.expire_timestamp)
    else:
        w = _Writer(3).i64(om.offset).i32(om.leader_epoch).string(om.metadata).i64(om.commit_timestamp)
    return bytes(w.out)


def group_metadata_value(value: GroupMetadataValue, version: int = GROUP_VALUE_VERSION) -> bytes:
    w = _Writer(version).string(value.protocol_type).i32(value.generation)
    w.string(value.protocol).string(value.leader)
    if version >= 2:
        w.i64(value.current_state_timestamp)
    w.i32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id).string(m.client_host)
        if version >= 1:
            w.i32(m.rebalance_timeout)
        w.i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment)
    return bytes(w.out)


# -- reading ----------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def _take(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise CorruptRecordException("__consumer_offsets record is shorter than its schema")
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(v)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def nullable_string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        if self.pos + n > len(self.buf):
            raise CorruptRecordException("__consumer_offsets string runs past the record")
        s = self.buf[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise CorruptRecordException("null where __consumer_offsets' schema wants a string")
        return s

    def bytes_(self) -> bytes:
        n = self.i32()
        if n < 0:
            return b""
        if self.pos + n > len(self.buf):
            raise CorruptRecordException("__consumer_offsets bytes run past the record")
        b = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return b


def read_key(key: bytes) -> OffsetKey | GroupMetadataKey:
    r = _Reader(key)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string(), r.string(), r.i32(), version)
    if version == 2:
        return GroupMetadataKey(r.string(), version)
    raise CorruptRecordException(f"Unknown group metadata message version: {version}")


def read_offset_value(value: bytes) -> OffsetAndMetadata:
    r = _Reader(value)
    version = r.i16()
    if version == 0:
        offset, metadata, ts = r.i64(), r.string(), r.i64()
        return OffsetAndMetadata(offset, NO_PARTITION_LEADER_EPOCH, metadata, ts)
    if version == 1:
        offset, metadata, ts, expire = r.i64(), r.string(), r.i64(), r.i64()
        return OffsetAndMetadata(
            offset, NO_PARTITION_LEADER_EPOCH, metadata, ts, None if expire == -1 else expire
        )
    if version == 2:
        offset, metadata, ts = r.i64(), r.string(), r.i64()
        return OffsetAndMetadata(offset, NO_PARTITION_LEADER_EPOCH, metadata, ts)
    if version == 3:
        offset, epoch, metadata, ts = r.i64(), r.i32(), r.string(), r.i64()
        return OffsetAndMetadata(offset, epoch, metadata, ts)
    raise CorruptRecordException(f"Unknown offset message version: {version}")


def read_group_value(value: bytes) -> GroupMetadataValue:
    r = _Reader(value)
    version = r.i16()
    if not 0 <= version <= 3:
        raise CorruptRecordException(f"Unknown group metadata version {version}")
    protocol_type, generation = r.string(), r.i32()
    protocol, leader = r.nullable_string(), r.nullable_string()
    state_ts = r.i64() if version >= 2 else NO_TIMESTAMP
    members = []
    for _ in range(r.i32()):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id, client_host = r.string(), r.string()
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        if version == 0:
            rebalance_timeout = session_timeout  # v0 predates the rebalance timeout
        members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.bytes_(),
                r.bytes_(),
            )  # fmt: skip
        )
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))
