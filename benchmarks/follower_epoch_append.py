"""What a follower's fetcher thread pays for the first batch of a new leader epoch in each of N logs.

    python benchmarks/follower_epoch_append.py [--logs N] [--runs R] [--dir D]

Each run builds N fresh logs in one log dir (as a LogManager with io threads would), then times,
on this thread, `append_as_follower` of one 100 B record carrying leader epoch 1 into each: the
follower's append of the first record after a leader change. The epoch checkpoint that append
changes is written by the LogManager's batched writer on the io threads; the script waits for
those writes separately ("drained"). Prints min/median/max over the runs. Run it against another
tree with PYTHONPATH (a tree whose follower syncs the checkpoint itself shows it in the append).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, wait

from benchmarks.per_log import parse_args, report
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager


def one_run(logs: int, base: str) -> tuple[float, float]:
    root = tempfile.mkdtemp(prefix="follower-epoch-", dir=base)
    io = ThreadPoolExecutor(8, thread_name_prefix="kafka-io")
    futures = []

    def submit(task):  # type: ignore[no-untyped-def]
        futures.append(io.submit(task))

    try:
        manager = LogManager([root], LogConfig(), scheduler=submit)
        manager.startup()
        created = [manager.get_or_create_log(TopicPartition("t", p)) for p in range(logs)]
        batch = build_batch([(b"k", b"v" * 100, [], 1_000)], base_offset=0, partition_leader_epoch=1)
        started = time.perf_counter()
        for log in created:
            log.append_as_follower(batch)
        appended = time.perf_counter() - started
        while futures:
            wait([futures.pop()])
        drained = time.perf_counter() - started
        manager.shutdown()
        return appended, drained
    finally:
        io.shutdown(wait=True)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    args = parse_args(__doc__)
    results = [one_run(args.logs, args.dir or tempfile.gettempdir()) for _ in range(args.runs)]
    report("appends", [r[0] for r in results], args.logs)
    report("drained", [r[1] for r in results], args.logs)


if __name__ == "__main__":
    main()
