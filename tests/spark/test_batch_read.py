"""Batch reads through format("kafkapy") against a real broker, checked record by record."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from spark_helpers import BASE_TS, create_topic, delete_records, numbered, produce, rows_of

pytestmark = pytest.mark.spark


def _read(spark, bootstrap, **options):
    reader = spark.read.format("kafkapy").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_returns_exactly_the_produced_records(spark, bootstrap, topic):
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, numbered(30, 3), headers=True)
    df = _read(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
    ]  # fmt: skip
    rows = df.collect()
    got = sorted(
        (r.partition, r.offset, r.key, r.value, r.topic, r.timestamp, r.timestampType,
         [(h.key, h.value) for h in r.headers])
        for r in rows
    )  # fmt: skip
    expected = []
    for i in range(30):
        ts = dt.datetime.fromtimestamp((BASE_TS + i) / 1000, dt.UTC).replace(tzinfo=None)
        value = f"v{i}".encode()
        expected.append(
            (i % 3, i // 3, f"k{i}".encode(), value, topic, ts, 0, [("h", value[:2]), ("n", None)])
        )
    assert got == sorted(expected)
    # One Spark task per topic partition.
    assert df.rdd.getNumPartitions() == 3


def test_offset_json_selects_exact_ranges(spark, bootstrap, topic):
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, numbered(30, 3))  # offsets 0..9 in each partition
    starting = json.dumps({topic: {"0": 2, "1": -2, "2": 7}})
    ending = json.dumps({topic: {"0": 5, "1": 1, "2": -1}})
    df = _read(spark, bootstrap, subscribe=topic, startingOffsets=starting, endingOffsets=ending)
    got = [(p, o) for p, o, _k, _v in rows_of(df)]
    assert got == [(0, 2), (0, 3), (0, 4), (1, 0), (2, 7), (2, 8), (2, 9)]
    # assign reads only the named partitions; values match what was produced there.
    df = _read(spark, bootstrap, assign=json.dumps({topic: [1]}))
    assert rows_of(df) == [(1, o, f"k{o * 3 + 1}".encode(), f"v{o * 3 + 1}".encode()) for o in range(10)]


def test_starting_offsets_by_timestamp_and_min_partitions(spark, bootstrap, topic):
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, numbered(40, 2))  # partition 0 holds even i, 1 odd i; ts = BASE_TS + i
    by_ts = json.dumps({topic: {"0": BASE_TS + 30, "1": BASE_TS + 35}})
    df = _read(spark, bootstrap, subscribe=topic, startingOffsetsByTimestamp=by_ts, minPartitions="6")
    assert [(p, o) for p, o, _k, _v in rows_of(df)] == [(0, o) for o in range(15, 20)] + [
        (1, o) for o in range(17, 20)
    ]
    df = _read(spark, bootstrap, subscribe=topic, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    assert len(rows_of(df)) == 40


def test_deleted_records_fail_clearly_or_are_skipped(spark, bootstrap, topic):
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, numbered(10, 1))
    delete_records(bootstrap, topic, {0: 6})
    starting = json.dumps({topic: {"0": 2}})
    with pytest.raises(Exception, match="failOnDataLoss") as info:
        _read(spark, bootstrap, subscribe=topic, startingOffsets=starting).collect()
    assert "Cannot fetch offset 2" in str(info.value)
    df = _read(spark, bootstrap, subscribe=topic, startingOffsets=starting, failOnDataLoss="false")
    assert [o for _p, o, _k, _v in rows_of(df)] == [6, 7, 8, 9]


def test_subscribe_pattern_and_option_errors(spark, bootstrap, topic):
    create_topic(bootstrap, topic + "-a", 1)
    create_topic(bootstrap, topic + "-b", 1)
    produce(bootstrap, topic + "-a", [(0, None, b"a", BASE_TS)])
    produce(bootstrap, topic + "-b", [(0, None, b"b", BASE_TS)])
    df = _read(spark, bootstrap, subscribePattern=topic.replace("-", "[-]") + "-[ab]")
    assert sorted(r.value for r in df.collect()) == [b"a", b"b"]
    assert _read(spark, bootstrap, subscribePattern=topic + "-nothing-.*").count() == 0
    with pytest.raises(Exception, match="Only one of the following options"):
        _read(spark, bootstrap, subscribe=topic, assign=json.dumps({topic: [0]})).collect()
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        _read(spark, bootstrap, subscribe=topic, startingOffsets="latest").collect()
