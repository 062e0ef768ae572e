"""What the pipeline jobs in spark/ share: YAML specs, the session, triggers, offset state.

A job is `JOB.py --spec job.yaml [--set key=value ...]`; `run(spark, spec)` does the work so
tests can drive a job on their own session, and `main()` builds the session when the job is
submitted (`kafkapy-spark-submit JOB ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml


class SpecError(ValueError):
    """A job spec that lacks a key or has a value of the wrong shape."""


def load_spec(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The YAML spec, with `key=value` overrides (values parsed as YAML: `--set max=10`)."""
    with open(path) as f:
        spec = yaml.safe_load(f) or {}
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: a job spec is a YAML mapping")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"--set expects key=value, got {item!r}")
        spec[key.strip()] = yaml.safe_load(value)
    return spec


def require(spec: Mapping[str, Any], *keys: str) -> None:
    missing = [k for k in keys if spec.get(k) in (None, "", [])]
    if missing:
        raise SpecError("job spec lacks " + ", ".join(missing))


def topics_of(spec: Mapping[str, Any], key: str = "topics") -> list[str]:
    value = spec.get(key)
    topics = [value] if isinstance(value, str) else list(value or [])
    if not topics:
        raise SpecError(f"job spec lacks {key}")
    return [str(t) for t in topics]


def source_options(spec: Mapping[str, Any]) -> dict[str, str]:
    """Extra data source options from the spec's `options:` mapping (Spark's option names)."""
    return {
        str(k): str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in (spec.get("options") or {}).items()
    }


def apply_trigger(writer: Any, trigger: Any) -> Any:
    """trigger: availableNow | once | "10 seconds" | {processingTime: "10 seconds"}."""
    if trigger is None or trigger == "availableNow":
        return writer.trigger(availableNow=True)
    if trigger == "once":
        return writer.trigger(once=True)
    if isinstance(trigger, Mapping) and "processingTime" in trigger:
        return writer.trigger(processingTime=str(trigger["processingTime"]))
    if isinstance(trigger, str):
        return writer.trigger(processingTime=trigger)
    raise SpecError(f"trigger must be availableNow, once or a processing interval, got {trigger!r}")


def spark_session(app_name: str) -> Any:
    from pyspark.sql import SparkSession

    import kafkapy.spark

    spark = SparkSession.builder.appName(app_name).getOrCreate()
    kafkapy.spark.register(spark)  # auto-registration needs an installed package; be explicit
    return spark


def main(app_name: str, run: Callable[[Any, dict[str, Any]], Any], argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=app_name)
    parser.add_argument("--spec", required=True, help="the job's YAML spec")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a spec key")
    args = parser.parse_args(argv)
    spec = load_spec(args.spec, args.set)
    spark = spark_session(app_name)
    try:
        run(spark, spec)
    finally:
        spark.stop()
    return 0


# -- where a batch job stopped ---------------------------------------------------------------


def read_state(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """The offsets JSON a previous run stored ({} before the first run)."""
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else {}


def write_state(path: str | os.PathLike[str], offsets: Mapping[str, Mapping[str, int]]) -> None:
    """Replace the state file atomically: a crash leaves the old offsets or the new, never half."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".offsets-")
    with os.fdopen(fd, "w") as f:
        json.dump(offsets, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)
