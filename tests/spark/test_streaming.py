"""Streaming reads and writes through format("kafkapy"): admission control, checkpoints, new
partitions, exactly-once into a file sink, and the Kafka sink."""

from __future__ import annotations

import pytest
from spark_helpers import add_partitions, consume_all, create_topic, numbered, produce

pytestmark = pytest.mark.spark


def _run_available_now(spark, bootstrap, topic, out, checkpoint, **options):
    """One Trigger.AvailableNow run into Parquet; returns the input rows of each micro-batch."""
    reader = (
        spark.readStream.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_stream_admission_control_and_restart_from_checkpoint_reads_each_record_once(
    spark, bootstrap, topic, tmp_path
):
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, numbered(12, 3))  # 4 per partition
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    # Spark's rate limit: 6 * (4/12) = 2 per partition -> 6 per trigger.
    sizes = _run_available_now(spark, bootstrap, topic, out, checkpoint, maxOffsetsPerTrigger="6")
    assert sizes == [6, 6]

    # More data, one more partition (picked up from its earliest offset), then a restart.
    produce(bootstrap, topic, numbered(6, 3, start=12))
    add_partitions(bootstrap, topic, 4)
    produce(bootstrap, topic, [(3, b"new", b"n0", 0), (3, b"new", b"n1", 0)])
    # Backlog 2 in each of 4 partitions: 6 * (2/8) = 1.5 -> 1 each, then the other 4.
    sizes = _run_available_now(spark, bootstrap, topic, out, checkpoint, maxOffsetsPerTrigger="6")
    assert sizes == [4, 4]

    rows = sorted((r.partition, r.offset, r.value) for r in spark.read.parquet(str(out)).collect())
    expected = sorted([(i % 3, i // 3, f"v{i}") for i in range(18)] + [(3, 0, "n0"), (3, 1, "n1")])
    assert rows == expected  # every record exactly once across the two runs


def test_batch_write_lands_every_row_with_per_row_topics(spark, bootstrap, topic):
    create_topic(bootstrap, topic + "-a", 2)
    create_topic(bootstrap, topic + "-b", 1)
    rows = [(f"{topic}-a" if i % 2 else f"{topic}-b", f"key{i}", f"value{i}") for i in range(40)]
    df = spark.createDataFrame(rows, ["topic", "key", "value"])
    df.write.mode("append").format("kafkapy").option("kafka.bootstrap.servers", bootstrap).save()
    got_a = consume_all(bootstrap, topic + "-a", 2)
    got_b = consume_all(bootstrap, topic + "-b", 1)
    assert sorted(v for *_x, v in got_a) == sorted(f"value{i}".encode() for i in range(1, 40, 2))
    assert sorted(v for *_x, v in got_b) == sorted(f"value{i}".encode() for i in range(0, 40, 2))
    # Keys are partitioned as Kafka's default partitioner does: one key, one partition.
    partition_of = {k: p for p, _o, k, _v in got_a}
    assert all(partition_of[k] == p for p, _o, k, _v in got_a)


def test_write_errors_fail_the_task_with_the_broker_error(spark, bootstrap, topic):
    create_topic(bootstrap, topic, 1, {"max.message.bytes": "2000"})
    df = spark.createDataFrame([("x" * 10_000,)], ["value"])
    # The broker refuses the batch (MESSAGE_TOO_LARGE); the task fails with its error and message.
    with pytest.raises(Exception, match="RecordTooLargeException: The record batch size .* exceeds"):
        (
            df.write.mode("append").format("kafkapy")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .save()
        )  # fmt: skip


def test_streaming_write_copies_a_topic(spark, bootstrap, topic, tmp_path):
    create_topic(bootstrap, topic + "-in", 2)
    create_topic(bootstrap, topic + "-out", 2)
    produce(bootstrap, topic + "-in", numbered(50, 2), headers=True)
    query = (
        spark.readStream.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic + "-in")
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .selectExpr("key", "value", "headers")
        .writeStream.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic + "-out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    copied = consume_all(bootstrap, topic + "-out", 2)
    assert sorted((k, v) for _p, _o, k, v in copied) == sorted(
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(50)
    )
