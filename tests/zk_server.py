"""A real Apache ZooKeeper for integration tests (test-only helper).

Uses kafkapy.zkserver.launcher.ZooKeeperProcess (the project's launcher) on a free loopback
port in a temporary directory; `zookeeper_server()` always stops it.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kafkapy.zkserver.launcher import ZooKeeperProcess


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def zookeeper_server(start_timeout: float = 60.0) -> Iterator[ZooKeeperProcess]:
    """Yields a started standalone ZooKeeper; `.connect_string` is its host:port."""
    with tempfile.TemporaryDirectory(prefix="kafkapy-zk-") as tmp:
        base = Path(tmp)
        # A port picked free can be taken before the JVM binds it: try a few.
        last_error: Exception | None = None
        for _ in range(3):
            zk = ZooKeeperProcess.standalone(free_port(), base / "data", base / "logs")
            try:
                zk.start(wait_timeout=start_timeout)
            except Exception as e:  # ZooKeeperStartError, port races
                last_error = e
                continue
            try:
                yield zk
            finally:
                zk.stop()
            return
        raise RuntimeError(f"could not start ZooKeeper: {last_error}")
