"""Control batches: the COMMIT/ABORT markers a transaction coordinator writes (KIP-98).

A control batch is a v2 batch with the transactional and control attribute bits set, the
producer's id and epoch, no sequence (-1) and one record whose

    key   = ControlRecordType: version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
    value = EndTransactionMarker: version int16 (0) | coordinatorEpoch int32

as Kafka's ControlRecordType and EndTransactionMarker write them.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import ATTRIBUTES_OFFSET, CRC_OFFSET, Attr, compute_crc
from kafkapy.protocol.record_codec import build_batch, decode_records

# version int16 | type int16
_KEY = struct.Struct(">hh")
# version int16 | coordinatorEpoch int32
_VALUE = struct.Struct(">hi")
_ATTRS = struct.Struct(">h")
_CRC = struct.Struct(">I")
CONTROL_RECORD_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecordType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


class EndTxnMarker(NamedTuple):
    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def is_abort(self) -> bool:
        return self.control_type == ControlRecordType.ABORT


def build_control_batch(
    producer_id: int,
    producer_epoch: int,
    marker: EndTxnMarker,
    timestamp: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """One control batch holding `marker`, base offset 0 (the leader assigns the real one)."""
    key = _KEY.pack(CONTROL_RECORD_KEY_VERSION, int(marker.control_type))
    value = _VALUE.pack(END_TXN_MARKER_VERSION, marker.coordinator_epoch)
    out = build_batch(
        [(key, value, (), timestamp)],
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
    )
    (attributes,) = _ATTRS.unpack_from(out, ATTRIBUTES_OFFSET)
    _ATTRS.pack_into(out, ATTRIBUTES_OFFSET, attributes | Attr.CONTROL)
    _CRC.pack_into(out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


def parse_control_batch(buf: memoryview | bytes | bytearray, position: int = 0) -> EndTxnMarker:
    """The marker of the control batch at `position`; CorruptRecordException if it is not one."""
    records = decode_records(buf, position)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise CorruptRecordException("Control batch without a control record key")
    _version, type_ = _KEY.unpack_from(records[0].key)
    value = records[0].value
    if type_ not in (0, 1) or value is None or len(value) < _VALUE.size:
        raise CorruptRecordException(f"Control record of unknown type {type_} or without a marker value")
    _value_version, coordinator_epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(ControlRecordType(type_), coordinator_epoch)
