"""The real Apache ZooKeeper, started by ZooKeeperProcess and by the start/stop commands."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkapy.tools.process_lookup import find_zookeepers, wait_for_exit
from kafkapy.zkserver.launcher import (
    ZooKeeperProcess,
    ZooKeeperStartError,
    find_zookeeper,
    four_letter_word,
    is_zookeeper_reachable,
)

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperProcess]:
    zk = ZooKeeperProcess.standalone(free_port(), tmp_path / "data", tmp_path / "logs")
    try:
        yield zk.start(wait_timeout=60)
    finally:
        zk.stop()


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=15)
    return client


def test_zookeeper_install_is_found() -> None:
    install = find_zookeeper()
    assert any("zookeeper" in Path(jar).name for jar in install.classpath)
    assert os.access(install.java, os.X_OK)


def test_started_zookeeper_serves_znodes_then_stops(zookeeper: ZooKeeperProcess) -> None:
    assert zookeeper.start_seconds is not None and zookeeper.start_seconds < 60
    print(f"ZooKeeper started in {zookeeper.start_seconds:.2f}s")
    assert four_letter_word(zookeeper.host, zookeeper.port, "ruok", 2) == "imok"
    assert is_zookeeper_reachable(zookeeper.connect_string + "/some/chroot", timeout=2)
    client = kazoo(zookeeper.connect_string)
    try:
        client.create("/kafkapy/test", b"hello", makepath=True)
        assert client.get("/kafkapy/test")[0] == b"hello"
    finally:
        client.stop()
        client.close()
    assert zookeeper.pid_file.exists()
    pid = zookeeper.pid
    zookeeper.stop()
    assert not zookeeper.is_running()
    assert not zookeeper.pid_file.exists()
    assert pid is not None and wait_for_exit([pid], 5) == []
    assert not is_zookeeper_reachable(zookeeper.connect_string, timeout=1)


def test_data_survives_a_restart(zookeeper: ZooKeeperProcess) -> None:
    client = kazoo(zookeeper.connect_string)
    client.create("/persisted", b"1")
    client.stop()
    client.close()
    zookeeper.stop()
    zookeeper.start(wait_timeout=60)
    client = kazoo(zookeeper.connect_string)
    try:
        assert client.get("/persisted")[0] == b"1"
    finally:
        client.stop()
        client.close()


def test_start_fails_clearly_when_the_port_is_taken(zookeeper: ZooKeeperProcess, tmp_path: Path) -> None:
    second = ZooKeeperProcess.standalone(zookeeper.port, tmp_path / "data2", tmp_path / "logs2")
    with pytest.raises(ZooKeeperStartError, match="already in use"):
        second.start(wait_timeout=10)


def test_nothing_listening_is_not_reachable() -> None:
    assert not is_zookeeper_reachable(f"127.0.0.1:{free_port()}", timeout=1)


def _run(module: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
        check=False,
    )


def test_start_command_daemon_mode_then_stop_command(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "zookeeper.properties"
    config.write_text(
        f"dataDir={tmp_path / 'zk-data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
    )
    env = {**os.environ, "LOG_DIR": str(tmp_path / "logs")}
    try:
        started = _run("kafkapy.tools.zookeeper_server_start", "-daemon", str(config), env=env)
        assert started.returncode == 0, started.stderr
        assert "started in the background" in started.stdout
        assert is_zookeeper_reachable(f"127.0.0.1:{port}", timeout=5)
        assert (tmp_path / "logs" / "zookeeper.out").exists()
        assert (tmp_path / "logs" / "zookeeper.log").exists()
        assert len(find_zookeepers(config)) == 1

        client = kazoo(f"127.0.0.1:{port}")
        client.create("/via-cli", b"ok")
        assert client.get("/via-cli")[0] == b"ok"
        client.stop()
        client.close()

        stopped = _run("kafkapy.tools.zookeeper_server_stop", "--wait", "30", str(config), env=env)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert find_zookeepers(config) == []
        assert not is_zookeeper_reachable(f"127.0.0.1:{port}", timeout=1)

        again = _run("kafkapy.tools.zookeeper_server_stop", str(config), env=env)
        assert again.returncode == 1
        assert "No zookeeper server to stop" in again.stdout
    finally:
        for info in find_zookeepers(config):  # never leave a JVM behind
            os.kill(info.pid, signal.SIGKILL)


def test_start_command_reports_a_bad_properties_file(tmp_path: Path) -> None:
    config = tmp_path / "zookeeper.properties"
    config.write_text("clientPort=2181\n")
    result = _run("kafkapy.tools.zookeeper_server_start", "-daemon", str(config), env=dict(os.environ))
    assert result.returncode == 1
    assert "dataDir" in result.stderr


def test_restart_keeps_the_port_the_data_and_the_sessions(zookeeper: ZooKeeperProcess) -> None:
    """restart() comes back on the same port and dataDir. A session outlives the restart even when
    ZooKeeper is down longer than its timeout: the server restores sessions from its snapshot and
    log and restarts their timers, so a client that reconnects in time keeps its ephemeral znodes
    (what the ZooKeeper fault tests rely on)."""
    # A session timeout of 8 s leaves a loaded CI machine time to start the JVM again and the
    # client to reconnect; down for 10 s is still longer than the timeout, which is the point.
    # kazoo's default reconnect backoff doubles without a useful cap: after 10 s down its next
    # attempt can come ~9 s after ZooKeeper is back, past the restored session's 8 s, and the
    # session expires (seen in CI). The brokers' ZkIO caps it at 1 s; so does this client.
    client = KazooClient(
        hosts=zookeeper.connect_string,
        timeout=8,
        connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0},
    )
    client.start(timeout=15)
    states: list[str] = []
    client.add_listener(states.append)
    try:
        session = client.client_id[0]
        client.create("/ephemeral", b"1", ephemeral=True)
        port = zookeeper.port
        zookeeper.restart(down_seconds=10)
        assert zookeeper.port == port and zookeeper.is_running()
        assert client.retry(client.exists, "/ephemeral") is not None  # retried until reconnected
        assert client.client_id[0] == session
        assert "LOST" not in states
    finally:
        client.stop()
        client.close()
