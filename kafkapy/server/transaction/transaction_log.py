"""The record keys and values of __transaction_state, in Kafka's schemas (TransactionLog).

Every key and value starts with an int16 schema version. Strings are int16-length UTF-8,
arrays int32-counted. A null value (tombstone) removes an expired transactional id. No I/O.

    TxnKey v0     transactional_id string
    TxnValue v0   producer_id int64, producer_epoch int16, txn_timeout_ms int32, state int8,
                  partitions [topic string, [partition int32]],
                  txn_last_update_timestamp int64, txn_start_timestamp int64
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.server.transaction.transaction_state import TransactionState

KEY_VERSION = 0
VALUE_VERSION = 0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# producer_id int64 | producer_epoch int16 | txn_timeout_ms int32 | state int8
_VALUE_HEAD = struct.Struct(">qhib")
# txn_last_update_timestamp int64 | txn_start_timestamp int64
_VALUE_TAIL = struct.Struct(">qq")


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: tuple[tuple[str, int], ...]  # (topic, partition), sorted
    txn_last_update_timestamp: int
    txn_start_timestamp: int


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def value_bytes(v: TxnLogValue) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(v.partitions):
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(_I16.pack(VALUE_VERSION))
    out += _VALUE_HEAD.pack(v.producer_id, v.producer_epoch, v.txn_timeout_ms, v.state.byte)
    out += _I32.pack(len(by_topic))
    for topic, partitions in by_topic.items():
        out += _string(topic) + _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p)
    out += _VALUE_TAIL.pack(v.txn_last_update_timestamp, v.txn_start_timestamp)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, s: struct.Struct) -> tuple[Any, ...]:
        if self.pos + s.size > len(self.data):
            raise CorruptRecordException("Transaction log record is cut short")
        values = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return values

    def string(self) -> str:
        (n,) = self.unpack(_I16)
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordException("Transaction log record has a bad string length")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s


def read_key(data: bytes) -> str:
    r = _Reader(data)
    (version,) = r.unpack(_I16)
    if version != KEY_VERSION:
        raise CorruptRecordException(f"Unknown version {version} from the transaction log message key")
    return r.string()


def read_value(data: bytes) -> TxnLogValue:
    r = _Reader(data)
    (version,) = r.unpack(_I16)
    if version != VALUE_VERSION:
        raise CorruptRecordException(f"Unknown version {version} from the transaction log message value")
    pid, epoch, timeout, state = r.unpack(_VALUE_HEAD)
    partitions: list[tuple[str, int]] = []
    (topics,) = r.unpack(_I32)
    for _ in range(max(topics, 0)):
        topic = r.string()
        (count,) = r.unpack(_I32)
        partitions.extend((topic, r.unpack(_I32)[0]) for _ in range(max(count, 0)))
    last_update, start = r.unpack(_VALUE_TAIL)
    return TxnLogValue(
        pid, epoch, timeout, TransactionState.from_byte(state), tuple(partitions), last_update, start
    )
