"""The cluster the scale benchmark runs on: a real ZooKeeper and three kafkapy brokers, each with
its Prometheus endpoint on a fixed port (so a restarted broker is scraped where it was), plus
the waits the steps share ("until every partition has a leader", "until broker N serves").
"""

from __future__ import annotations

import contextlib
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient

from benchmarks.brokers import python_broker_pid
from benchmarks.scale_probe import MetadataView, RawMetadata, controller_in_zk, scrape
from benchmarks.scale_profile import StepProfiler
from kafkapy.testing import BrokerHandle, KafkapyCluster, free_port

# Kafka's defaults everywhere except what a test cluster on loopback needs (kafkapy.testing's
# keys) and the metrics endpoint. Kafka's docs ask for 100,000+ file descriptors per broker;
# the harness raises its own limit (inherited by the brokers) to NOFILE_LIMIT.
NOFILE_LIMIT = 262_144
BROKERS = 3


def raise_nofile_limit(limit: int = NOFILE_LIMIT) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, limit)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class StepTimeout(Exception):
    """A wait ran out: the step records how far it got instead of a figure."""

    def __init__(self, what: str, seconds: float, state: str):
        super().__init__(f"{what}: not reached after {seconds:.0f} s ({state})")
        self.what = what
        self.state = state


@dataclass
class ScaleCluster:
    cluster: KafkapyCluster
    metrics_ports: dict[int, int]
    zk: KazooClient
    poll_interval: float = 0.2
    deadline: float = float("inf")  # time.monotonic() after which every wait gives up (--deadline-minutes)
    profiler: StepProfiler | None = None  # set while a profiled step runs
    _meta: dict[int, RawMetadata] = field(default_factory=dict)
    _log_offsets: dict[int, int] = field(default_factory=dict)

    # -- brokers ---------------------------------------------------------------------------------

    @property
    def ids(self) -> list[int]:
        return [b.broker_id for b in self.cluster.brokers]

    def handle(self, broker_id: int) -> BrokerHandle:
        return self.cluster.broker(broker_id)

    def live_ids(self) -> list[int]:
        return [b.broker_id for b in self.cluster.brokers if b.is_running()]

    def pid(self, broker_id: int) -> int:
        proc = self.handle(broker_id).process
        assert proc is not None, f"broker {broker_id} is not running"
        return python_broker_pid(proc.pid)

    def controller(self) -> int:
        return controller_in_zk(self.zk)[0]

    def other_than(self, *excluded: int) -> int:
        return max(i for i in self.live_ids() if i not in excluded)

    def metadata(self, broker_id: int) -> MetadataView:
        conn = self._meta.get(broker_id)
        if conn is None:
            conn = self._meta[broker_id] = RawMetadata(broker_id, self.handle(broker_id).port)
        return conn.view()

    def try_metadata(self, broker_id: int) -> MetadataView | None:
        try:
            return self.metadata(broker_id)
        except Exception:  # noqa: BLE001 - not serving (yet): the caller polls again
            self.forget(broker_id)
            return None

    def forget(self, broker_id: int) -> None:
        conn = self._meta.pop(broker_id, None)
        if conn is not None:
            conn.close()

    def scrape(self, broker_id: int) -> dict[str, float]:
        return scrape(self.metrics_ports[broker_id])

    def signal_and_watch_exit(self, broker_id: int, sig: int) -> tuple[float, threading.Thread, list[float]]:
        """Send `sig`; a thread records the time of the process's exit into the returned list."""
        handle = self.handle(broker_id)
        proc = handle.process
        assert proc is not None
        exited: list[float] = []

        def wait() -> None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(900)
            exited.append(time.monotonic())

        self.forget(broker_id)
        started = time.monotonic()
        proc.send_signal(sig)
        watcher = threading.Thread(target=wait, daemon=True)
        watcher.start()
        return started, watcher, exited

    def finish_stop(self, broker_id: int, watcher: threading.Thread, timeout: float) -> int | None:
        watcher.join(timeout)
        handle = self.handle(broker_id)
        proc = handle.process
        assert proc is not None
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
            handle.process = None
            raise StepTimeout(f"broker {broker_id} exit", timeout, "SIGKILLed after the wait")
        handle.process = None
        return proc.returncode

    def start(self, broker_id: int) -> float:
        self._log_offsets[broker_id] = self._log_size(broker_id)
        self.forget(broker_id)
        started = time.monotonic()
        self.handle(broker_id).start()
        if self.profiler is not None:
            # Attached from a timer, so the start-up being timed does not wait for py-spy (which
            # needs the interpreter loaded before it can attach).
            profiler, pid = self.profiler, self.pid(broker_id)
            threading.Timer(0.3, profiler.attach, (pid, f"broker{broker_id}-restart")).start()
        return started

    def kill(self, broker_id: int) -> float:
        handle = self.handle(broker_id)
        assert handle.process is not None
        self.forget(broker_id)
        started = time.monotonic()
        handle.process.send_signal(signal.SIGKILL)
        handle.process.wait(30)
        handle.process = None
        return started

    def _server_log(self, broker_id: int) -> Path:
        return self.handle(broker_id).logs / "server.log"

    def _log_size(self, broker_id: int) -> int:
        path = self._server_log(broker_id)
        return path.stat().st_size if path.exists() else 0

    def logged_started(self, broker_id: int) -> bool:
        """Has the broker logged "[KafkaServer id=N] started" since `start()`? (reads only the new
        part of server.log: at 10k partitions the log is tens of MB)."""
        path = self._server_log(broker_id)
        if not path.exists():
            return False
        offset = self._log_offsets.get(broker_id, 0)
        size = path.stat().st_size
        if size < offset:  # rolled over
            offset = 0
        with open(path, "rb") as f:
            f.seek(max(0, offset - 100))
            new = f.read(size - max(0, offset - 100))
        # Reading from 100 bytes back finds a line split across two reads.
        self._log_offsets[broker_id] = size
        return f"[KafkaServer id={broker_id}] started".encode() in new

    def check_alive(self) -> None:
        for b in self.cluster.brokers:
            if b.process is not None and b.process.poll() is not None:
                raise RuntimeError(
                    f"broker {b.broker_id} exited with {b.process.returncode}: " + b.server_log()[-3000:]
                )

    # -- waits -----------------------------------------------------------------------------------

    def wait(
        self,
        what: str,
        started: float,
        check: Callable[[], bool],
        timeout: float,
        state: Callable[[], str] = lambda: "",
    ) -> float:
        """Poll `check` until true; seconds since `started` (a time.monotonic() reading).

        Sleeps at least as long as the check took, so the poller (decoding 10k-partition
        Metadata answers) takes at most half a core from the brokers it is timing."""
        deadline = min(started + timeout, self.deadline)
        while True:
            probe = time.monotonic()
            if check():
                return time.monotonic() - started
            now = time.monotonic()
            if now > deadline:
                raise StepTimeout(what, deadline - started, state())
            time.sleep(max(self.poll_interval, now - probe))

    def all_isr_full(self, expected: int, brokers: list[int] | None = None) -> tuple[bool, str]:
        """Every live broker's Metadata lists `expected` partitions, each led by a live broker with
        its whole replica set in the ISR. Brokers are asked one after the other and the check
        stops at the first that disagrees (a 10k-partition answer costs the poller ~0.1-0.3 s)."""
        for b in brokers if brokers is not None else self.live_ids():
            view = self.try_metadata(b)
            if view is None:
                return False, f"broker {b} not serving Metadata"
            if view.partitions < expected or not view.all_isr_full:
                return False, (
                    f"broker {b}: {view.partitions}/{expected} partitions, {view.leaderless} leaderless,"
                    f" {view.under_replicated} under-replicated"
                )
        return True, "all ISRs full"

    def all_led(self, expected: int, brokers: list[int] | None = None) -> tuple[bool, str]:
        for b in brokers if brokers is not None else self.live_ids():
            view = self.try_metadata(b)
            if view is None:
                return False, f"broker {b} not serving Metadata"
            if view.partitions < expected or not view.all_led:
                return (
                    False,
                    f"broker {b}: {view.partitions}/{expected} partitions, {view.leaderless} leaderless",
                )
        return True, "all partitions led"

    def cluster_gauges(self) -> dict[str, float]:
        """Sums over the live brokers of the gauges an operator's dashboard shows."""
        totals: dict[str, float] = {}
        for b in self.live_ids():
            with contextlib.suppress(Exception):
                g = self.scrape(b)
                for key in (
                    "kafka_server_replicamanager_underreplicatedpartitions",
                    "kafka_controller_kafkacontroller_offlinepartitionscount",
                    "kafka_controller_kafkacontroller_activecontrollercount",
                    "kafka_server_replicamanager_partitioncount",
                    "kafka_server_replicamanager_leadercount",
                ):
                    totals[key] = totals.get(key, 0.0) + g.get(key, 0.0)
        return totals

    def close(self) -> None:
        for b in list(self._meta):
            self.forget(b)


