"""The console's plots in a real browser: a consumer group's lag over time and per-topic
throughput from the brokers' metrics endpoints, drawn by the vendored uPlot.

The samplers run every 0.5 s here; the plotted numbers are checked against the cluster (the
group's lag as the log end minus the committed offsets, bytes in as what was produced).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from console_helpers import ConsoleProcess, metrics_url

from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.client.admin import NewTopic as KafkapyNewTopic
from kafkapy.testing import KafkapyCluster, kafkapy_cluster_context

pytestmark = pytest.mark.timeout(240)
GROUP = "console-plot-group"
TOPIC = "plotted"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    overrides = {"kafkapy.metrics.port": "0", "kafkapy.metrics.host": "127.0.0.1"}
    with kafkapy_cluster_context(2, overrides, tmp_path_factory.mktemp("console-plots")) as c:
        admin = KafkapyAdmin(c.bootstrap_servers)
        admin.create_topic(KafkapyNewTopic(TOPIC, replica_assignment={0: [0, 1], 1: [1, 0]}))
        admin.close()
        yield c


@pytest.fixture(scope="module")
def console(cluster: KafkapyCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    log = tmp_path_factory.mktemp("console-log") / "console.log"
    urls = [arg for b in cluster.brokers for arg in ("--metrics-url", metrics_url(b))]
    proc = ConsoleProcess(
        ["--bootstrap-server", cluster.bootstrap_servers, "--sample-interval", "0.5", *urls], log
    )
    yield proc
    proc.stop()


def get_json(url: str) -> Any:
    return json.loads(urllib.request.urlopen(url, timeout=30).read())


def produce(cluster: KafkapyCluster, count: int, size: int = 1000) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(count):
        p.produce(TOPIC, value=b"v" * size, partition=i % 2)
    assert p.flush(60) == 0


def test_the_group_lag_plot_follows_the_lag(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, p, 0) for p in range(2)], asynchronous=False)
        page.goto(console.url + f"/groups/{GROUP}")
        # The lag grows in steps while the page is open: 20, 60, 120 records behind.
        for count in (20, 40, 60):
            produce(cluster, count, size=100)
            time.sleep(1.5)
        consumer.commit(offsets=[TopicPartition(TOPIC, p, 30) for p in range(2)], asynchronous=False)
        time.sleep(1.5)
    finally:
        consumer.close()
    page.reload()  # the tables are as of the page's load; the plot keeps following the samples
    plot = page.locator("#lag-plot")
    page.wait_for_function("document.querySelector('#lag-plot').getAttribute('data-points') > 8")
    assert plot.locator("canvas").count() == 1
    page.screenshot(path=str(screenshots / "lag-plot.png"), full_page=True)
    plot.screenshot(path=str(screenshots / "lag-plot-only.png"))
    data = get_json(console.url + f"/api/lag/{GROUP}")
    totals = [t for t in data["total"]]
    # Every level the lag went through was sampled, and the latest is the lag now.
    assert {20, 60, 120} <= set(totals)
    assert totals[-1] == 60
    assert data["partitions"][f"{TOPIC}-0"][-1] == 30
    assert data["times"] == sorted(data["times"])
    legend = plot.locator(".u-legend").inner_text()
    assert "total lag" in legend and f"{TOPIC}-0" in legend


def test_the_throughput_plot_shows_bytes_in_per_topic(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    stop = threading.Event()

    def keep_producing() -> None:
        while not stop.is_set():
            produce(cluster, 50)
            time.sleep(0.2)

    writer = threading.Thread(target=keep_producing, daemon=True)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            rates = get_json(console.url + f"/api/topics/{TOPIC}/rates")
            if sum(1 for v in rates["bytes_in"] if v > 0) >= 3:
                break
            assert time.monotonic() < deadline, f"no throughput sampled: {rates}"
            time.sleep(0.5)
    finally:
        stop.set()
        writer.join(30)
    page.goto(console.url + "/throughput")
    plot = page.locator(f'div.plot[data-topic="{TOPIC}"]')
    page.wait_for_function(
        f"document.querySelector('div.plot[data-topic=\"{TOPIC}\"]').getAttribute('data-drawn') === 'yes'"
    )
    assert plot.locator("canvas").count() == 1
    page.screenshot(path=str(screenshots / "throughput.png"), full_page=True)
    # 50 records of ~1 kB every ~0.2 s or slower: tens of kB/s at most a few MB/s, never zero.
    peak = max(rates["bytes_in"])
    assert 5_000 < peak < 50_000_000
