"""The producer and consumer perf tests print Kafka's lines against a real kafkapy broker."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

from kafkapy.testing import KafkapyCluster

BIN = Path(sys.executable).parent
FINAL = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, "
    r"\d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)
SUMMARY = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, ([\d.]+), [\d.]+, (\d+), "
    r"[\d.]+, \d+, \d+, [\d.]+, [\d.]+$"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], capture_output=True, text=True, timeout=120, check=False
    )


def test_producer_then_consumer_perf_test(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    produced = run("kafkapy-producer-perf-test", "--topic", topic, "--num-records", "20000", "--record-size", "100",
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=1",
                   "linger.ms=5")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    last = produced.stdout.strip().splitlines()[-1]
    match = FINAL.match(last)
    assert match and match.group(1) == "20000", produced.stdout

    consumed = run("kafkapy-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
                   "--messages", "20000", "--timeout", "20000")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    header, line = consumed.stdout.strip().splitlines()
    assert header == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )
    summary = SUMMARY.match(line)
    assert summary, line
    assert summary.group(2) == "20000"
    assert summary.group(1) == f"{20000 * 100 / 1024 / 1024:.4f}"


def test_throughput_is_throttled_and_detailed_stats_print_per_interval(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    produced = run("kafkapy-producer-perf-test", "--topic", topic, "--num-records", "600", "--record-size", "10",
                   "--throughput", "200", "--producer-props", f"bootstrap.servers={bootstrap}")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    rate = float(re.search(r"records sent, ([\d.]+) records/sec", produced.stdout.splitlines()[-1]).group(1))  # type: ignore[union-attr]
    assert rate < 260
    consumed = run("kafkapy-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic, "--messages",
                   "600", "--show-detailed-stats", "--reporting-interval", "1")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    lines = consumed.stdout.strip().splitlines()
    assert lines[0].startswith("time, threadId, data.consumed.in.MB")