def _metrics_overrides(ports: dict[int, int]) -> Callable[[int, int], dict[str, str]]:
    def per_broker(broker_id: int, _port: int) -> dict[str, str]:
        return {"kafkapy.metrics.port": str(ports[broker_id]), "kafkapy.metrics.host": "127.0.0.1"}

    return per_broker


@contextlib.contextmanager
def scale_cluster(base_dir: Path, overrides: dict[str, str] | None = None) -> Iterator[ScaleCluster]:
    raise_nofile_limit()
    ports = {i: free_port() for i in range(BROKERS)}
    cluster = KafkapyCluster(base_dir, BROKERS, overrides, _metrics_overrides(ports))
    zk: KazooClient | None = None
    sc: ScaleCluster | None = None
    try:
        cluster.start()
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=30)
        zk.start(timeout=30)
        sc = ScaleCluster(cluster, ports, zk)
        yield sc
    finally:
        if sc is not None:
            sc.close()
        if zk is not None:
            with contextlib.suppress(Exception):
                zk.stop()
                zk.close()
        # Brokers with thousands of partitions take a while to stop cleanly: in parallel.
        for b in cluster.brokers:
            if b.process is not None and b.process.poll() is None:
                b.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 120
        for b in cluster.brokers:
            if b.process is not None:
                try:
                    b.process.wait(max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    b.process.kill()
                    b.process.wait(30)
        cluster.stop()


def mem_available_gb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0
