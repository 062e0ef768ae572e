"""Where kafkapy's broker spends its CPU under load: py-spy, sampled from outside the process.

    python benchmarks/profiling.py [--seconds S] [--rate HZ] [--out DIR]

Starts ZooKeeper + one kafkapy broker and, for each workload (1 KB produce with
confluent-kafka, 1 KB consume with confluent-kafka whose fetcher never backs off
(consume.NO_BACKOFF), pipelined single-record produce requests), keeps the workload running while `py-spy record` samples the
broker (Python frames only, no --native; idle threads not sampled; --nonblocking, so
the broker is never paused by the sampler). Each workload is
recorded twice: a speedscope JSON (open it at https://www.speedscope.app), from which the
top functions by self and total time are computed, and a flame graph SVG. Writes
<out>/<workload>.speedscope.json, <workload>.svg and top.json, and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from benchmarks import brokers, consume, produce, small_requests  # noqa: E402
from benchmarks.brokers import RunningBroker  # noqa: E402
from benchmarks.common import Window, create_topics  # noqa: E402


def py_spy() -> str:
    path = Path(sys.executable).parent / "py-spy"
    return str(path) if path.exists() else "py-spy"


def top_functions(speedscope: Path, n: int = 10) -> dict[str, Any]:
    """Top `n` functions (name + file, lines merged) by share of self and total time, all threads.

    py-spy's speedscope weights are seconds of wall time in which the frame was on CPU.
    """
    doc = json.loads(speedscope.read_text())
    frames = doc["shared"]["frames"]
    label = [f"{f['name']} ({_short(f.get('file', ''))})" for f in frames]
    self_count: Counter[str] = Counter()
    total_count: Counter[str] = Counter()
    samples = 0
    for profile in doc["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            if not stack:
                continue
            samples += weight
            self_count[label[stack[-1]]] += weight
            for name in {label[i] for i in stack}:
                total_count[name] += weight
    return {
        "seconds": round(samples, 2),
        "self": [(name, c / samples) for name, c in self_count.most_common(n)],
        "total": [(name, c / samples) for name, c in total_count.most_common(n + 10)],
    }


def _short(path: str) -> str:
    for marker in ("/kafkapy/", "/site-packages/", "/python3.11/"):
        if marker in path:
            return (
                path.split(marker, 1)[1] if marker != "/kafkapy/" else "kafkapy/" + path.split(marker, 1)[1]
            )
    return path


def record(
    pid: int, out: Path, fmt: str, seconds: int, rate: int, drive: Callable[[threading.Event], None]
) -> None:
    """py-spy `pid` for `seconds` while `drive(stop)` keeps the workload going until `stop` is set."""
    spy = subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--duration",
            str(seconds),
            "--format",
            fmt,
            "--output",
            str(out),
            "--nonblocking",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stop = threading.Event()
    driver = threading.Thread(target=drive, args=(stop,), daemon=True)
    driver.start()
    _, err = spy.communicate(timeout=seconds + 120)
    stop.set()
    driver.join(120)
    if spy.returncode != 0:
        raise RuntimeError(f"py-spy failed: {err.decode(errors='replace')[-2000:]}")


def drivers(broker: RunningBroker, version: int) -> dict[str, Callable[[threading.Event], None]]:
    bootstrap = broker.bootstrap
    create_topics(bootstrap, {"prof-produce": 1, "prof-consume": 1, "prof-small": 1})
    produce.produce(bootstrap, "prof-consume", 1024, 200_000, "1", Window(broker))

    def produce_1k(stop: threading.Event) -> None:
        while not stop.is_set():
            produce.produce(bootstrap, "prof-produce", 1024, 100_000, "1", Window(broker))

    def consume_1k(stop: threading.Event) -> None:
        while not stop.is_set():
            consume.consume(bootstrap, "prof-consume", 1, 200_000, Window(broker), extra=consume.NO_BACKOFF)

    def small(stop: threading.Event) -> None:
        while not stop.is_set():
            small_requests.run(broker, "prof-small", version, 20_000)

    return {"produce-1KB": produce_1k, "consume-1KB": consume_1k, "small-requests": small}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "profiles")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tops: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="kafkapy-profile-") as work,
        brokers.start("kafkapy", Path(work)) as b,
    ):
        version = small_requests.produce_version([b.bootstrap])
        for name, drive in drivers(b, version).items():
            scope = args.out / f"{name}.speedscope.json"
            record(b.pid, scope, "speedscope", args.seconds, args.rate, drive)
            record(b.pid, args.out / f"{name}.svg", "flamegraph", args.seconds, args.rate, drive)
            tops[name] = top_functions(scope)
            print(f"\n## {name}: top functions by self time ({tops[name]['seconds']} s on CPU sampled)")
            for fn, share in tops[name]["self"]:
                print(f"{share:6.1%}  {fn}")
    (args.out / "top.json").write_text(json.dumps(tops, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
