"""A streaming query with the exactly-once kafkapy sink, run as its own driver process.

    python eos_spark_driver.py BOOTSTRAP INPUT OUTPUT CHECKPOINT MAX_OFFSETS_PER_TRIGGER

Copies INPUT to OUTPUT (value upper-cased) with Trigger.AvailableNow, `exactlyOnce=true`, from
the checkpoint; exits 0 once the backlog is written. The test kills it mid-batch through
kafkapy.spark.exactly_once.CRASH_ENV and starts it again.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    bootstrap, source, sink, checkpoint, per_trigger = sys.argv[1:6]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkapy.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkapy-eos")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkapy.spark.register(spark)
    query = (
        spark.readStream.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_trigger)
        .load()
        .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        .writeStream.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
