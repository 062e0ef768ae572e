"""What every workload shares: topic set-up and a window over the broker's CPU and wall time."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.brokers import RunningBroker

MB = 1_000_000
GB = 1_000_000_000


def create_topics(bootstrap: str, topics: dict[str, int], timeout: float = 30.0) -> None:
    """Create `{name: partitions}` (replication factor 1) and wait until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], operation_timeout=timeout)
    for future in futures.values():
        future.result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(timeout=timeout)
        ready = all(
            t in md.topics
            and md.topics[t].error is None
            and len(md.topics[t].partitions) == n
            and all(p.leader >= 0 for p in md.topics[t].partitions.values())
            for t, n in topics.items()
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {sorted(topics)} have no leaders after {timeout}s")
        time.sleep(0.1)


@dataclass
class Window:
    """Wall time and broker CPU seconds between `start()` and `stop()`."""

    broker: RunningBroker
    wall_s: float = 0.0
    cpu_s: float = 0.0
    _t0: float = field(default=0.0, repr=False)
    _c0: float = field(default=0.0, repr=False)

    def start(self) -> Window:
        self._c0 = self.broker.cpu_seconds()
        self._t0 = time.perf_counter()
        return self

    def stop(self) -> Window:
        self.wall_s = time.perf_counter() - self._t0
        self.cpu_s = self.broker.cpu_seconds() - self._c0
        return self


def throughput(records: int, record_size: int, window: Window) -> dict[str, float]:
    """records/s, MB/s (10^6 bytes of record values) and broker CPU seconds per GB moved."""
    payload = records * record_size
    return {
        "records": records,
        "bytes": payload,
        "seconds": round(window.wall_s, 4),
        "records_per_s": records / window.wall_s,
        "mb_per_s": payload / MB / window.wall_s,
        "broker_cpu_s": round(window.cpu_s, 3),
        "broker_cpu_s_per_gb": window.cpu_s / (payload / GB) if payload else 0.0,
        "broker_cpu_util": window.cpu_s / window.wall_s,
    }


def python_speed_ms(iterations: int = 2_000_000) -> float:
    """Milliseconds this process takes for a fixed pure-Python loop (best of three).

    The machines here are shared virtual machines whose CPU speed drifts by up to 2x within a
    minute (this loop was timed at 172-348 ms in one minute on an idle 2-core machine), so a
    workload's absolute rate is recorded next to the speed the machine had when it ran.
    """
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(iterations):
            total += i
        best = min(best, time.perf_counter() - started)
    return best * 1000
