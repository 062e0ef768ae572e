"""kafkapy next to Tansu on this machine, with the same client and workload: one command.

    python benchmarks/run.py [--quick] [--rounds N] [--out DIR] [--skip-clients] [--profile]

Measures the ceilings (loopback TCP, the log dir's disk), then for each round starts kafkapy
(ZooKeeper + one broker) and Tansu (memory storage) side by side and runs each workload on one
and then the other, A B, with the order flipped every round (B A); a ratio is the median of
these back-to-back pairs. Workloads: produce (100 B and 1 KB records, acks=1 and all, 1
and 6 partitions), consume of the acks=1 data (twice per round: librdkafka's 100 B consume
rate is bimodal), end-to-end latency at a fixed rate, pipelined single-record produce
requests, and Python clients (kafka-python, kafkapy's own) against kafkapy. Writes
<out>/<full|quick>.json, .md and -throughput.png; with --profile, py-spy profiles of kafkapy
under the 1 KB produce and consume workloads (benchmarks/profiling.py).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script: import the package, not sibling modules
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from benchmarks import brokers, ceilings, clients, consume, latency, produce, report, small_requests  # noqa: E402
from benchmarks.common import create_topics, python_speed_ms  # noqa: E402

SIZES = {"full": {1024: 200_000, 100: 1_000_000}, "quick": {1024: 30_000, 100: 150_000}}
# (records/s, seconds): the fixed moderate rate, and a low one that Tansu also sustains
LATENCY = {"full": ((5000, 10.0), (1000, 6.0)), "quick": ((5000, 3.0), (1000, 2.5))}
SMALL_REQUESTS = {"full": 60_000, "quick": 15_000}
SMALL_REPEATS = {"full": 3, "quick": 1}  # per round: a run takes ~1-2 s, and the machine's speed drifts
CLIENT_RECORDS = {"full": 50_000, "quick": 5_000}
CONSUME_REPEATS = {"full": 2, "quick": 1}  # per round and per consumer configuration
LATENCY_TOPIC, SMALL_TOPIC = "bench-latency", "bench-small"


def produce_specs(mode: str) -> list[produce.ProduceSpec]:
    return [
        produce.ProduceSpec(size, acks, parts, count)
        for size, count in SIZES[mode].items()
        for acks in ("1", "all")
        for parts in (1, 6)
    ]


def _loadavg() -> float:
    """The 1-minute load average: other work on the machine shows up here (2 cores: > 2 is contention)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _brief(result: dict[str, Any]) -> str:
    keys = ("records_per_s", "mb_per_s", "broker_cpu_s_per_gb", "p50_ms", "p99_ms", "p999_ms",
            "requests_per_s", "broker_cpu_us_per_request", "client_cpu_util")  # fmt: skip
    return ", ".join(f"{k}={result[k]:,.2f}" for k in keys if k in result)


def one_round(n: int, work: Path, mode: str, version: int, with_clients: bool) -> dict[str, Any]:
    """Every workload on a fresh kafkapy and a fresh Tansu, both up: {"samples": {broker: {key: [result]}}}.

    Each run of a workload goes to one broker and then straight to the other, and the order
    flips every round, so the two figures of a pair come from the same few seconds of this
    machine, whose speed drifts by up to 2x within a minute.
    """
    order = report.BROKERS if n % 2 == 0 else report.BROKERS[::-1]
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {b: {} for b in report.BROKERS}
    specs = produce_specs(mode)
    out: dict[str, Any] = {"samples": samples}
    with contextlib.ExitStack() as stack:
        running = {b: stack.enter_context(brokers.start(b, work)) for b in report.BROKERS}

        def pair(key: str, run: Callable[[brokers.RunningBroker], dict[str, Any]]) -> None:
            for name in order:
                r = run(running[name])
                samples[name].setdefault(key, []).append(r)
                _log(f"  {name} {key}: {_brief(r)}")

        topics = {s.topic: s.partitions for s in specs} | {SMALL_TOPIC: 1}
        topics |= {f"{LATENCY_TOPIC}-{rate}": 1 for rate, _ in LATENCY[mode]}
        for broker in running.values():
            create_topics(broker.bootstrap, topics)
        for spec in specs:
            pair(spec.key, partial(produce.run, spec=spec))
        for spec in specs:
            if spec.acks != "1":
                continue
            for suffix, extra in (("", None), ("/no-backoff", consume.NO_BACKOFF)):
                key = f"consume/{spec.record_size}B/p={spec.partitions}{suffix}"
                read = partial(consume.run, topic=spec.topic, partitions=spec.partitions,
                               record_size=spec.record_size, records=spec.records, extra=extra)  # fmt: skip
                for _ in range(CONSUME_REPEATS[mode]):
                    pair(key, read)
        for rate, seconds in LATENCY[mode]:
            topic = f"{LATENCY_TOPIC}-{rate}"
            pair(f"latency/1024B@{rate}/s", partial(latency.run, topic=topic, rate=rate, seconds=seconds))

        def small(broker: brokers.RunningBroker) -> dict[str, Any]:
            probe = python_speed_ms()
            r = small_requests.run(broker, SMALL_TOPIC, version, SMALL_REQUESTS[mode])
            r["python_speed_ms"] = (probe + python_speed_ms()) / 2
            return r

        for _ in range(SMALL_REPEATS[mode]):
            pair("small_requests/100B", small)
        if with_clients:
            kafkapy = running["kafkapy"]
            out["clients"] = clients.run(
                kafkapy, CLIENT_RECORDS[mode], lambda t: create_topics(kafkapy.bootstrap, {t: 1})
            )
            for client, res in out["clients"].items():
                _log(f"  python client {client}: {json.dumps(res, default=str)[:300]}")
        out["peak_rss"] = {b: running[b].peak_rss_bytes() for b in report.BROKERS}
        out["loadavg"] = _loadavg()
        _log(f"  peak RSS {json.dumps({b: round(v / 1e6) for b, v in out['peak_rss'].items()})} MB, "
             f"load average {out['loadavg']}")  # fmt: skip
    return out


