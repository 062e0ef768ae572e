"""Record batch v2 (magic 2), Kafka's on-disk and on-wire unit of records. No I/O.

Batch header, 61 bytes, big-endian::

    offset  size  field
         0     8  baseOffset            first offset of the batch (assigned by the leader)
         8     4  batchLength           bytes after this field, i.e. batch size - 12
        12     4  partitionLeaderEpoch  leader epoch at append time (assigned by the leader)
        16     1  magic                 2
        17     4  crc                   CRC-32C (Castagnoli) of bytes 21..end of batch
        21     2  attributes            see `Attr`
        23     4  lastOffsetDelta       last offset - baseOffset
        27     8  baseTimestamp         timestamp of the first record
        35     8  maxTimestamp          largest timestamp (the append time with LogAppendTime)
        43     8  producerId            -1 without idempotence
        51     2  producerEpoch
        53     4  baseSequence          sequence number of the first record, -1 without idempotence
        57     4  recordsCount
        61        records (compressed as a whole when attributes say so)

The CRC starts at `attributes`, so a broker patches baseOffset and partitionLeaderEpoch in
place without touching it; only LogAppendTime (attributes + maxTimestamp) needs a new CRC.

The records themselves are record_codec.py's (the one encoder and decoder, shared by the
broker, the producer and the consumers); the broker never decodes records on the append path.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from enum import IntEnum, IntFlag
from typing import NamedTuple

from crc32c import crc32c

from kafkapy.protocol.constants import (
    NO_PRODUCER_ID,
)
from kafkapy.protocol.errors import (
    CorruptRecordException,
    InvalidRecordException,
    RecordTooLargeException,
    UnsupportedForMessageFormatException,
)

HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc (unsigned: CRC-32C is a 32-bit unsigned checksum)
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the prefix every batch format shares
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_RECORD_OVERHEAD = 14  # magic v0's record overhead: Kafka's first sanity bound on batchLength

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

MAGIC_V2 = 2
INT32_MAX = 2**31 - 1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class Attr(IntFlag):
    """Bits of the `attributes` field."""

    COMPRESSION_MASK = 0x07  # 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
    LOG_APPEND_TIME = 0x08  # timestampType: 0 CreateTime, 1 LogAppendTime
    TRANSACTIONAL = 0x10
    CONTROL = 0x20
    DELETE_HORIZON = 0x40


# Plain-int copies of the masks for per-batch code: IntFlag arithmetic costs microseconds.
_COMPRESSION_MASK = int(Attr.COMPRESSION_MASK)
_LOG_APPEND_TIME = int(Attr.LOG_APPEND_TIME)
_TRANSACTIONAL = int(Attr.TRANSACTIONAL)
_CONTROL = int(Attr.CONTROL)


class CompressionType(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class BatchHeader(NamedTuple):
    """The parsed 61-byte header. A tuple, not a dataclass: one is built per batch on hot paths."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        return (
            TimestampType.LOG_APPEND_TIME if self.attributes & _LOG_APPEND_TIME else TimestampType.CREATE_TIME
        )

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequence numbers wrap from INT32_MAX to 0, as producers number them."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


_new_tuple = tuple.__new__  # NamedTuple construction without _make's Python-level checks


def read_header(buf: memoryview | bytes | bytearray, position: int = 0) -> BatchHeader:
    return _new_tuple(BatchHeader, HEADER.unpack_from(buf, position))


def compute_crc(buf: memoryview, position: int, size: int) -> int:
    return crc32c(buf[position + ATTRIBUTES_OFFSET : position + size])


def iter_batches(
    buf: memoryview, position: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole v2 batch in `buf[position:end]`, without copying.

    Stops quietly at a trailing incomplete batch, as Kafka's log input streams do (a fetch
    response or a file may end mid-batch); raises CorruptRecordException on a length or magic
    that cannot belong to a batch.
    """
    end = len(buf) if end is None else end
    while end - position >= HEADER_SIZE:
        header = read_header(buf, position)
        size = checked_batch_size(header)
        if position + size > end:
            return
        yield position, header
        position += size


def checked_batch_size(header: BatchHeader) -> int:
    """The batch's size from its header, once length and magic are plausible for a v2 batch."""
    if header.batch_length < MIN_RECORD_OVERHEAD:
        raise CorruptRecordException(
            f"Record size {header.batch_length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})"
        )
    if header.magic < 0 or header.magic > MAGIC_V2:
        raise CorruptRecordException(f"Invalid magic found in record: {header.magic}")
    if header.magic != MAGIC_V2:
        raise UnsupportedForMessageFormatException(
            f"Record batch magic {header.magic} is not supported: kafkapy stores message format v2 only"
        )
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordException(f"Record batch size {header.size} is smaller than the v2 header")
    return header.size


