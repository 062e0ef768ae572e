"""kafkapy.testing: a pytest plugin that runs a real ZooKeeper and real kafkapy brokers.

Installed with kafkapy (entry point `pytest11`), so any project can test its Kafka code against
a real Kafka-compatible cluster with nothing but `pip install kafkapy`:

    def test_roundtrip(kafkapy_cluster):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
        ...

    @pytest.mark.kafkapy_cluster(brokers=3, overrides={"num.partitions": "6"})
    def test_three_brokers(kafkapy_cluster):
        kafkapy_cluster.brokers[1].kill()

Every process binds to 127.0.0.1 on a free port; brokers are started through the real
`kafkapy-server-start` command; everything is stopped afterwards, even when the test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_start_command() -> list[str]:
    script = Path(sys.executable).parent / "kafkapy-server-start"
    if script.exists():
        return [str(script)]
    found = shutil.which("kafkapy-server-start")
    if found:
        return [found]
    return [sys.executable, "-m", "kafkapy.tools.server_start"]


class BrokerHandle:
    """One broker process: stop (SIGTERM, clean), kill (SIGKILL), restart with the same data."""

    def __init__(self, broker_id: int, port: int, base_dir: Path, zk_connect: str, overrides: dict[str, str]):
        self.broker_id = broker_id
        self.port = port
        self.base_dir = base_dir
        self.log_dir = base_dir / "data"
        self.logs = base_dir / "logs"
        self.zk_connect = zk_connect
        self.overrides = overrides
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        props = {
            "broker.id": str(self.broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            "zookeeper.connect": self.zk_connect,
            "kafkapy.zookeeper.embedded.enable": "false",
            "offsets.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.overrides,
        }
        config = self.base_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return [*_server_start_command(), str(config)]

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "LOG_DIR": str(self.logs)}
        out = open(self.logs / "kafkaServer.out", "ab")  # noqa: SIM115 - handed to the child
        self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM and wait: a clean shutdown (controlled shutdown, flush, clean marker)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        code = self.process.returncode
        self.process = None
        return code

    def kill(self) -> None:
        """SIGKILL: an unclean stop, as a crash or power cut would leave the data."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        """SIGSTOP: the process freezes (no requests, no ZooKeeper heartbeats) but keeps its state,
        as a long GC pause or a stalled VM would; `resume()` lets it carry on where it stopped."""
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"broker {self.broker_id} is not running")
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause()`; harmless on a process that is not stopped."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)

    def server_log(self) -> str:
        """The broker's server.log, including the hourly rolled-over parts (server.log.<hour>)."""
        parts = sorted(self.logs.glob("server.log.*")) + [self.logs / "server.log"]
        return "".join(p.read_text(errors="replace") for p in parts if p.exists())


BrokerOverrides = Mapping[int, dict[str, str]] | Callable[[int, int], dict[str, str]]


