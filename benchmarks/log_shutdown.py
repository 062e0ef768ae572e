"""LogManager.shutdown of N logs holding one record each: the flush-and-close a broker's SIGTERM pays,
then the load of the same logs that the broker's next start pays.

    python benchmarks/log_shutdown.py [--logs N] [--runs R] [--dir D] [--threads T]

Each run builds a fresh log dir: N logs (one topic, N partitions), leader epoch 0 assigned (its
checkpoint written, as a broker does on becoming leader), one 100 B record appended to each.
Then it times `LogManager.shutdown()` right away, the records still dirty in the page cache as
after a broker's fill, and counts the os.fsync calls it made (msync of the index mappings is not
counted: mmap.flush cannot be wrapped). Then, with the first manager's objects gone as in a new
process, it times a new LogManager's `startup()` on the same dir: the load after a clean
shutdown (no recovery). Prints min/median/max of both over the runs. Run it A/B against another
tree with PYTHONPATH, under `flock /tmp/bench.lock`.

`--keep` leaves the log dirs behind (delete them after the whole A/B): on an ext4 without a
journal, creating a file skips inodes deleted in the last minutes one by one, so removing 50k
files just before the other side's run would slow its file creations.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager


def counting(fn: Callable[..., Any], counter: list[int]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        counter[0] += 1
        return fn(*args)

    return wrapper


def one_run(base: str, logs: int, threads: int, keep: bool) -> tuple[float, float, int, float]:
    log_dir = tempfile.mkdtemp(prefix="log-shutdown-", dir=base)
    try:
        started = time.perf_counter()
        manager = LogManager([log_dir], LogConfig(), recovery_threads_per_data_dir=threads)
        manager.startup()
        batch = build_batch([(None, b"v" * 100, [], 1_700_000_000_000)])
        for p in range(logs):
            log = manager.get_or_create_log(TopicPartition("bench", p))
            log.maybe_assign_epoch_start_offset(0, 0)
            log.append_as_leader(bytearray(batch), leader_epoch=0)
        setup = time.perf_counter() - started
        fsyncs = [0]
        real_fsync = os.fsync
        os.fsync = counting(real_fsync, fsyncs)
        try:
            started = time.perf_counter()
            manager.shutdown()
            elapsed = time.perf_counter() - started
        finally:
            os.fsync = real_fsync
        del manager, log
        gc.collect()
        started = time.perf_counter()
        reloaded = LogManager([log_dir], LogConfig(), recovery_threads_per_data_dir=threads)
        reloaded.startup()
        load = time.perf_counter() - started
        reloaded.shutdown()
        return setup, elapsed, fsyncs[0], load
    finally:
        if not keep:
            shutil.rmtree(log_dir, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logs", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="num.recovery.threads.per.data.dir")
    p.add_argument("--dir", default=None, help="where the log dirs go (default: $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="leave the log dirs (see above)")
    args = p.parse_args()
    base = args.dir or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    times: list[float] = []
    loads: list[float] = []
    for run in range(args.runs):
        setup, elapsed, fsyncs, load = one_run(base, args.logs, args.threads, args.keep)
        times.append(elapsed)
        loads.append(load)
        print(
            f"run {run + 1}: {args.logs} logs set up in {setup:.2f} s; shutdown {elapsed:.3f} s, {fsyncs} fsync calls; "
            f"load after it {load:.3f} s"
        )
    for what, figures in (("shutdown", times), ("load after a clean shutdown", loads)):
        print(
            f"{what} of {args.logs} logs with one record each: min {min(figures):.3f} s, "
            f"median {statistics.median(figures):.3f} s, max {max(figures):.3f} s"
        )


if __name__ == "__main__":
    main()
