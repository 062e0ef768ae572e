"""The "kafkapy" PySpark data source: Spark's Kafka source and sink, in Python.

    spark.read.format("kafkapy").option("kafka.bootstrap.servers", "host:9092")
         .option("subscribe", "events").load()

Options, offset JSON and row schema are those of Spark's built-in Kafka connector (see
Spark's Structured Streaming + Kafka Integration Guide), so a job ports by changing the
format name ("kafka" itself is reserved by Spark and cannot be registered).
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kafkapy.spark import options as opts
from kafkapy.spark.rows import read_schema

NAME = "kafkapy"


class KafkapyDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return read_schema(opts.get_bool(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        from kafkapy.spark.reader import KafkaBatchReader

        self._check_schema(schema)
        return KafkaBatchReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from kafkapy.spark.stream import KafkaStreamReader

        self._check_schema(schema)
        return KafkaStreamReader(self.options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from kafkapy.spark.sink import KafkaBatchWriter

        return KafkaBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from kafkapy.spark.sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema)

    def _check_schema(self, schema: StructType) -> None:
        # The schema is Kafka's record layout; Spark's source refuses user schemas the same way.
        if schema != self.schema():
            raise opts.KafkaOptionError("Kafka source has a fixed schema and cannot be set with a custom one")