def validate_records(
    buf: memoryview, max_message_bytes: int | None, *, from_client: bool = True
) -> list[tuple[int, BatchHeader]]:
    """Check a producer's (or a leader's) record set batch by batch from the headers alone.

    Returns (position, header) per batch. Follows Kafka's LogValidator for v2 without
    decompressing: whole batches only, sane sizes, magic 2, CRC, and for clients a base offset
    of 0, a record count that matches lastOffsetDelta, no control batches, and a base sequence
    whenever a producer id is set. `max_message_bytes=None` skips the size limit (followers
    append what the leader accepted, whatever the topic config says now).
    """
    batches: list[tuple[int, BatchHeader]] = []
    position, end = 0, len(buf)
    # Once per produced partition: the common case is checked inline, and the checking helpers
    # only run to name what is wrong.
    while position < end:
        if end - position < HEADER_SIZE:
            raise CorruptRecordException(
                f"Record set ends with {end - position} bytes that are not a whole batch"
            )
        header = read_header(buf, position)
        size = header.batch_length + LOG_OVERHEAD
        if header.magic != MAGIC_V2 or header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            checked_batch_size(header)
        if position + size > end:
            raise CorruptRecordException(
                f"Record batch of {size} bytes at position {position} is truncated to {end - position} bytes"
            )
        if max_message_bytes is not None and size > max_message_bytes:
            raise RecordTooLargeException(
                f"The record batch size {size} bytes exceeds the maximum configured value of {max_message_bytes}."
            )
        computed = compute_crc(buf, position, size)
        if computed != header.crc:
            raise CorruptRecordException(
                f"Record is corrupt (stored crc = {header.crc}, computed crc = {computed})"
            )
        attributes = header.attributes
        if attributes & _COMPRESSION_MASK > 4:  # beyond zstd
            raise InvalidRecordException(f"Unknown compression type id {header.compression}")
        if from_client and (
            header.base_offset != 0
            or header.records_count <= 0
            or header.last_offset_delta + 1 != header.records_count
            or attributes & _CONTROL
            or (header.producer_id > NO_PRODUCER_ID and header.base_sequence < 0)
        ):
            _validate_client_batch(header)
        batches.append((position, header))
        position += size
    return batches


def _validate_client_batch(header: BatchHeader) -> None:
    if header.base_offset != 0:
        raise InvalidRecordException(
            f"The baseOffset of the record batch should be 0, but it is {header.base_offset}"
        )
    if header.records_count <= 0:
        raise InvalidRecordException(f"Invalid reported count for record batch: {header.records_count}")
    if header.last_offset_delta + 1 != header.records_count:
        raise InvalidRecordException(
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] "
            f"and count of records {header.records_count}"
        )
    if header.is_control:
        raise InvalidRecordException("Clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordException(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId {header.producer_id}"
        )


def set_base_offset(buf: memoryview | bytearray, position: int, base_offset: int, leader_epoch: int) -> None:
    """Patch the leader-assigned fields in place; both lie outside the CRC."""
    _I64.pack_into(buf, position + BASE_OFFSET_OFFSET, base_offset)
    _I32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)


def set_log_append_time(buf: memoryview, position: int, size: int, timestamp: int) -> None:
    """Stamp LogAppendTime: the attribute bit and maxTimestamp change, so the CRC is recomputed."""
    (attributes,) = _I16.unpack_from(buf, position + ATTRIBUTES_OFFSET)
    _I16.pack_into(buf, position + ATTRIBUTES_OFFSET, attributes | _LOG_APPEND_TIME)
    _I64.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, timestamp)
    _U32.pack_into(buf, position + CRC_OFFSET, compute_crc(buf, position, size))