class KafkapyCluster:
    """A real ZooKeeper plus N kafkapy brokers on free 127.0.0.1 ports."""

    def __init__(
        self,
        base_dir: Path,
        num_brokers: int = 1,
        overrides: dict[str, str] | None = None,
        broker_overrides: BrokerOverrides | None = None,
    ):
        self.base_dir = base_dir
        self.num_brokers = num_brokers
        self.overrides = dict(overrides or {})
        # Per-broker settings on top of `overrides` (broker.rack, log.dirs, extra listeners on
        # their own ports...): {broker id: keys}, or a function of (broker id, PLAINTEXT port)
        # for keys that need the port. The PLAINTEXT listener stays: readiness checks use it.
        self.broker_overrides = broker_overrides
        self.zookeeper: Any = None
        self.zookeeper_connect = ""
        self.brokers: list[BrokerHandle] = []

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self) -> None:
        from kafkapy.zkserver.launcher import ZooKeeperProcess, ZooKeeperStartError

        zk_dir = self.base_dir / "zookeeper"
        for attempt in range(3):
            # A port picked free can be taken before the JVM binds it: pick another.
            zk_port = free_port()
            self.zookeeper = ZooKeeperProcess(
                {
                    "dataDir": str(zk_dir / "data"),
                    "clientPort": str(zk_port),
                    "clientPortAddress": "127.0.0.1",
                    "maxClientCnxns": "0",
                    "admin.enableServer": "false",
                },
                log_dir=str(zk_dir / "logs"),
            )
            try:
                self.zookeeper.start()
                break
            except ZooKeeperStartError:
                if attempt == 2:
                    raise
        self.zookeeper_connect = f"127.0.0.1:{zk_port}"
        for broker_id in range(self.num_brokers):
            port = free_port()
            handle = BrokerHandle(
                broker_id,
                port,
                self.base_dir / f"broker-{broker_id}",
                self.zookeeper_connect,
                self._broker_config(broker_id, port),
            )
            self.brokers.append(handle)
            handle.start()
        self.wait_until_ready()

    def _broker_config(self, broker_id: int, port: int) -> dict[str, str]:
        """The cluster's overrides, then this broker's own (a callable may pick its listeners' ports)."""
        extra = self.broker_overrides
        if extra is None:
            own: dict[str, str] = {}
        elif callable(extra):
            own = extra(broker_id, port)
        else:
            own = dict(extra.get(broker_id, {}))
        return {**self.overrides, **own}

    def wait_until_ready(self, timeout: float = START_TIMEOUT_S, broker_ids: list[int] | None = None) -> None:
        """Wait until the running brokers are registered and each one's metadata lists them all and
        names the controller /controller names."""
        from kazoo.client import KazooClient

        wanted = sorted(
            broker_ids if broker_ids is not None else [b.broker_id for b in self.brokers if b.process]
        )
        deadline = time.monotonic() + timeout
        zk = KazooClient(hosts=self.zookeeper_connect, timeout=10)
        zk.start(timeout=15)
        port_retries = 3
        try:
            while True:
                for b in self.brokers:
                    if b.process is not None and b.process.poll() is not None:
                        if port_retries > 0 and _lost_port_race(b):
                            # The port was free when picked, then taken by another process
                            # before the broker bound it (machines running many tests): move on.
                            port_retries -= 1
                            b.port = free_port()
                            # Overrides may name the listeners' ports themselves (a callable picks
                            # fresh ones): without this the retry would bind the taken port again.
                            b.overrides = self._broker_config(b.broker_id, b.port)
                            b.start()
                            continue
                        raise RuntimeError(
                            f"broker {b.broker_id} exited with {b.process.returncode}; its log:\n"
                            + b.server_log()[-4000:]
                        )
                registered = sorted(
                    int(c) for c in (zk.get_children("/brokers/ids") if zk.exists("/brokers/ids") else [])
                )
                controller = zk_controller_id(zk)
                if (
                    set(wanted) <= set(registered)
                    and controller >= 0
                    and self._metadata_ready(wanted, controller)
                ):
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"brokers {wanted} not ready after {timeout}s (registered: {registered})"
                    )
                time.sleep(0.1)
        finally:
            zk.stop()
            zk.close()

    def _metadata_ready(self, wanted: list[int], controller: int) -> bool:
        from kafkapy.client.connection import BrokerConnection

        for b in self.brokers:
            if b.broker_id not in wanted:
                continue
            try:
                with contextlib.closing(
                    BrokerConnection("127.0.0.1", b.port, "kafkapy-testing", 5.0)
                ) as conn:
                    md = conn.send(3, 1, {"topics": []})
                assert md is not None  # None only for requests without an answer (acks=0 Produce)
            except Exception:
                return False
            # A broker that has not heard from the controller yet answers controller -1, which
            # admin clients (librdkafka) take as "wait for a controller" for their whole timeout;
            # one naming a former controller sends them to a broker that answers NOT_CONTROLLER.
            if sorted(x.node_id for x in md.brokers) != wanted or md.controller_id != controller:
                return False
        return True

    def broker(self, broker_id: int) -> BrokerHandle:
        return next(b for b in self.brokers if b.broker_id == broker_id)

    def stop(self) -> None:
        for b in self.brokers:
            with contextlib.suppress(Exception):
                b.stop()
        if self.zookeeper is not None:
            with contextlib.suppress(Exception):
                self.zookeeper.stop()
            self.zookeeper = None


def zk_controller_id(zk: Any) -> int:
    """The broker id /controller names, -1 while there is none (one read: a killed controller's
    ephemeral node can vanish at any moment, its session expiring)."""
    import json

    try:
        data, _ = zk.get("/controller")
        return int(json.loads(data)["brokerid"])
    except Exception:  # noqa: BLE001 - no node, or an election in progress
        return -1


def _lost_port_race(broker: BrokerHandle) -> bool:
    """Did `broker` (which has exited) fail because its listener port was already taken?"""
    tail = broker.server_log()[-4000:]
    # The socket server's own acceptor words it "Address already in use" (the OS's strerror).
    return "Fatal error during KafkaServer startup" in tail and "address already in use" in tail.lower()


@contextlib.contextmanager
def kafkapy_cluster_context(
    num_brokers: int = 1, overrides: dict[str, str] | None = None, base_dir: Path | None = None
) -> Iterator[KafkapyCluster]:
    """The fixture's engine, usable outside pytest: `with kafkapy_cluster_context(3) as c: ...`."""
    owned = base_dir is None
    path = Path(tempfile.mkdtemp(prefix="kafkapy-cluster-")) if base_dir is None else base_dir
    cluster = KafkapyCluster(path, num_brokers, overrides)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if owned:
            shutil.rmtree(path, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafkapy_cluster(brokers=1, overrides=None): size and configure the kafkapy_cluster fixture",
    )


@pytest.fixture
def kafkapy_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkapyCluster]:
    """A fresh ZooKeeper + brokers for one test (see the `kafkapy_cluster` marker)."""
    marker = request.node.get_closest_marker("kafkapy_cluster")
    kwargs = dict(marker.kwargs) if marker else {}
    with kafkapy_cluster_context(
        int(kwargs.get("brokers", 1)), kwargs.get("overrides"), tmp_path_factory.mktemp("kafkapy")
    ) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafkapy_shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    """One single-broker cluster shared by a whole test session (tests use their own topics)."""
    with kafkapy_cluster_context(1, None, tmp_path_factory.mktemp("kafkapy-shared")) as cluster:
        yield cluster
