"""Automatic registration of kafkapy's data source.

PySpark imports every top-level module named `pyspark_*` it finds on the Python path and
registers the `DefaultSource` it exports (pyspark/sql/worker/lookup_data_sources.py); this
module exists only for that, so format("kafkapy") works without a register() call.
"""

from kafkapy.spark.source import KafkapyDataSource as DefaultSource

__all__ = ["DefaultSource"]
