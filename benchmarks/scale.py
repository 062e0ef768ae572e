"""How kafkapy's cluster operations grow with the partition count: one command (issue 17).

    python benchmarks/scale.py [--partitions 1000,3000,10000]
        [--steps create,metadata,idle,shutdown,failover,startup,rf3] [--topics-per-run N]
        [--out benchmarks/results/scale.json] [--plot <--out's path with .png>]
        [--markdown docs/benchmarks.md] [--quick] [--profile STEPS]

For each partition count, a fresh real ZooKeeper and three kafkapy brokers on loopback; N
topics (RF 3) holding the partitions, created in one CreateTopics request; then the steps, in
the order given, each timed from the outside (Metadata answers, ZooKeeper, the brokers' Prometheus
endpoints, /proc). See benchmarks/scale_steps.py for what each figure means. Results are
written after every step, merged into --out by partition count (so 10k can run on its own
after 1k and 3k); the PNG and the "Scale" section of --markdown are regenerated from the
whole file. `--quick`: 200 partitions in 10 topics, short idle window, small produce runs (the
harness check the slow test runs). `--profile idle,failover`: those steps run with py-spy on
every broker (speedscope files in --profile-dir, top functions in the JSON); py-spy takes CPU
from the brokers on 2 cores, so a profiled run's times are not the baseline's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script: import the package, not sibling modules
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from benchmarks import scale_report, scale_steps  # noqa: E402
from benchmarks.common import python_speed_ms  # noqa: E402
from benchmarks.scale_cluster import (  # noqa: E402
    NOFILE_LIMIT,
    StepTimeout,
    mem_available_gb,
    raise_nofile_limit,
    scale_cluster,
)
from benchmarks.scale_profile import StepProfiler  # noqa: E402

STEPS = ("create", "metadata", "idle", "shutdown", "failover", "startup", "rf3")
# Below this much free memory a partition count is not started (other helpers share the machine).
MIN_FREE_GB = 4.0


def _commit() -> str:
    try:
        # The last commit that changed the broker's code: benchmark-only commits do not move it.
        out = subprocess.run(
            ["git", "log", "-1", "--format=%h", "--", "kafkapy"], cwd=REPO, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "kafkapy"], cwd=REPO, capture_output=True, text=True
        )
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def _load(path: Path) -> dict[str, Any]:
    if path.exists():
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return data
        except ValueError:
            pass
    return {"runs": {}}


def _save(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str))
    tmp.replace(path)


def run_count(
    partitions: int,
    steps: list[str],
    topics: int,
    args: argparse.Namespace,
    record: dict[str, Any],
    save: Any,
) -> None:
    """All steps for one partition count, on a fresh cluster; `record` is filled step by step."""
    record["started_utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    record["mem_available_gb_before"] = round(mem_available_gb(), 1)
    record["load_avg_before"] = os.getloadavg()
    record["steps"] = {}
    if mem_available_gb() < MIN_FREE_GB:
        record["skipped"] = f"only {mem_available_gb():.1f} GB of memory available"
        return
    base = Path(tempfile.mkdtemp(prefix=f"kafkapy-scale-{partitions}-", dir=args.work_dir))
    try:
        with scale_cluster(base) as sc:
            sc.deadline = args.deadline
            # create first (the others need the partitions), then in the order given.
            for step in ("create", *[s for s in steps if s != "create"]):
                if time.monotonic() > args.deadline:
                    record["steps"][step] = {"skipped": "--deadline-minutes reached before this step"}
                    save()
                    continue
                t0 = time.monotonic()
                print(f"[{partitions}] {step} ...", flush=True)
                if step in args.profile_steps:
                    sc.profiler = StepProfiler(args.profile_dir, f"scale-{partitions}-{step}")
                    for b in sc.live_ids():
                        sc.profiler.attach(sc.pid(b), f"broker{b}")
                try:
                    figures = _run_step(step, sc, partitions, topics, args)
                except StepTimeout as e:
                    figures = {"timeout": str(e), "state": e.state}
                except Exception as e:  # noqa: BLE001 - recorded, and the remaining steps skipped
                    figures = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-2000:]}
                figures["step_wall_s"] = round(time.monotonic() - t0, 1)
                if sc.profiler is not None:
                    figures["profile"] = sc.profiler.finish()
                    sc.profiler = None
                figures["load_avg"] = os.getloadavg()
                figures["mem_available_gb"] = round(mem_available_gb(), 1)
                record["steps"][step] = figures
                save()
                print(f"[{partitions}] {step}: {json.dumps(figures, default=str)[:600]}", flush=True)
                if "timeout" in figures or "error" in figures:
                    if step == "create" or "error" in figures:
                        record["aborted_after"] = step
                        break
    finally:
        record["finished_utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        save()
        if not args.keep_work_dir:
            shutil.rmtree(base, ignore_errors=True)


def _run_step(step: str, sc: Any, partitions: int, topics: int, args: argparse.Namespace) -> dict[str, Any]:
    if step == "create":
        return scale_steps.create(sc, partitions, topics)
    if step == "metadata":
        return scale_steps.metadata(sc, partitions, args.metadata_requests)
    if step == "idle":
        return scale_steps.idle(sc, partitions, args.idle_seconds, settle=args.idle_settle)
    if step == "shutdown":
        return scale_steps.shutdown(sc, partitions)
    if step == "failover":
        return scale_steps.failover(sc, partitions, kill=not args.no_kill)
    if step == "startup":
        return scale_steps.startup(sc, partitions, topics, args.records_per_partition)
    if step == "rf3":
        sizes = {1024: args.rf3_records_1k, 100: args.rf3_records_100}
        return scale_steps.rf3(sc, sizes, args.rf3_partitions, args.rf3_rounds, not args.no_rf3_recycle)
    raise ValueError(step)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", default="1000,3000,10000", help="comma-separated partition counts")
    p.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {','.join(STEPS)}")
    p.add_argument("--topics-per-run", type=int, default=100, help="topics the partitions are spread over")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/results/scale.json")
    # The plot is drawn from the whole of --out, so it goes beside it: a run with its own --out
    # must not redraw the committed benchmarks/results/scale.png from a partial file.
    p.add_argument("--plot", type=Path, default=None, help="default: --out's path with .png")
    p.add_argument("--markdown", type=Path, default=None, help="regenerate the Scale section of this file")
    p.add_argument("--fresh", action="store_true", help="drop earlier results in --out")
    p.add_argument("--quick", action="store_true", help="200 partitions, 10 topics, short runs")
    p.add_argument("--work-dir", default=None, help="where the clusters' data goes (default: $TMPDIR)")
    p.add_argument(
        "--keep-work-dir",
        action="store_true",
        help="leave the cluster's data (A/B runs: on a journal-less ext4, deleting a 10k cluster's"
        " ~150k files slows the file creations of the next run for minutes; delete it afterwards)",
    )
    p.add_argument("--metadata-requests", type=int, default=21)
    p.add_argument("--idle-seconds", type=float, default=20.0)
    p.add_argument("--idle-settle", type=float, default=5.0)
    p.add_argument("--records-per-partition", type=int, default=10, help="start-up step: 100 B records each")
    p.add_argument("--no-kill", action="store_true", help="failover: only the znode deletion")
    p.add_argument("--rf3-partitions", type=int, default=6)
    p.add_argument("--rf3-records-1k", type=int, default=400_000)
    p.add_argument("--rf3-records-100", type=int, default=2_000_000)
    p.add_argument("--rf3-rounds", type=int, default=2)
    p.add_argument(
        "--no-rf3-recycle", action="store_true",
        help="rf3: no page-cache recycling before each run (this VM then charges the later runs for fresh memory)",
    )  # fmt: skip
    p.add_argument(
        "--deadline-minutes", type=float, default=0, help="give up waits and skip steps after this (0: none)"
    )
    p.add_argument(
        "--profile", default="", help="steps to run under py-spy (all brokers; figures then skewed)"
    )
    p.add_argument("--profile-dir", type=Path, default=REPO / "benchmarks/results/profiles")
    args = p.parse_args(argv)
    if args.plot is None:
        args.plot = args.out.with_suffix(".png")
    if args.quick:
        if args.partitions == p.get_default("partitions"):
            args.partitions = "200"
        if args.topics_per_run == p.get_default("topics_per_run"):
            args.topics_per_run = 10
        args.idle_seconds, args.idle_settle = 3.0, 1.0
        args.metadata_requests, args.records_per_partition = 5, 2
        args.rf3_records_1k, args.rf3_records_100, args.rf3_rounds = 3_000, 10_000, 1
    args.deadline = time.monotonic() + args.deadline_minutes * 60 if args.deadline_minutes else float("inf")
    counts = [int(x) for x in args.partitions.split(",") if x]
    steps = [s for s in args.steps.split(",") if s]
    args.profile_steps = [s for s in args.profile.split(",") if s]
    unknown = (set(steps) | set(args.profile_steps)) - set(STEPS)
    if unknown:
        p.error(f"unknown steps {sorted(unknown)}")
    doc = {"runs": {}} if args.fresh else _load(args.out)
    doc.setdefault("runs", {})
    env = {
        "commit": _commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "python_loop_ms": round(python_speed_ms(), 1),
        # What the brokers inherit: raising the hard limit needs CAP_SYS_RESOURCE, absent here.
        "nofile_limit": raise_nofile_limit(NOFILE_LIMIT),
        "topics_per_run": args.topics_per_run,
        "argv": sys.argv[1:] if argv is None else argv,
    }

    def save() -> None:
        _save(args.out, doc)

    for n in counts:
        if n % args.topics_per_run:
            p.error(f"{n} partitions do not split evenly over {args.topics_per_run} topics")
        record: dict[str, Any] = {"env": env, "partitions": n}
        doc["runs"][str(n)] = record
        run_count(n, steps, args.topics_per_run, args, record, save)
    save()
    if args.plot:
        scale_report.plot(doc, args.plot)
    if args.markdown:
        scale_report.update_markdown(doc, args.markdown, args.plot)
    print(scale_report.table(doc))
    failed = [n for n, r in doc["runs"].items() if any("error" in s for s in r.get("steps", {}).values())]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
