"""The benchmark report's arithmetic: medians, pairs and the targets it judges."""

from __future__ import annotations

import pytest

from benchmarks import report


def _samples(kafkapy: list[float], tansu: list[float], key: str = "produce/100B/acks=1/p=1") -> dict:
    return {
        "kafkapy": {key: [{"records_per_s": v} for v in kafkapy]},
        "tansu": {key: [{"records_per_s": v} for v in tansu]},
    }


def test_ratio_is_the_median_of_back_to_back_pairs() -> None:
    # Pairs of 2x, 0.25x and 2x: the machine's speed moved between pairs, so the medians taken
    # apart (100 against 200) say 0.5x while two of the three back-to-back pairs say 2x.
    entry = report.summarize(_samples([400, 100, 100], [200, 400, 50]))["produce/100B/acks=1/p=1"]
    assert entry["records_per_s"]["ratio"] == pytest.approx(2.0)
    assert entry["records_per_s"]["ratio_of_medians"] == pytest.approx(100 / 200)
    assert entry["records_per_s"]["kafkapy"] == {"median": 100, "min": 100, "max": 400, "n": 3}


def test_unpaired_samples_fall_back_to_the_ratio_of_medians() -> None:
    entry = report.summarize(_samples([100, 300], [100]))["produce/100B/acks=1/p=1"]["records_per_s"]
    assert entry["ratio"] == entry["ratio_of_medians"] == pytest.approx(2.0)


def test_consume_targets_are_judged_on_the_broker_bound_reading() -> None:
    summary = report.summarize(
        {
            b: {
                "consume/1024B/p=1": [{"mb_per_s": v}],
                "consume/1024B/p=1/no-backoff": [{"mb_per_s": w}],
            }
            for b, v, w in (("kafkapy", 170.0, 960.0), ("tansu", 450.0, 480.0))
        }
    )
    rows = {r["target"]: r for r in report.targets(summary, "latency/x", "small_requests/x")}
    assert rows["consume 1 KiB p=1 (MB/s)"]["value"] == pytest.approx(2.0)
    assert rows["consume 1 KiB p=1 (MB/s)"]["met"] is True
    defaults = rows["consume 1 KiB p=1, librdkafka defaults"]
    assert defaults["value"] == pytest.approx(170 / 450)
    assert defaults["met"] is None  # reported beside the targets, not judged
