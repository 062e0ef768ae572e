"""windowed_counts: a streaming count of records per key over event-time windows, to a topic.

Reads `input_topic`, counts records per key in tumbling windows of `window` on the record
timestamp, drops data later than `watermark`, and writes one JSON record per updated window
to `output_topic` (key = the input key; value = {"key", "window_start", "window_end",
"count"}). Progress lives in `checkpoint`: a restarted job resumes there.

    kafkapy-spark-submit windowed_counts --spec spark/windowed_counts.yaml
"""

from __future__ import annotations

import sys
from typing import Any

from kafkapy.spark.jobs import apply_trigger, main, require, source_options


def counts(spark: Any, spec: dict[str, Any]) -> Any:
    """The aggregated stream, as (key, value) rows ready for the Kafka sink."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafkapy")
        .option("kafka.bootstrap.servers", str(spec["bootstrap_servers"]))
        .option("subscribe", str(spec["input_topic"]))
        .option("startingOffsets", str(spec.get("starting_offsets", "earliest")))
    )
    if spec.get("max_offsets_per_trigger"):
        reader = reader.option("maxOffsetsPerTrigger", str(spec["max_offsets_per_trigger"]))
    for k, v in source_options(spec).items():
        reader = reader.option(k, v)
    events = reader.load().select(F.col("key").cast("string").alias("key"), "timestamp")
    windowed = (
        events.withWatermark("timestamp", str(spec.get("watermark", "1 minute")))
        .groupBy(F.window("timestamp", str(spec.get("window", "1 minute"))), "key")
        .count()
    )
    return windowed.select(
        F.col("key"),
        F.to_json(
            F.struct(
                "key",
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "count",
            )
        ).alias("value"),
    )


def run(spark: Any, spec: dict[str, Any]) -> Any:
    require(spec, "bootstrap_servers", "input_topic", "output_topic", "checkpoint")
    bootstrap, topic = str(spec["bootstrap_servers"]), str(spec["output_topic"])
    mode = str(spec.get("output_mode", "update"))
    writer = (
        counts(spark, spec).writeStream.outputMode(mode).option("checkpointLocation", str(spec["checkpoint"]))
    )
    if mode == "append":
        writer = writer.format("kafkapy").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
    else:
        # PySpark's Python streaming sinks take Append only, so updated windows go out through
        # the batch writer, once per micro-batch (at-least-once, like Spark's Kafka sink).
        def write_batch(batch: Any, batch_id: int) -> None:
            batch.write.mode("append").format("kafkapy").option("kafka.bootstrap.servers", bootstrap).option(
                "topic", topic
            ).save()

        writer = writer.foreachBatch(write_batch)
    query = apply_trigger(writer, spec.get("trigger")).start()
    query.awaitTermination()
    return query


if __name__ == "__main__":
    sys.exit(main("windowed_counts", run))