def export_ref(ref: str, dest: Path) -> str:
    """Put `ref`'s kafkapy package in `dest` and first on PYTHONPATH for the processes we start.

    Others edit the working tree while benchmarks run; a commit is what a figure can be pinned to.
    """
    dest.mkdir(parents=True)
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", ref], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", sha, "kafkapy"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")]))
    return f"git {sha} (exported to {dest})"


def meta(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    import confluent_kafka

    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), ""
    )
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "mode": mode,
        "rounds": args.rounds,
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "kafkapy_commit": commit.stdout.strip(),
        "kafkapy_source": "working tree",
        "working_tree_changes": subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "kafkapy"], capture_output=True, text=True
        ).stdout.splitlines(),
        "tansu": brokers.tansu_version(),
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "python": platform.python_version(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "sizes": {str(k): v for k, v in SIZES[mode].items()},
        "loadavg_at_start": _loadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller data sets, shorter latency run (~2 min)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="A B rounds (default 3)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="where kafkapy's log dir goes (default: a temp dir)"
    )
    parser.add_argument(
        "--kafkapy-ref",
        default=None,
        help="run the broker from this git commit (exported with git archive) instead of the working tree",
    )
    parser.add_argument("--skip-clients", action="store_true", help="leave out the Python client comparison")
    parser.add_argument(
        "--profile", action="store_true", help="also py-spy kafkapy under 1 KB produce and consume"
    )
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    work = Path(tempfile.mkdtemp(prefix="kafkapy-bench-", dir=args.work_dir))
    started = time.monotonic()
    try:
        results: dict[str, Any] = {"meta": meta(args, mode)}
        if args.kafkapy_ref:
            results["meta"]["kafkapy_source"] = export_ref(args.kafkapy_ref, work / "src")
        _log(f"{mode} run, {args.rounds} rounds, work dir {work}")
        results["ceilings"] = ceilings.measure(work, args.quick)
        _log(f"ceilings: {json.dumps(results['ceilings'])}")
        with brokers.tansu_broker() as t:
            tansu_bootstrap = t.bootstrap
            version = small_requests.produce_version([tansu_bootstrap])
        results["meta"]["small_requests_produce_version"] = version
        samples: dict[str, dict[str, list[dict[str, Any]]]] = {b: {} for b in report.BROKERS}
        peak_rss: dict[str, list[int]] = {b: [] for b in report.BROKERS}
        loadavg: list[float] = []  # both brokers share each round
        client_runs: list[dict[str, Any]] = []
        for n in range(args.rounds):
            _log(f"round {n + 1}/{args.rounds}: kafkapy and Tansu")
            r = one_round(n, work / f"round{n}", mode, version, not args.skip_clients)
            for name in report.BROKERS:
                for key, values in r["samples"][name].items():
                    samples[name].setdefault(key, []).extend(values)
                peak_rss[name].append(r["peak_rss"][name])
            loadavg.append(r["loadavg"])
            if "clients" in r:
                client_runs.append(r["clients"])
        (rate, _), _ = LATENCY[mode]
        summary = report.summarize(samples)
        results |= {
            "samples": samples,
            "peak_rss": peak_rss,
            "loadavg_after_round": loadavg,
            "clients": client_runs,
            "summary": summary,
            "targets": report.targets(summary, f"latency/1024B@{rate}/s", "small_requests/100B"),
        }
        results["meta"]["elapsed_s"] = round(time.monotonic() - started, 1)
        paths = report.write(results, args.out, mode)
        print(paths["md"].read_text())
        _log(f"wrote {', '.join(str(p) for p in paths.values())} in {results['meta']['elapsed_s']} s")
        if args.profile:
            from benchmarks import profiling

            profiling.main(["--out", str(args.out / "profiles")])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
