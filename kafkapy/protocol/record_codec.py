"""The records inside a v2 batch: the one encoder and the one decoder. No I/O.

Used by the producer (ProducerBatch is a RecordBatchBuilder), the consumers (client/records.py,
the legacy consumer), the broker (offset commits, transaction state, coordinators loading their
logs, control batches, the cleaner) and the tools. The batch header, its validation and the
in-place patching of leader-assigned fields are record_batch.py's.

A record (uncompressed form)::

    length           varint   bytes after this field
    attributes       int8     unused
    timestampDelta   varlong  timestamp - the batch's baseTimestamp
    offsetDelta      varint   offset - the batch's baseOffset
    keyLength        varint   -1: null key
    key              bytes
    valueLength      varint   -1: null value (a tombstone)
    value            bytes
    headersCount     varint
    headers          per header: keyLength varint, key (UTF-8), valueLength varint, value

Varints are zig-zag encoded (primitives.py reads and writes them). Nearly every length and delta
fits one byte: the decoder reads that case inline, and the encoder takes the bytes of the
first 2^15 values from a table, since a call per field would cost more than the rest of the
per-record work on the producer's and the consumer's hot paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypedDict, TypeVar, Unpack

from kafkapy.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, compress, decompress
from kafkapy.protocol.constants import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
)
from kafkapy.protocol.errors import (
    CorruptRecordException,
    ProtocolError,
    UnsupportedForMessageFormatException,
)
from kafkapy.protocol.primitives import INT16, INT32, UINT32, read_varlong, write_varlong
from kafkapy.protocol.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_V2,
    Attr,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
    read_header,
)

Header = tuple[str, bytes | None]
T = TypeVar("T")

# The smallest record: length, attributes, timestamp delta, offset delta, key length, value
# length and header count, one byte each.
MIN_RECORD_SIZE: Final = 7
_INT32_MAX: Final = 2**31 - 1
# Plain-int copies of the masks for per-batch code: IntFlag arithmetic costs microseconds.
_COMPRESSION_MASK: Final = int(Attr.COMPRESSION_MASK)
_LOG_APPEND_TIME: Final = int(Attr.LOG_APPEND_TIME)
_TRANSACTIONAL: Final = int(Attr.TRANSACTIONAL)

# -- encoding -----------------------------------------------------------------------------------

VARINT_TABLE: Final = 1 << 15
_V: Final = tuple(write_varlong(i) for i in range(VARINT_TABLE))
NULL_VARINT: Final = write_varlong(-1)  # the length of a null key, value or header value


def varint(value: int) -> bytes:
    """The zig-zag varint (varlong) bytes of `value`."""
    return _V[value] if 0 <= value < VARINT_TABLE else write_varlong(value)


def encode_headers(headers: Sequence[Header]) -> bytes:
    """A record's headers section: the count, then each header's key and value."""
    out = bytearray(varint(len(headers)))
    for hkey, hvalue in headers:
        k = hkey.encode()
        out += varint(len(k))
        out += k
        if hvalue is None:
            out += NULL_VARINT
        else:
            out += varint(len(hvalue))
            out += hvalue
    return bytes(out)


class BatchFields(TypedDict, total=False):
    """The header fields a batch's writer chooses; absent ones take the RecordBatch defaults
    (no producer id, epoch, sequence or leader epoch; base offset 0; CreateTime)."""

    compression: int
    base_offset: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    timestamp_type: TimestampType


class RecordBatchBuilder:
    """Records appended one by one into a batch buffer whose 61 header bytes `build` fills.

    `limit` bounds the batch's size: `append` refuses a record that would pass it (a first
    record is always taken, as Kafka's producer sends an oversized record alone); so does
    `max_records`. Each record's timestamp and key/value sizes (-1: null) are kept, for what a
    producer reports per record (RecordMetadata), in parallel lists of ints: a tuple per record
    would be one more object for the garbage collector to walk while the batch lives.
    """

    __slots__ = ("buf", "count", "base_ts", "max_ts", "limit", "max_records", "timestamps", "key_sizes",
                 "value_sizes")  # fmt: skip

    def __init__(self, base_ts: int, limit: int = _INT32_MAX, max_records: int | None = None) -> None:
        self.buf = bytearray(HEADER_SIZE)
        self.count = 0
        self.base_ts = base_ts
        self.max_ts = base_ts
        self.limit = limit
        self.max_records = max_records
        self.timestamps: list[int] = []
        self.key_sizes: list[int] = []
        self.value_sizes: list[int] = []

    def append(self, ts: int, key: bytes | None, value: bytes | None, headers: bytes | None) -> int:
        """Encode one record (`headers` from `encode_headers`, None for none): its index in the
        batch, or -1 if it does not fit."""
        count = self.count
        delta = ts - self.base_ts
        ts_bytes = _V[delta] if 0 <= delta < VARINT_TABLE else write_varlong(delta)
        od_bytes = _V[count] if count < VARINT_TABLE else write_varlong(count)
        if key is None:
            klen, ksize, k_bytes = 0, -1, NULL_VARINT
        else:
            klen = ksize = len(key)
            k_bytes = _V[klen] if klen < VARINT_TABLE else write_varlong(klen)
        if value is None:
            vlen, vsize, v_bytes = 0, -1, NULL_VARINT
        else:
            vlen = vsize = len(value)
            v_bytes = _V[vlen] if vlen < VARINT_TABLE else write_varlong(vlen)
        size = 2 + len(ts_bytes) + len(od_bytes) + len(k_bytes) + klen + len(v_bytes) + vlen
        size += len(headers) - 1 if headers else 0
        buf = self.buf
        if count and (len(buf) + size + 5 > self.limit or count == self.max_records):
            return -1
        buf += _V[size] if size < VARINT_TABLE else write_varlong(size)
        buf += b"\x00"  # record attributes: none defined
        buf += ts_bytes
        buf += od_bytes
        buf += k_bytes
        if key:
            buf += key
        buf += v_bytes
        if value:
            buf += value
        buf += headers or b"\x00"
        if ts > self.max_ts:
            self.max_ts = ts
        self.timestamps.append(ts)
        self.key_sizes.append(ksize)
        self.value_sizes.append(vsize)
        self.count = count + 1
        return count

    def build(
        self,
        compression: int = 0,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        transactional: bool = False,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    ) -> bytearray:
        """Compress the records section if asked, fill the header and its CRC; the batch.

        The arguments are BatchFields' (plain parameters: the producer calls this per batch)."""
        if compression:
            records = compress(compression, memoryview(self.buf)[HEADER_SIZE:])
            self.buf = self.buf[:HEADER_SIZE] + records
        buf = self.buf
        attributes = compression | (_TRANSACTIONAL if transactional else 0)
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= _LOG_APPEND_TIME
        HEADER.pack_into(
            buf, 0, base_offset, len(buf) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0, attributes,
            self.count - 1, self.base_ts, self.max_ts, producer_id, producer_epoch, base_sequence, self.count,
        )  # fmt: skip
        UINT32.pack_into(buf, CRC_OFFSET, compute_crc(memoryview(buf), 0, len(buf)))
        return buf


