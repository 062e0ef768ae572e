"""Kafka records -> Arrow record batches in Spark's Kafka source schema.

The schema is Spark's (KafkaRecordToRowConverter): key binary, value binary, topic string,
partition int, offset long, timestamp timestamp, timestampType int, and with includeHeaders
an array of (key string, value binary). Readers yield `pyarrow.RecordBatch`es whose schema is
exactly `to_arrow_schema(schema, timezone="UTC")`; Spark rejects anything else.

Records (decoded, decompressed, by kafkapy's consumer) go into per-column lists, so one Arrow
array is built per column per fetch instead of one Python tuple per row, which Spark would
turn back into Arrow anyway.
"""

from __future__ import annotations

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

from kafkapy.client.records import ConsumerRecord

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


def read_schema(include_headers: bool) -> StructType:
    fields = list(BASE_FIELDS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    return to_arrow_schema(read_schema(include_headers), timezone="UTC")


def to_arrow(records: list[ConsumerRecord], schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow batch of `records` (all of one topic partition; at least one)."""
    n = len(records)
    millis = pa.array([r.timestamp for r in records], pa.int64())
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.repeat(pa.scalar(records[0].topic, pa.string()), n),
        pa.repeat(pa.scalar(records[0].partition, pa.int32()), n),
        pa.array([r.offset for r in records], pa.int64()),
        # Kafka keeps milliseconds; Spark's timestamp is microseconds since the epoch, UTC.
        pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(pa.array([list(r.headers) for r in records], schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
