"""Reading offset ranges: the batch reader, and the executor-side loop both readers share.

Planning happens on the driver (offsets resolved, ranges split); each Spark task then reads
its range straight from the partition's leader and yields one Arrow batch per fetch. Reader
objects are pickled to executors, so they hold only options; connections are opened inside
`read()`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkapy.protocol.errors import OffsetOutOfRangeException
from kafkapy.spark import options as opts
from kafkapy.spark.clients import SourceClient, TopicPartition, read_records
from kafkapy.spark.rows import arrow_schema, to_arrow

log = logging.getLogger("kafkapy.spark")


@dataclass(frozen=True)
class KafkaInputPartition(InputPartition):
    """One Spark task: offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self) -> None:
        # InputPartition keeps a `value`; ours is the range itself, readable in Spark's UI dumps.
        object.__setattr__(self, "value", f"{self.topic}-{self.partition}[{self.start},{self.end})")


@dataclass(frozen=True, slots=True)
class ReadConfig:
    """What an executor needs to read a range: small and picklable."""

    bootstrap_servers: str
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_s: float

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadConfig:
        poll_ms = opts.get_int(options, "kafkaConsumer.pollTimeoutMs", 120_000)
        return cls(
            opts.bootstrap_servers(options),
            opts.get_bool(options, "includeHeaders", False),
            opts.get_bool(options, "failOnDataLoss", True),
            (poll_ms or 120_000) / 1000,
        )


def data_loss_message(tp: TopicPartition, wanted: int, available: int) -> str:
    return (
        f"Cannot fetch offset {wanted} of {tp[0]}-{tp[1]}: the earliest available offset is {available}. "
        "Some data may have been lost because they are not available in Kafka any more; either the data "
        "was aged out by Kafka or the topic may have been deleted before all the data in the topic was "
        "processed. If you don't want your streaming query to fail on such cases, set the source option "
        '"failOnDataLoss" to "false".'
    )


def report_data_loss(config: ReadConfig, message: str) -> None:
    if config.fail_on_data_loss:
        raise OffsetOutOfRangeException(message + " (failOnDataLoss=true)")
    log.warning("%s Skipping the missing records (failOnDataLoss=false).", message)


def read_range(config: ReadConfig, part: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    """The records of [start, end) as Arrow batches (one per fetch), read from the leader."""
    tp = (part.topic, part.partition)
    schema = arrow_schema(config.include_headers)

    def on_gap(wanted: int, earliest: int | None) -> None:
        if earliest is None:
            message = (
                f"{tp[0]}-{tp[1]} ends before offset {part.end}, which was planned for this batch; "
                f"records from {wanted} on are gone (the topic may have been deleted or recreated)."
            )
        else:
            message = data_loss_message(tp, wanted, earliest)
        report_data_loss(config, message)

    for records in read_records(
        config.bootstrap_servers, tp, part.start, part.end, config.poll_timeout_s, on_gap
    ):
        yield to_arrow(records, schema)


def split_ranges(
    ranges: Mapping[TopicPartition, tuple[int, int]], min_partitions: int | None
) -> list[KafkaInputPartition]:
    """One task per topic partition with data; with minPartitions above that, large ranges are
    cut into pieces in proportion to their size (Spark's KafkaOffsetRangeCalculator)."""
    live = {tp: r for tp, r in sorted(ranges.items()) if r[1] > r[0]}
    total = sum(e - s for s, e in live.values())
    out: list[KafkaInputPartition] = []
    for (t, p), (start, end) in live.items():
        pieces = 1
        if min_partitions and min_partitions > len(live):
            pieces = max(1, math.ceil((end - start) / total * min_partitions))
        step = (end - start) / pieces
        bounds = [start + round(i * step) for i in range(pieces)] + [end]
        out.extend(KafkaInputPartition(t, p, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
    return out


class KafkaBatchReader(DataSourceReader):
    """spark.read.format("kafkapy"): a fixed offset range per partition, resolved at planning."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.config = ReadConfig.from_options(options)
        self.subscription = opts.Subscription.from_options(options)
        self.starting = opts.OffsetSpec.parse(options, "starting", "earliest")
        self.ending = opts.OffsetSpec.parse(options, "ending", "latest")
        self.starting.check_for_batch("starting")
        self.ending.check_for_batch("ending")
        self.min_partitions = opts.get_int(options, "minPartitions", None)
        self.strategy = str(options.get("startingOffsetsByTimestampStrategy") or "error").lower()

    def partitions(self) -> list[KafkaInputPartition]:
        with SourceClient(self.config.bootstrap_servers) as client:
            tps = self.subscription.partitions(client)
            if not tps:
                return []
            starts = self.starting.resolve(client, tps, "starting", self.strategy)
            ends = self.ending.resolve(client, tps, "ending")
        ranges = {}
        for tp in tps:
            start, end = starts[tp], ends[tp]
            if end < start:
                report_data_loss(
                    self.config,
                    f"{tp[0]}-{tp[1]}: ending offset {end} is before starting offset {start}; "
                    "the topic may have been deleted or recreated.",
                )
                continue
            ranges[tp] = (start, end)
        return split_ranges(ranges, self.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            # PySpark plans one placeholder partition when there is nothing to read.
            return iter(())
        return read_range(self.config, partition)
