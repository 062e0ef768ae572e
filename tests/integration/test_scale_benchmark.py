"""benchmarks/scale.py --quick, the cheap steps: the harness runs end to end on a real cluster
(ZooKeeper + three brokers, 200 partitions) and writes figures that mean something."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_scale_quick_cheap_steps(tmp_path: Path) -> None:
    out, png, md = tmp_path / "scale.json", tmp_path / "scale.png", tmp_path / "benchmarks.md"
    md.write_text("# Benchmarks\n\nearlier sections stay\n")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/scale.py"), "--quick", "--no-kill",
         "--steps", "create,metadata,idle,shutdown,failover",
         "--out", str(out), "--markdown", str(md), "--work-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=220,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    steps = json.loads(out.read_text())["runs"]["200"]["steps"]
    for name in ("create", "metadata", "idle", "shutdown", "failover"):
        assert "timeout" not in steps[name] and "error" not in steps[name], steps[name]
    create = steps["create"]
    assert create["partitions"] == 200 and 0 < create["all_led_s"] <= create["all_isr_full_s"]
    assert create["gauges_after"]["kafka_server_replicamanager_partitioncount"] == 600  # RF 3
    assert create["gauges_after"]["kafka_server_replicamanager_underreplicatedpartitions"] == 0
    meta = steps["metadata"]["broker"]
    assert meta["partitions_seen"] == 200 and meta["response_bytes"] > 200 * 20
    assert 0 < meta["latency_ms_min"] <= meta["latency_ms_median"] <= meta["latency_ms_max"]
    idle = steps["idle"]
    assert all(idle[f"broker{b}"]["open_files"] > 200 and idle[f"broker{b}"]["rss_mb"] > 10 for b in range(3))
    shutdown = steps["shutdown"]
    assert shutdown["leaders_before"] > 0 and shutdown["exit_code"] == 0
    restart = shutdown["restart"]
    assert 0 < restart["registered_s"] <= restart["all_isr_full_s"]
    failover = steps["failover"]["znode_deleted"]
    assert 0 < failover["elected_s"] <= failover["controller_ready_s"] <= failover["all_led_s"]
    assert png.stat().st_size > 1000  # beside --out by default, not over the committed plot
    text = md.read_text()
    assert text.startswith("# Benchmarks\n\nearlier sections stay\n")
    assert "## Scale" in text and "| create: every ISR full (s) |" in text
