"""Helpers of the console's browser tests: the console as a process, Chromium's launch options.

Chromium is Debian's (/usr/bin/chromium, installed by bin/kafkapy-run), driven by Playwright's
Python API; Playwright's own browser download is never used. The machine's network is closed,
so every background service of Chromium that would dial out is switched off.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from kafkapy.client.connection import BrokerConnection
from kafkapy.testing import BrokerHandle, KafkapyCluster, free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT_S = 60.0


class ConsoleProcess:
    """`python -m kafkapy.console.cli ...` on a free port; stopped by its own pid."""

    def __init__(self, args: list[str], log_path: Path, ca: Path | None = None) -> None:
        """`ca`: the console serves HTTPS (its args carry --ssl-certfile), trusted through this CA."""
        self.port = free_port()
        self.url = f"{'https' if ca else 'http'}://127.0.0.1:{self.port}"
        self.tls = ssl.create_default_context(cafile=str(ca)) if ca else None
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkapy.console.cli", "--port", str(self.port), *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"kafkapy-console exited: {log_path.read_text()}")
            try:
                urllib.request.urlopen(self.url + "/static/console.css", timeout=5, context=self.tls).read()
                return
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"kafkapy-console did not start: {log_path.read_text()}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._log.close()


def metrics_url(broker: BrokerHandle) -> str:
    """The broker's Prometheus endpoint (kafkapy.metrics.port=0: the port it logged)."""
    found = re.findall(
        r"Metrics endpoint listening on (http://127\.0\.0\.1:\d+/metrics)", broker.server_log()
    )
    assert found, "the broker did not open its metrics endpoint"
    return found[-1]


def known_everywhere(cluster: KafkapyCluster, topic: str) -> bool:
    """Every broker's metadata has `topic` with a leader for each partition (CreateTopics answers
    once the controller has elected them; the other brokers learn it from UpdateMetadata)."""
    for broker in cluster.brokers:
        with contextlib.closing(BrokerConnection("127.0.0.1", broker.port, "console-test", 10.0)) as conn:
            md = conn.send(3, 1, {"topics": [{"name": topic}]})
        if md.topics[0].error_code or any(p.leader_id < 0 for p in md.topics[0].partitions):
            return False
    return True
