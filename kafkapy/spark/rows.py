"""Kafka records -> Arrow record batches in Spark's Kafka source schema.

The schema is Spark's (KafkaRecordToRowConverter): key binary, value binary, topic string,
partition int, offset long, timestamp timestamp, timestampType int, and with includeHeaders
an array of (key string, value binary). Readers yield `pyarrow.RecordBatch`es whose schema is
exactly `to_arrow_schema(schema, timezone="UTC")`; Spark rejects anything else.

Decoding is columnar: each record's fields go straight into per-column lists, so one Arrow
array is built per column per fetch instead of one Python tuple per row (Spark would convert
tuples back to Arrow anyway). Compressed batches are inflated with kafka-python's codecs.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import HEADER_SIZE, iter_batches

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]
_COMPRESSION_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_CONTROL = 0x20


def read_schema(include_headers: bool) -> StructType:
    fields = list(BASE_FIELDS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def _inflate(codec: int, data: bytes) -> bytes:
    from kafka import codec as kc  # kafka-python is a kafkapy dependency; import only when needed

    if codec == 1:
        return kc.gzip_decode(data)
    if codec == 2:
        return kc.snappy_decode(data)
    if codec == 3:
        return kc.lz4_decode(data)
    if codec == 4:
        return kc.zstd_decode(data)
    raise CorruptRecordException(f"Unknown compression type id {codec}")


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:  # one-byte varints are the common case: lengths and deltas of small records
        return (b >> 1) ^ -(b & 1), pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos + 1
        shift += 7


class RowBuffer:
    """Column lists for the records of one topic partition, turned into Arrow batches."""

    def __init__(self, topic: str, partition: int, include_headers: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.arrow_schema = to_arrow_schema(read_schema(include_headers), timezone="UTC")
        self.clear()

    def clear(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.ts_types: list[int] = []
        self.headers: list[list[tuple[str, bytes | None]]] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add_batches(self, records: memoryview, start: int, end: int) -> int:
        """Decode the whole batches in `records`, keeping offsets in [start, end).

        Returns the offset after the last batch seen (the next fetch offset), or `start`
        when there was no whole batch. Control batches (transaction markers) take offsets
        but are not records, as Kafka's consumer skips them.
        """
        next_offset = start
        for position, h in iter_batches(records):
            next_offset = max(next_offset, h.base_offset + h.last_offset_delta + 1)
            if h.attributes & _CONTROL or next_offset <= start or h.base_offset >= end:
                continue
            body_start, body_end = position + HEADER_SIZE, position + h.batch_length + 12
            codec = h.attributes & _COMPRESSION_MASK
            body = (
                records[body_start:body_end]
                if codec == 0
                else _inflate(codec, bytes(records[body_start:body_end]))
            )
            log_append = h.attributes & _LOG_APPEND_TIME
            self._add_records(body, h.records_count, h.base_offset, h.base_timestamp,
                              h.max_timestamp if log_append else None, start, end)  # fmt: skip
        return next_offset

    def _add_records(
        self,
        body: Any,
        count: int,
        base_offset: int,
        base_ts: int,
        append_ts: int | None,
        start: int,
        end: int,
    ) -> None:
        buf = body if isinstance(body, bytes) else body.tobytes()
        keys, values, offsets, stamps, headers = (
            self.keys,
            self.values,
            self.offsets,
            self.timestamps,
            self.headers,
        )
        with_headers = self.include_headers
        ts_type = 0 if append_ts is None else 1
        before = len(offsets)
        pos = 0
        try:
            for _ in range(count):
                length, pos = _varint(buf, pos)
                rec_end = pos + length
                ts_delta, p = _varint(buf, pos + 1)  # +1: the unused record attributes byte
                offset_delta, p = _varint(buf, p)
                offset = base_offset + offset_delta
                if offset < start or offset >= end:
                    pos = rec_end
                    continue
                klen, p = _varint(buf, p)
                if klen < 0:
                    key = None
                else:
                    key, p = buf[p : p + klen], p + klen
                vlen, p = _varint(buf, p)
                if vlen < 0:
                    value = None
                else:
                    value, p = buf[p : p + vlen], p + vlen
                if with_headers:
                    headers.append(_headers(buf, p))
                keys.append(key)
                values.append(value)
                offsets.append(offset)
                stamps.append(base_ts + ts_delta if append_ts is None else append_ts)
                pos = rec_end
        except IndexError as e:
            raise CorruptRecordException(f"record batch at offset {base_offset} ends mid-record") from e
        self.ts_types.extend([ts_type] * (len(offsets) - before))

    def to_arrow(self) -> pa.RecordBatch:
        n = len(self.offsets)
        millis = pa.array(self.timestamps, pa.int64())
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.ts_types, pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array(self.headers, self.arrow_schema.field("headers").type))
        batch = pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)
        self.clear()
        return batch


def _headers(buf: bytes, p: int) -> list[tuple[str, bytes | None]]:
    count, p = _varint(buf, p)
    out = []
    for _ in range(count):
        klen, p = _varint(buf, p)
        key, p = buf[p : p + klen].decode(), p + klen
        vlen, p = _varint(buf, p)
        if vlen < 0:
            out.append((key, None))
        else:
            out.append((key, buf[p : p + vlen]))
            p += vlen
    return out
