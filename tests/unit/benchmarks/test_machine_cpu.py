"""The whole machine's CPU counter that the replication benchmark reads around each round."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from benchmarks.brokers import machine_cpu_seconds


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_the_machine_counts_at_least_this_process_s_cpu() -> None:
    busy0, steal0 = machine_cpu_seconds()
    own0 = _own_cpu()
    total = 0
    while _own_cpu() - own0 < 0.3:  # bounded by CPU time, not by a wall clock
        total += sum(range(10_000))
    own = _own_cpu() - own0
    busy1, steal1 = machine_cpu_seconds()
    assert steal1 >= steal0
    # /proc/stat counts in clock ticks (10 ms): allow a few of them.
    assert busy1 - busy0 >= own - 0.05, (busy1 - busy0, own)


def test_busy_leaves_out_idle_iowait_and_steal(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    hz = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(
        f"cpu  {hz} {2 * hz} {3 * hz} {100 * hz} {50 * hz} {4 * hz} {5 * hz} {7 * hz} 0 0\ncpu0 1 2 3\n"
    )
    assert machine_cpu_seconds(str(stat)) == (15.0, 7.0)
