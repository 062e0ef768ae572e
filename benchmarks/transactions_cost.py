"""What transactions cost: librdkafka produce throughput, idempotent vs transactional, in one run.

    python benchmarks/transactions_cost.py [--records 100000] [--size 100] [--rounds 3]
                                           [--per-transaction 1000,100]

One real kafkapy broker (kafkapy.testing). Each round produces the same records once with
`enable.idempotence=true` and once per transaction size with `transactional.id` (commit every
N records), alternating, acks=all both ways; prints the median records/s and MB/s of each and
the ratio to idempotent. The transactional cost is per transaction (AddPartitionsToTxn, EndTxn,
the markers, the flush before each commit), so it shrinks as transactions grow.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkapy.testing import kafkapy_cluster_context  # noqa: E402

OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}
BASE = {"linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000, "acks": "all"}


def produce(bootstrap: str, topic: str, value: bytes, records: int, per_txn: int | None) -> float:
    """Seconds to produce `records` (and commit them, when transactional)."""
    conf = {"bootstrap.servers": bootstrap, **BASE}
    if per_txn is None:
        conf["enable.idempotence"] = True
    else:
        conf["transactional.id"] = f"bench-{uuid.uuid4()}"
    p = Producer(conf)
    # Connections, metadata and the producer id come first, outside the timing, for both.
    if per_txn is not None:
        p.init_transactions(60)
        p.begin_transaction()
    p.produce(topic, value)
    if per_txn is not None:
        p.commit_transaction(60)
    assert p.flush(60) == 0
    start = time.perf_counter()
    sent = 0
    while sent < records:
        n = min(per_txn or records, records - sent)
        if per_txn is not None:
            p.begin_transaction()
        for _ in range(n):
            while True:
                try:
                    p.produce(topic, value)
                    break
                except BufferError:
                    p.poll(0.05)
        sent += n
        if per_txn is not None:
            p.commit_transaction(60)
    assert p.flush(120) == 0
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-transaction", default="1000,100")
    args = parser.parse_args()
    sizes = [int(x) for x in args.per_transaction.split(",")]
    value = b"x" * args.size
    modes: list[int | None] = [None, *sizes]
    seconds: dict[int | None, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp, kafkapy_cluster_context(1, OVERRIDES, Path(tmp)) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench-txn", 1, 1)])["bench-txn"].result(60)
        produce(bootstrap, "bench-txn", value, 2000, sizes[0])  # warm-up: coordinator loaded
        for _ in range(args.rounds):
            for mode in modes:
                seconds[mode].append(produce(bootstrap, "bench-txn", value, args.records, mode))
    base = statistics.median(seconds[None])
    print(f"{args.records} records of {args.size} B, {args.rounds} rounds, one broker, acks=all (medians):")
    for mode in modes:
        s = statistics.median(seconds[mode])
        name = "idempotent" if mode is None else f"transactional, {mode} records a transaction"
        rate = args.records / s
        print(
            f"  {name:45s} {rate:10,.0f} records/s {rate * args.size / 1e6:7.2f} MB/s "
            f"({base / s:.2f}x idempotent)"
        )


if __name__ == "__main__":
    main()
