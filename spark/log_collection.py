"""log_collection: JSON log lines from topics into a Parquet table.

Each record's value is one JSON log line. Lines are parsed with the spec's `schema` (Spark DDL);
the table gets those columns, the Kafka position (topic, partition, offset), the record
timestamp as `kafka_timestamp`, a `date` column to partition by, and `raw` holding lines that
are not valid JSON objects (their parsed columns are null), so no line is silently dropped.

    kafkapy-spark-submit log_collection --spec spark/log_collection.yaml
"""

from __future__ import annotations

import sys
from typing import Any

from kafkapy.spark.jobs import apply_trigger, main, require, source_options, topics_of

CORRUPT = "_corrupt_record"
DEFAULT_SCHEMA = "ts TIMESTAMP, level STRING, logger STRING, host STRING, message STRING"


def parsed(spark: Any, spec: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafkapy")
        .option("kafka.bootstrap.servers", str(spec["bootstrap_servers"]))
        .option("subscribe", ",".join(topics_of(spec)))
        .option("startingOffsets", str(spec.get("starting_offsets", "earliest")))
    )
    for k, v in source_options(spec).items():
        reader = reader.option(k, v)
    schema = str(spec.get("schema", DEFAULT_SCHEMA))
    lines = reader.load().select(
        F.col("value").cast("string").alias("line"), "topic", "partition", "offset",
        F.col("timestamp").alias("kafka_timestamp"),
    )  # fmt: skip
    # PERMISSIVE parsing puts a line that is not a JSON object into the corrupt-record field
    # (its other fields null): it becomes `raw` instead of vanishing.
    doc = F.from_json("line", f"{schema}, {CORRUPT} STRING", {"columnNameOfCorruptRecord": CORRUPT})
    with_doc = lines.withColumn("doc", doc)
    columns = [F.col(f"doc.{name}").alias(name) for name in _field_names(spark, schema)]
    time_column = str(spec.get("time_field", "ts"))
    return with_doc.select(
        *columns,
        "topic", "partition", "offset", "kafka_timestamp",
        F.to_date(F.coalesce(F.col(f"doc.{time_column}"), F.col("kafka_timestamp"))).alias("date"),
        F.col(f"doc.{CORRUPT}").alias("raw"),
    )  # fmt: skip


def _field_names(spark: Any, ddl: str) -> list[str]:
    from pyspark.sql.types import _parse_datatype_string

    return [f.name for f in _parse_datatype_string(ddl).fields]


def run(spark: Any, spec: dict[str, Any]) -> Any:
    require(spec, "bootstrap_servers", "topics", "table", "checkpoint")
    writer = (
        parsed(spark, spec)
        .writeStream.format(str(spec.get("table_format", "parquet")))
        .partitionBy(*list(spec.get("partition_by", ["date"])))
        .option("path", str(spec["table"]))
        .option("checkpointLocation", str(spec["checkpoint"]))
    )
    query = apply_trigger(writer, spec.get("trigger")).start()
    query.awaitTermination()
    return query


if __name__ == "__main__":
    sys.exit(main("log_collection", run))
