"""What a follower's fetcher thread pays to truncate each of N logs after a leader change.

    python benchmarks/follower_truncation.py [--logs N] [--runs R] [--dir D]

At a leadership change each follower asks the new leader where its latest epoch ends and
truncates every partition there: nearly always at or just below its own end, inside the active
segment. Each run builds N logs of one 100 B record in one log dir under a LogManager with the
log cleaner on (Kafka's default), then times, on this thread, `truncate_to` of each log to its
end (the usual no-op) and to the start of its active segment (a real truncation that leaves
the older segments, and so the cleaner's work, alone). The broker's log files are installed (in
a temporary dir), since the lines a truncation logs are part of its cost. Prints min/median/max
over the runs, in microseconds per log. Run it against another tree with PYTHONPATH.
"""

from __future__ import annotations

import shutil
import tempfile
import time

from benchmarks.per_log import parse_args, report
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.cleaner.log_cleaner import CleanerConfig
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager
from kafkapy.tools.logging_setup import setup_logging


def one_run(logs: int, base: str) -> tuple[float, float]:
    root = tempfile.mkdtemp(prefix="follower-truncation-", dir=base)
    try:
        # A long backoff: the cleaner threads stay asleep, as on a broker with no compacted logs.
        manager = LogManager([root], LogConfig(), cleaner_config=CleanerConfig(backoff_ms=600_000))
        manager.startup()
        created = [manager.get_or_create_log(TopicPartition(f"t{p % 100}", p // 100)) for p in range(logs)]
        batch = build_batch([(b"k", b"v" * 100, [], 1_000)], base_offset=0, partition_leader_epoch=0)
        for log in created:
            log.append_as_follower(batch)
        started = time.perf_counter()
        for log in created:
            log.truncate_to(log.log_end_offset)
        at_end = time.perf_counter() - started
        started = time.perf_counter()
        for log in created:
            log.truncate_to(log.active_segment.base_offset)
        into_active = time.perf_counter() - started
        manager.shutdown()
        return at_end, into_active
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    args = parse_args(__doc__)
    log_dir = tempfile.mkdtemp(prefix="follower-truncation-logs-", dir=args.dir)
    setup_logging(log_dir, console=False)
    results = [one_run(args.logs, args.dir or tempfile.gettempdir()) for _ in range(args.runs)]
    report("to its end", [r[0] for r in results], args.logs, unit="us")
    report("into the active segment", [r[1] for r in results], args.logs, unit="us")
    shutil.rmtree(log_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
