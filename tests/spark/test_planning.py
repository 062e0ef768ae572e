"""Pure planning logic (no Spark, no broker): options, offset JSON, rate limits, task splits,
and how kafkapy-spark-submit builds its spark-submit command."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from kafkapy.spark.options import KafkaOptionError, OffsetSpec, Subscription, offsets_to_json
from kafkapy.spark.reader import split_ranges
from kafkapy.spark.stream import rate_limit
from kafkapy.tools import spark_submit

pytestmark = pytest.mark.spark


def _options(**kw: str) -> CaseInsensitiveDict:
    # What PySpark hands a data source: keys lower-cased, looked up case-insensitively.
    return CaseInsensitiveDict({"kafka.bootstrap.servers": "h:9092", **kw})


def test_exactly_one_subscription_strategy_is_required():
    with pytest.raises(KafkaOptionError, match="One of the following options must be specified"):
        Subscription.from_options(_options())
    with pytest.raises(KafkaOptionError, match="Only one of the following options"):
        Subscription.from_options(_options(subscribe="a", subscribePattern="a.*"))
    assert Subscription.from_options(_options(assign='{"t":[1,0]}')).assigned() == [("t", 0), ("t", 1)]


def test_offset_specs_follow_sparks_precedence_and_batch_rules():
    spec = OffsetSpec.parse(
        _options(startingOffsets='{"t":{"0":5}}', startingTimestamp="1000"), "starting", "earliest"
    )
    assert spec.kind == "timestamp" and spec.timestamp == 1000
    spec = OffsetSpec.parse(_options(startingOffsets='{"t":{"0":-1}}'), "starting", "earliest")
    with pytest.raises(KafkaOptionError, match="can't be latest for batch queries"):
        spec.check_for_batch("starting")
    with pytest.raises(KafkaOptionError, match="ending offset can't be earliest"):
        OffsetSpec.parse(_options(endingOffsets="earliest"), "ending", "latest").check_for_batch("ending")
    assert offsets_to_json({("b", 1): 3, ("a", 10): 1, ("a", 2): 0}) == {
        "a": {"2": 0, "10": 1},
        "b": {"1": 3},
    }


def test_rate_limit_splits_in_proportion_to_backlog_with_sparks_rounding():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 100}
    latest = {("t", 0): 90, ("t", 1): 10, ("t", 2): 100}
    assert rate_limit(10, start, latest) == {("t", 0): 9, ("t", 1): 1, ("t", 2): 100}
    assert rate_limit(1000, start, latest) == latest
    # A partition whose share is below one record still gets one.
    assert rate_limit(3, {("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}) == {
        ("t", 0): 2,
        ("t", 1): 1,
    }


def test_min_partitions_cuts_large_ranges_and_keeps_every_offset():
    parts = split_ranges({("t", 0): (0, 100), ("t", 1): (5, 15), ("t", 2): (7, 7)}, 6)
    assert sum(p.end - p.start for p in parts) == 110
    assert len([p for p in parts if p.partition == 0]) >= 5
    assert all(p.start < p.end for p in parts)
    assert [(p.partition, p.start, p.end) for p in split_ranges({("t", 0): (0, 100)}, None)] == [(0, 0, 100)]


def test_submit_defaults_to_local_without_ui_and_passes_cluster_masters_through(tmp_path):
    job = tmp_path / "job.py"
    job.write_text("")
    cmd = spark_submit.build_command([str(job), "--spec", "s.yaml"], "/spark", "/tmp/k.zip")
    assert cmd == ["/spark/bin/spark-submit", "--master", "local[*]", "--conf", "spark.ui.enabled=false",
                   "--py-files", "/tmp/k.zip", str(job), "--spec", "s.yaml"]  # fmt: skip
    cmd = spark_submit.build_command(
        ["--master", "yarn", "--py-files", "a.zip", "--verbose", str(job)], "/spark", "/tmp/k.zip"
    )
    assert cmd == [
        "/spark/bin/spark-submit",
        "--master",
        "yarn",
        "--py-files",
        "a.zip,/tmp/k.zip",
        "--verbose",
        str(job),
    ]
    assert spark_submit.resolve_job("topic_to_parquet").endswith("spark/topic_to_parquet.py")
    with pytest.raises(spark_submit.SubmitError, match="no job named"):
        spark_submit.resolve_job("no_such_job")


def test_submit_says_what_is_missing(monkeypatch, capsys):
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert spark_submit.main(["topic_to_parquet"]) == 2
    assert "Java not found" in capsys.readouterr().err
