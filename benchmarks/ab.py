"""A/B two kafkapy source trees on the broker-bound workloads, alternating A B A B.

    python benchmarks/ab.py --a /path/to/tree-a --b /path/to/tree-b [--rounds 3] [--small-only]
        [--a-metrics] [--b-metrics]   # that broker opens its Prometheus endpoint, scraped every second

Each tree's `kafkapy` package goes first on PYTHONPATH of the broker it starts (a tree can be
made with `git worktree add /tmp/a HEAD`). Workloads: pipelined single-record produce requests
(small_requests), librdkafka produce of 1 KB records and consume of them (no client back-off).
Prints per-round figures, medians, and the B/A ratio of each median. The machines here drift
up to 2x in speed within a minute: only the ratio of interleaved rounds means much, and more
rounds (--small-only makes them cheap) narrow it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import consume, produce, small_requests  # noqa: E402
from benchmarks.brokers import kafkapy_broker  # noqa: E402
from benchmarks.common import create_topics  # noqa: E402
from benchmarks.produce import ProduceSpec  # noqa: E402
from kafkapy.testing import free_port  # noqa: E402

SCRAPE_EVERY_S = 1.0


_SCRAPER = """
import sys, time, urllib.request
url, every = sys.argv[1], float(sys.argv[2])
done = 0
try:
    while True:
        time.sleep(every)
        try:
            urllib.request.urlopen(url, timeout=5).read()
            done += 1
        except OSError:
            pass
except KeyboardInterrupt:
    print(done)
"""


@contextlib.contextmanager
def scraping(port: int | None) -> Iterator[list[int]]:
    """Scrape http://127.0.0.1:<port>/metrics every second while the round runs (a Prometheus
    server scrapes every 15-60 s: this is the harsher case). The scraper is a process of its own:
    a thread here would take the GIL from the load generator's threads and change its pacing,
    and with it how many requests the broker finds per read. Yields the count of good scrapes."""
    done: list[int] = [0]
    if port is None:
        yield done
        return
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRAPER, f"http://127.0.0.1:{port}/metrics", str(SCRAPE_EVERY_S)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield done
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        done[0] = int(out.strip() or 0)


def one_round(
    tree: Path, small: int, records: int, small_only: bool, metrics: bool = False
) -> dict[str, float]:
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), old]))
    figures: dict[str, float] = {}
    port = free_port() if metrics else None
    overrides = {"kafkapy.metrics.port": str(port), "kafkapy.metrics.host": "127.0.0.1"} if metrics else None
    try:
        with (
            kafkapy_broker(Path(tempfile.mkdtemp(prefix="kafkapy-ab-")), overrides) as broker,
            scraping(port) as scrapes,
        ):
            create_topics(broker.bootstrap, {"small": 1, "bench-1024b-acks1-p1": 1})
            version = small_requests.produce_version([broker.bootstrap])
            s = small_requests.run(broker, "small", version, small)
            figures["small req/s"] = float(s["requests_per_s"])
            figures["small us cpu/req"] = float(s["broker_cpu_us_per_request"])
            if not small_only:
                spec = ProduceSpec(1024, "1", 1, records)
                p = produce.run(broker, spec)
                c = consume.run(broker, spec.topic, 1, 1024, records, extra=consume.NO_BACKOFF)
                figures["produce MB/s"] = float(p["mb_per_s"])
                figures["produce cpu s/GB"] = float(p["broker_cpu_s_per_gb"])
                figures["consume MB/s"] = float(c["mb_per_s"])
                figures["consume cpu s/GB"] = float(c["broker_cpu_s_per_gb"])
        if metrics:
            figures["scrapes"] = float(scrapes[0])
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=100_000, help="pipelined requests per round")
    parser.add_argument("--records", type=int, default=200_000, help="1 KB records per round")
    parser.add_argument("--small-only", action="store_true", help="only the pipelined small requests")
    parser.add_argument(
        "--a-metrics", action="store_true", help="A opens its metrics endpoint, scraped every second"
    )
    parser.add_argument(
        "--b-metrics", action="store_true", help="B opens its metrics endpoint, scraped every second"
    )
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for name, tree in (("A", args.a), ("B", args.b)):
            metrics = args.a_metrics if name == "A" else args.b_metrics
            figures = one_round(tree.resolve(), args.small, args.records, args.small_only, metrics)
            runs[name].append(figures)
            print(
                f"round {r + 1} {name}: " + "  ".join(f"{k}={v:,.1f}" for k, v in figures.items()), flush=True
            )
    print()
    print(f"{'figure':<20}{'A median':>14}{'B median':>14}{'B/A':>8}  per-round B/A min-max")
    for key in [k for k in runs["A"][0] if k in runs["B"][0]]:
        a = statistics.median(x[key] for x in runs["A"])
        b = statistics.median(x[key] for x in runs["B"])
        pairs = [rb[key] / ra[key] for ra, rb in zip(runs["A"], runs["B"], strict=True) if ra[key]]
        spread = f"{min(pairs):.2f}-{max(pairs):.2f}" if pairs else "-"
        print(f"{key:<20}{a:>14,.1f}{b:>14,.1f}{b / a:>8.2f}  {spread}")


if __name__ == "__main__":
    main()
