"""df.write / df.writeStream .format("kafkapy"): rows produced to Kafka, as Spark's Kafka sink.

Columns (Spark's KafkaWriter): value (string or binary, required), key (string or binary),
topic (string; the "topic" option overrides it), partition (int; null lets the partitioner
choose), headers (array<struct<key string, value binary>>). Each task produces its rows and
flushes before returning, so a broker error fails the task with the broker's error name
instead of being lost; like Spark's sink the guarantee is at-least-once (a retried task may
write some rows twice), unless `exactlyOnce=true` (exactly_once.py): each task then writes in
a Kafka transaction that the driver commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer import KafkaProducer
from kafkapy.spark import exactly_once as eo
from kafkapy.spark import options as opts
from kafkapy.spark.clients import make_producer

_TEXT_OR_BYTES = (StringType, BinaryType)


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    rows: int


def check_schema(schema: StructType, topic_option: str | None) -> None:
    """Spark's KafkaWriter.validateQuery checks, with its messages."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if topic_option is None:
        if "topic" not in fields:
            raise opts.KafkaOptionError(
                "topic option required when no 'topic' attribute is present. "
                "Use the topic option for setting a topic."
            )
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise opts.KafkaOptionError(f"Topic type must be a string, got {fields['topic'].simpleString()}")
    if "value" not in fields:
        raise opts.KafkaOptionError("Required attribute 'value' not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], _TEXT_OR_BYTES):
            raise opts.KafkaOptionError(
                f"{name} attribute type must be a string or binary, got {fields[name].simpleString()}"
            )
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise opts.KafkaOptionError(
            f"partition attribute type must be an int, got {fields['partition'].simpleString()}"
        )
    if "headers" in fields:
        headers = fields["headers"]
        ok = (
            isinstance(headers, ArrayType)
            and isinstance(headers.elementType, StructType)
            and [f.name for f in headers.elementType.fields] == ["key", "value"]
        )
        if not ok:
            raise opts.KafkaOptionError(
                "headers attribute type must be array<struct<key:string,value:binary>>, "
                f"got {headers.simpleString()}"
            )


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)  # bytearray / memoryview from some Spark versions


class _KafkaWriterBase:
    def __init__(self, options: Mapping[str, str], schema: StructType, streaming: bool) -> None:
        self.bootstrap_servers = opts.bootstrap_servers(options)
        self.exactly_once = eo.is_enabled(options)
        if self.exactly_once:
            eo.check_options(options, streaming)
        # A batch job's transactional ids share one prefix chosen here; a streaming query's
        # come from its query id in each task unless the option fixes them.
        prefix = options.get(eo.PREFIX_OPTION)
        self.txn_prefix: str | None = str(prefix) if prefix else None if streaming else eo.batch_prefix()
        topic = options.get("topic")
        self.topic = None if topic is None else str(topic)
        check_schema(schema, self.topic)
        # kafka.* options configure the producer, as in Spark's sink (names arrive lower-cased,
        # which Kafka's config names are anyway).
        self.producer_options = {
            k[len("kafka.") :]: str(v)
            for k, v in options.items()
            if k.lower().startswith("kafka.") and k.lower() != "kafka.bootstrap.servers"
        }
        self.columns = {f.name.lower(): f.name for f in schema.fields}

    def _write(self, rows: Iterator[Row]) -> WriterCommitMessage:
        if self.exactly_once:
            return self._write_in_transaction(rows)
        errors: list[BaseException] = []
        producer = make_producer(self.bootstrap_servers, self.producer_options)
        try:
            count = self._send_rows(producer, rows, errors)
        finally:
            producer.close()
        if errors:
            raise errors[0]
        return KafkaCommitMessage(count)

    def _write_in_transaction(self, rows: Iterator[Row]) -> WriterCommitMessage:
        """Phase one of the two-phase commit: the rows in this task's open, flushed transaction."""
        txn_id, batch_id = eo.task_transactional_id(self.txn_prefix)
        marker = TopicPartition(self.topic, 0) if batch_id is not None and self.topic else None
        errors: list[BaseException] = []
        producer = make_producer(self.bootstrap_servers, eo.producer_options(self.producer_options, txn_id))
        try:
            if not eo.prepare(producer, self.bootstrap_servers, txn_id, batch_id, marker):
                return eo.TxnCommitMessage(0, txn_id, -1, -1, already_committed=True)
            count = self._send_rows(producer, rows, errors)
            if errors:
                raise errors[0]  # the transaction stays open: the retried task's init aborts it
            return eo.precommit(producer, txn_id, count, batch_id, marker)
        finally:
            producer.close()

    def _send_rows(self, producer: KafkaProducer, rows: Iterator[Row], errors: list[BaseException]) -> int:
        """Send every row and flush; the first broker error lands in `errors`."""
        col = self.columns
        key_c, topic_c, part_c, head_c = (
            col.get("key"),
            col.get("topic"),
            col.get("partition"),
            col.get("headers"),
        )
        value_c = col["value"]

        def on_done(metadata: Any, exc: BaseException | None) -> None:
            if exc is not None and not errors:
                errors.append(exc)

        count = 0
        for row in rows:
            if errors:  # fail the task on the first broker error, not after all rows
                raise errors[0]
            topic = self.topic or (row[topic_c] if topic_c else None)
            if topic is None:
                raise opts.KafkaOptionError(
                    "null topic present in the data. Use the topic option for setting a topic."
                )
            headers = None
            if head_c and row[head_c] is not None:
                headers = [(h[0], _bytes(h[1])) for h in row[head_c]]
            producer.send(
                topic,
                _bytes(row[value_c]),
                key=_bytes(row[key_c]) if key_c else None,
                partition=row[part_c] if part_c else None,
                headers=headers,
                callback=on_done,
            )
            count += 1
        producer.flush()
        return count


class KafkaBatchWriter(_KafkaWriterBase, DataSourceWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        super().__init__(options, schema, streaming=False)

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.exactly_once:
            eo.end_all(self.bootstrap_servers, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.exactly_once:
            eo.end_all(self.bootstrap_servers, messages, commit=False)


class KafkaStreamWriter(_KafkaWriterBase, DataSourceStreamWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        super().__init__(options, schema, streaming=True)

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # At-least-once: every row was acknowledged before its task ended, nothing left to do.
        # Exactly-once: phase two, the tasks' transactions are committed now.
        if self.exactly_once:
            eo.end_all(self.bootstrap_servers, messages, commit=True, batch_id=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # At-least-once: Kafka cannot take back acknowledged records; Spark retries the batch.
        if self.exactly_once:
            eo.end_all(self.bootstrap_servers, messages, commit=False, batch_id=batchId)