def build_batch(
    records: Iterable[tuple[bytes | None, bytes | None, Sequence[Header], int]], **fields: Unpack[BatchFields]
) -> bytearray:
    """An uncompressed v2 batch of (key, value, headers, timestamp) records."""
    items = list(records)
    if not items:
        raise ValueError("a record batch holds at least one record")
    builder = RecordBatchBuilder(items[0][3])
    for key, value, headers, ts in items:
        builder.append(ts, key, value, encode_headers(headers) if headers else None)
    return builder.build(**fields)


# -- decoding -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


# make(offset, timestamp, key, value, headers): what the caller keeps of each record.
RecordFactory = Callable[[int, int, "bytes | None", "bytes | None", tuple[Header, ...]], T]


def read_records(body: bytes, header: BatchHeader, make: RecordFactory[T], min_offset: int = 0) -> list[T]:
    """The records of an uncompressed records section `body` (of the batch `header` describes)
    with offset >= min_offset, each built by `make`; CorruptRecordException if it is malformed.
    """
    count = header.records_count
    # The count comes from the wire: a batch claiming 2^31 records in 100 bytes is refused
    # before the loop, since every record takes at least MIN_RECORD_SIZE bytes.
    if not 0 <= count <= len(body) // MIN_RECORD_SIZE:
        raise CorruptRecordException(
            f"Found invalid record count {count} in magic v2 batch of {header.size} bytes"
        )
    log_append = header.attributes & _LOG_APPEND_TIME
    base_offset, base_ts, max_ts = header.base_offset, header.base_timestamp, header.max_timestamp
    out: list[T] = []
    append = out.append
    pos = 0
    try:
        for _ in range(count):
            n = body[pos]
            length, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else read_varlong(body, pos)
            rec_end = pos + length
            pos += 1  # record attributes: unused
            n = body[pos]
            ts_delta, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else read_varlong(body, pos)
            n = body[pos]
            offset_delta, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else read_varlong(body, pos)
            n = body[pos]
            klen, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else read_varlong(body, pos)
            if klen < 0:
                key = None
            else:
                key = body[pos : pos + klen]
                pos += klen
            n = body[pos]
            vlen, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else read_varlong(body, pos)
            if vlen < 0:
                value = None
            else:
                value = body[pos : pos + vlen]
                pos += vlen
            headers: tuple[Header, ...] = ()
            if body[pos] == 0:
                pos += 1
            else:
                headers, pos = _headers(body, pos, rec_end)
            if pos != rec_end:
                raise CorruptRecordException("Record length does not match its fields")
            offset = base_offset + offset_delta
            if offset >= min_offset:
                append(make(offset, max_ts if log_append else base_ts + ts_delta, key, value, headers))
    except (IndexError, ProtocolError, UnicodeDecodeError) as e:
        raise CorruptRecordException(f"Record batch at offset {base_offset} is corrupt: {e}") from e
    if pos != len(body):
        raise CorruptRecordException("Batch has bytes after its last record")
    return out


