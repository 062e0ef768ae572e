"""kafkapy's PySpark data source ("kafkapy"): Spark's Kafka connector in Python.

`register(spark)` registers it on a session; installed kafkapy also registers it by itself
through the `pyspark_kafkapy` module, where PySpark looks for data sources (see README).
"""

from __future__ import annotations

from typing import Any

from kafkapy.spark.source import NAME, KafkapyDataSource

__all__ = ["NAME", "KafkapyDataSource", "register"]


def register(spark: Any) -> None:
    """Make format("kafkapy") available on `spark` (a SparkSession)."""
    spark.dataSource.register(KafkapyDataSource)
