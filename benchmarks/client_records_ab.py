"""A/B two kafkapy trees on the clients' record codec, alternating A B A B, in CPU time.

    python benchmarks/client_records_ab.py --a /path/to/tree-a --b /path/to/tree-b [--rounds 6]

What `benchmarks/ab.py` does not cover (it drives the broker with librdkafka): kafkapy's own
producer below the partitioner (`RecordAccumulator.append` of N records, then closing the
batches: the record encoder) and consumer (`decode_record_set` of those batches: the record
decoder), for 10 B, 100 B and 1000 B values, in-process, no broker. Each round runs each tree
in a fresh interpreter (its `kafkapy` first on PYTHONPATH) and keeps the best of 5 repeats per
figure, in ns of process CPU time per record: CPU time, not wall time, because the machines
here are shared and wall time swings 2x within a minute. Prints per-round figures, medians, and
the B/A ratio of the medians with the range of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SIZES = (10, 100, 1000)

# Runs in the child, against whichever kafkapy comes first on its path.
CHILD = r"""
import gc, json, sys, time
from kafkapy.client.records import decode_record_set
from kafkapy.producer.accumulator import RecordAccumulator
try:
    from kafkapy.common.topic_partition import TopicPartition
except ImportError:  # trees from before TopicPartition moved to kafkapy.common
    from kafkapy.client.cluster import TopicPartition

N, SIZES = int(sys.argv[1]), json.loads(sys.argv[2])
tp = TopicPartition("t", 0)

def produce(size):
    acc = RecordAccumulator(batch_size=16384, linger_ms=5, buffer_memory=1 << 31, max_block_ms=1000,
                            retry_backoff_ms=100, delivery_timeout_ms=120000)
    value, ts, append = b"x" * size, 1_700_000_000_000, acc.append
    t0 = time.process_time()
    for i in range(N):
        append(tp, ts + (i & 7), None, value, None)
    for batch in acc.batches[tp]:
        batch.close(0, -1, -1)
    cpu = time.process_time() - t0
    return cpu, b"".join(bytes(b.buf) for b in acc.batches[tp])

def consume(data):
    t0 = time.process_time()
    records, _ = decode_record_set("t", 0, data)
    cpu = time.process_time() - t0
    assert len(records) == N
    return cpu

out = {}
for size in SIZES:
    best_p = best_c = float("inf")
    for _ in range(5):
        gc.collect()
        cpu, data = produce(size)
        best_p = min(best_p, cpu)
        best_c = min(best_c, consume(data))
    out[f"produce {size} B ns/rec"] = best_p / N * 1e9
    out[f"consume {size} B ns/rec"] = best_c / N * 1e9
print(json.dumps(out))
"""


def one_round(tree: Path, records: int) -> dict[str, float]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(records), json.dumps(SIZES)],
        env=env, cwd="/", capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = (("A", args.a), ("B", args.b)) if r % 2 == 0 else (("B", args.b), ("A", args.a))
        for name, tree in order:
            figures = one_round(tree.resolve(), args.records)
            runs[name].append(figures)
            print(
                f"round {r + 1} {name}: " + "  ".join(f"{k}={v:,.0f}" for k, v in figures.items()), flush=True
            )
    print()
    print(f"{'figure':<24}{'A median':>10}{'B median':>10}{'B/A':>7}  per-round B/A")
    for key in runs["A"][0]:
        a = [x[key] for x in runs["A"]]
        b = [x[key] for x in runs["B"]]
        ratios = sorted(y / x for x, y in zip(a, b, strict=True))
        ratio = statistics.median(b) / statistics.median(a)
        print(
            f"{key:<24}{statistics.median(a):>10,.0f}{statistics.median(b):>10,.0f}{ratio:>7.3f}"
            f"  {ratios[0]:.2f}-{ratios[-1]:.2f}"
        )


if __name__ == "__main__":
    main()