def _headers(body: bytes, pos: int, rec_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varlong(body, pos)
    if not 0 <= count <= (rec_end - pos) // 2:  # a header takes two length varints at least
        raise CorruptRecordException(f"Found invalid number of record headers {count}")
    out: list[Header] = []
    for _ in range(count):
        klen, pos = read_varlong(body, pos)
        if klen < 0:
            raise CorruptRecordException(f"Invalid negative header key size {klen}")
        hkey = body[pos : pos + klen].decode()
        pos += klen
        vlen, pos = read_varlong(body, pos)
        if vlen < 0:
            out.append((hkey, None))
        else:
            out.append((hkey, body[pos : pos + vlen]))
            pos += vlen
    return tuple(out), pos


def decode_records(buf: memoryview | bytes | bytearray, position: int = 0) -> list[Record]:
    """The records of the uncompressed batch at `position`, with absolute offsets and timestamps."""
    view = memoryview(buf)
    header = read_header(view, position)
    if header.compression != CompressionType.NONE:
        raise UnsupportedForMessageFormatException("decode_records reads uncompressed batches only")
    end = position + header.size
    if end > len(view):
        raise CorruptRecordException(f"Batch of {header.size} bytes is truncated to {len(view) - position}")
    return read_records(bytes(view[position + HEADER_SIZE : end]), header, Record)


def decode_batch_records(
    buf: bytes | bytearray | memoryview, position: int = 0, max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> list[Record]:
    """The records of the batch at `position`, compressed or not (absolute offsets/timestamps);
    a compressed one may inflate to `max_size` bytes at most."""
    view = memoryview(buf)
    header = read_header(view, position)
    if header.compression == CompressionType.NONE:
        return decode_records(view, position)
    body = decompress(header.compression, view[position + HEADER_SIZE : position + header.size], max_size)
    return read_records(body, header, Record)


def compress_batch(batch: bytes | bytearray | memoryview, codec: int) -> bytearray:
    """An uncompressed v2 batch (e.g. from `build_batch`) re-encoded with `codec`, CRC updated."""
    view = memoryview(batch)
    header = read_header(view)
    out = bytearray(view[:HEADER_SIZE]) + compress(codec, view[HEADER_SIZE : header.size])
    INT32.pack_into(out, LENGTH_OFFSET, len(out) - LOG_OVERHEAD)
    INT16.pack_into(out, ATTRIBUTES_OFFSET, (header.attributes & ~_COMPRESSION_MASK) | codec)
    UINT32.pack_into(out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


def record_varint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """A varint inside a record (readers that walk records themselves: the cleaner)."""
    try:
        return read_varlong(buf, pos)
    except ProtocolError as e:
        raise CorruptRecordException(f"Malformed varint in record: {e}") from e
