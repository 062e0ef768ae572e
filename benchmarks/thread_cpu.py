"""Which threads of an idle broker burn its CPU: three brokers, N partitions (RF 3), per-thread
CPU over an idle window (issue 17's idle target, split by thread).

    PYTHONPATH=<broker code> python benchmarks/thread_cpu.py [--partitions 10000] [--seconds 30]
        [--work-dir DIR]

The cluster and topics are scale.py's (benchmarks/scale_cluster.py, scale_steps.create). Thread
names come from a short `py-spy record --idle` of each broker (its speedscope output names each
thread 'Thread <native id> "<name>"'); CPU from /proc/<pid>/task/<tid>/stat (utime + stime)
over the window, so a thread blocked in recv costs nothing here, unlike in py-spy's samples.
Threads are grouped by name without their numeric suffixes (every ReplicaFetcherThread-f-l
together). Prints one line per broker, in % of a core.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from benchmarks import scale_steps  # noqa: E402
from benchmarks.profiling import py_spy  # noqa: E402
from benchmarks.scale_cluster import scale_cluster  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int, tid: int) -> int:
    stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def thread_names(pid: int, out: Path) -> dict[int, str]:
    """Native thread id -> Python thread name (numeric suffixes dropped), from py-spy."""
    subprocess.run(
        [py_spy(), "record", "--pid", str(pid), "--duration", "3", "--format", "speedscope",
         "--nonblocking", "--idle", "-o", str(out)],
        capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    names = {}
    for profile in json.loads(out.read_text())["profiles"] if out.exists() else []:
        m = re.match(r'Thread (\d+) "(.*)"', profile["name"])
        if m:
            names[int(m[1])] = re.sub(r"(-\d+)+$", "", m[2])
    return names


def per_thread_cpu(
    pids: dict[int, int], names: dict[int, dict[int, str]], seconds: float
) -> dict[int, dict[str, float]]:
    """broker -> thread name -> % of a core over `seconds`."""
    before = {
        (pid, int(t)): _cpu_ticks(pid, int(t))
        for pid in pids.values()
        for t in os.listdir(f"/proc/{pid}/task")
    }
    started = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - started
    out: dict[int, dict[str, float]] = {}
    for broker, pid in pids.items():
        by_name: dict[str, float] = {}
        for t in os.listdir(f"/proc/{pid}/task"):
            tid = int(t)
            if (pid, tid) in before:
                used = (_cpu_ticks(pid, tid) - before[(pid, tid)]) / _TICK
                name = names[broker].get(tid, "?")
                by_name[name] = by_name.get(name, 0.0) + 100 * used / wall
        out[broker] = {k: round(v, 2) for k, v in sorted(by_name.items(), key=lambda kv: -kv[1]) if v > 0}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=20.0, help="idle seconds before measuring")
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="kafkapy-threads-", dir=args.work_dir))
    with scale_cluster(base / "cluster") as sc:
        created = scale_steps.create(sc, args.partitions, 100 if args.partitions >= 1000 else 10)
        print(f"{args.partitions} partitions: every ISR full after {created['all_isr_full_s']} s", flush=True)
        sc.close()
        time.sleep(args.settle)
        pids = {b: sc.pid(b) for b in sc.live_ids()}
        names = {b: thread_names(pid, base / f"broker{b}.speedscope.json") for b, pid in pids.items()}
        for broker, threads in per_thread_cpu(pids, names, args.seconds).items():
            print(f"broker {broker}: {sum(threads.values()):.2f} % of a core: {threads}", flush=True)
        print("load average", " ".join(Path("/proc/loadavg").read_text().split()[:3]))


if __name__ == "__main__":
    main()
