"""spark.readStream.format("kafkapy"): micro-batches over Spark's Kafka offset JSON.

Offsets are Spark's JSON, {"topic":{"0":42}}, always resolved to real offsets ("next offset to
read" per partition), so the checkpoint alone says where a restarted query resumes: nothing is
read twice and nothing skipped. The reader object lives in one long-running Python process on
the driver (PySpark's stream reader runner), so it may keep its connections; a copy is pickled
for the executors, which open their own in `read()`.

Admission control: maxOffsetsPerTrigger becomes `ReadMaxRows`, split across partitions in
proportion to their backlog with Spark's rounding (KafkaMicroBatchStream.rateLimit). With
Trigger.AvailableNow the latest offsets at the query's start are the target no batch passes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kafkapy.spark import options as opts
from kafkapy.spark.clients import EARLIEST, LATEST, SourceClient, TopicPartition
from kafkapy.spark.reader import (
    KafkaInputPartition,
    ReadConfig,
    read_range,
    report_data_loss,
    split_ranges,
)

Offsets = dict[TopicPartition, int]


def rate_limit(limit: int, start: Offsets, latest: Offsets) -> Offsets:
    """End offsets admitting about `limit` records, shared in proportion to each backlog."""
    sizes = {tp: latest[tp] - start.get(tp, latest[tp]) for tp in latest}
    total = sum(s for s in sizes.values() if s > 0)
    if total <= limit:
        return dict(latest)
    out: Offsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        size = sizes[tp]
        if size <= 0:
            out[tp] = end
            continue
        share = limit * (size / total)
        # Spark's rounding: at least one record from a partition with a backlog, else floor.
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + step)
    return out


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.config = ReadConfig.from_options(options)
        self.subscription = opts.Subscription.from_options(options)
        self.starting = opts.OffsetSpec.parse(options, "starting", "latest")
        self.strategy = str(options.get("startingOffsetsByTimestampStrategy") or "error").lower()
        self.max_offsets = opts.get_int(options, "maxOffsetsPerTrigger", None)
        self.min_partitions = opts.get_int(options, "minPartitions", None)
        self._client: SourceClient | None = None
        self._target: Offsets | None = None  # Trigger.AvailableNow: never read past these
        self._latest: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get a copy of this object: never a socket.
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> SourceClient:
        if self._client is None:
            self._client = SourceClient(self.config.bootstrap_servers)
        return self._client

    # -- offsets ----------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        tps = self.subscription.partitions(self.client)
        if self.starting.kind == "offsets":
            # Partitions the JSON leaves out are picked up like new ones, from earliest.
            named = dict(self.starting.offsets)
            tps = [tp for tp in tps if tp in named]
        return opts.offsets_to_json(self.starting.resolve(self.client, tps, "starting", self.strategy))

    def _current_latest(self) -> Offsets:
        tps = self.subscription.partitions(self.client)
        latest = self.client.list_offsets({tp: LATEST for tp in tps}) if tps else {}
        self._latest = latest
        return latest

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = opts.offsets_from_json(start)
        latest = self._current_latest()
        if self._target is not None:
            latest = {tp: min(o, self._target[tp]) for tp, o in latest.items() if tp in self._target}
        new = [tp for tp in latest if tp not in begin]
        if new:
            # Spark starts partitions added while a query runs at their earliest offset.
            begin = {**begin, **self.client.list_offsets({tp: EARLIEST for tp in new})}
        # An end below its start (topic recreated, log truncated) is kept: partitions() then
        # reports the data loss, as Spark's source does.
        end = dict(latest)
        # Partitions no longer reported keep their position (an assign JSON naming a gone one).
        for tp, o in begin.items():
            end.setdefault(tp, o)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(limit.max_rows, begin, end)
        return opts.offsets_to_json(end)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def reportLatestOffset(self) -> dict | None:
        return None if self._latest is None else opts.offsets_to_json(self._latest)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._current_latest()

    # -- planning and reading ---------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[KafkaInputPartition]:
        begin, stop = opts.offsets_from_json(start), opts.offsets_from_json(end)
        new = [tp for tp in stop if tp not in begin]
        if new:
            earliest = self.client.list_offsets({tp: EARLIEST for tp in new})
            for tp in new:
                if earliest[tp] != 0:
                    report_data_loss(
                        self.config,
                        f"Added partition {tp[0]}-{tp[1]} starts from {earliest[tp]} instead of 0. "
                        "Some data may have been missed.",
                    )
            begin.update(earliest)
        ranges = {}
        for tp, e in stop.items():
            s = begin[tp]
            if e < s:
                report_data_loss(
                    self.config,
                    f"{tp[0]}-{tp[1]}'s offset was changed from {s} to {e}; some data may have been missed.",
                )
                continue
            ranges[tp] = (s, e)
        return split_ranges(ranges, self.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            # PySpark plans one placeholder partition when there is nothing to read.
            return iter(())
        return read_range(self.config, partition)

    def commit(self, end: dict) -> None:
        # Like Spark's Kafka source: progress lives in the checkpoint, nothing goes to Kafka.
        pass

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
