"""The pipeline jobs in spark/: topic_to_parquet through kafkapy-spark-submit (a real
spark-submit), the streaming aggregation and the log collection on the shared session."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from spark_helpers import BASE_TS, consume_all, create_topic, numbered, produce

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _job(name: str):
    spec = importlib.util.spec_from_file_location(f"job_{name}", ROOT / "spark" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _submit(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "kafkapy-spark-submit"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.run([str(script), "--master", "local[2]", "--conf", "spark.driver.bindAddress=127.0.0.1",
                           *args], capture_output=True, text=True, env=env, timeout=240)  # fmt: skip


def test_topic_to_parquet_submitted_twice_loads_each_record_once(spark, bootstrap, topic, tmp_path):
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, numbered(20, 2))
    spec = tmp_path / "job.yaml"
    out, state = tmp_path / "out", tmp_path / "state" / "offsets.json"
    spec.write_text(yaml.safe_dump({"bootstrap_servers": bootstrap, "topics": [topic], "output": str(out),
                                    "state": str(state)}))  # fmt: skip
    first = _submit("topic_to_parquet", "--spec", str(spec))
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads(state.read_text()) == {topic: {"0": 10, "1": 10}}

    produce(bootstrap, topic, numbered(6, 2, start=20))
    second = _submit("topic_to_parquet", "--spec", str(spec))
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(state.read_text()) == {topic: {"0": 13, "1": 13}}

    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == sorted(
        (i % 2, i // 2, f"v{i}".encode()) for i in range(26)
    )
    # Laid out by topic and partition, as Hadoop loaders did.
    assert (out / f"topic={topic}" / "partition=0").is_dir()


def test_windowed_counts_job_writes_counts_per_key_and_window(spark, bootstrap, topic, tmp_path):
    create_topic(bootstrap, topic + "-in", 2)
    create_topic(bootstrap, topic + "-out", 1)
    minute = 60_000
    start = BASE_TS - BASE_TS % minute
    events = [(0, b"a", b"x", start + 1), (1, b"a", b"x", start + 2), (0, b"a", b"x", start + minute + 5),
              (1, b"b", b"x", start + 10), (0, b"b", b"x", start + 20), (1, b"b", b"x", start + 30)]  # fmt: skip
    produce(bootstrap, topic + "-in", events)
    spec = {"bootstrap_servers": bootstrap, "input_topic": topic + "-in", "output_topic": topic + "-out",
            "checkpoint": str(tmp_path / "checkpoint"), "window": "1 minute", "watermark": "10 minutes",
            "trigger": "availableNow"}  # fmt: skip
    _job("windowed_counts").run(spark, spec)
    latest: dict[tuple[str, str], int] = {}
    for _p, _o, key, value in consume_all(bootstrap, topic + "-out", 1):
        doc = json.loads(value)
        assert key.decode() == doc["key"]
        latest[(doc["key"], doc["window_start"][:16])] = doc["count"]
    assert sorted(latest.values()) == [1, 2, 3]
    assert {k for k, _w in latest} == {"a", "b"}


def test_log_collection_job_turns_json_lines_into_a_table(spark, bootstrap, topic, tmp_path):
    create_topic(bootstrap, topic, 1)
    lines = [
        {"ts": "2024-05-01T10:00:00Z", "level": "INFO", "logger": "web", "host": "h1", "message": "started"},
        {"ts": "2024-05-02T11:00:00Z", "level": "ERROR", "logger": "db", "host": "h2", "message": "timeout"},
    ]
    records = [(0, None, json.dumps(d).encode(), BASE_TS) for d in lines] + [(0, None, b"not json", BASE_TS)]
    produce(bootstrap, topic, records)
    spec = {"bootstrap_servers": bootstrap, "topics": topic, "table": str(tmp_path / "table"),
            "checkpoint": str(tmp_path / "checkpoint"), "trigger": "availableNow"}  # fmt: skip
    _job("log_collection").run(spark, spec)
    rows = sorted(spark.read.parquet(str(tmp_path / "table")).collect(), key=lambda r: r.offset)
    assert [(r.level, r.logger, r.host, r.message, r.raw) for r in rows] == [
        ("INFO", "web", "h1", "started", None),
        ("ERROR", "db", "h2", "timeout", None),
        (None, None, None, None, "not json"),
    ]
    assert [str(r.date) for r in rows[:2]] == ["2024-05-01", "2024-05-02"]
