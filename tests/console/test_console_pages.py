"""The console's read-only pages in a real browser, checked against the cluster's own state.

One two-broker cluster (metrics endpoints on) and one console process for the module. Each page
is compared with what Kafka's protocol says through an independent client (confluent-kafka), and
hostile data (markup in keys, values and headers, a 1 MB record) must arrive as text.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from console_helpers import ConsoleProcess, free_port

from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.client.admin import NewTopic as KafkapyNewTopic
from kafkapy.testing import KafkapyCluster

pytestmark = pytest.mark.timeout(240)

MARKUP = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'
BIG = b"x" * (1024 * 1024)
GROUP = "console-pages-group"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    overrides = {
        "kafkapy.metrics.port": "0",
        "kafkapy.metrics.host": "127.0.0.1",
        "auto.leader.rebalance.enable": "false",
        "message.max.bytes": "2000000",
    }
    racks = {0: {"broker.rack": "rack-a"}, 1: {"broker.rack": "rack-b"}}
    c = KafkapyCluster(tmp_path_factory.mktemp("console-pages"), 2, overrides, racks)
    try:
        c.start()
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        futures = admin.create_topics([
            NewTopic("orders", 3, 2, config={"retention.ms": "3600000"}),
            NewTopic("hostile", 1, 1),
        ])  # fmt: skip
        for f in futures.values():
            f.result(60)
        kadmin = KafkapyAdmin(c.bootstrap_servers)
        kadmin.create_topic(KafkapyNewTopic("solo-on-1", replica_assignment={0: [1]}))
        kadmin.create_topic(KafkapyNewTopic("pair", replica_assignment={0: [0, 1]}))
        kadmin.close()
        p = Producer(
            {"bootstrap.servers": c.bootstrap_servers, "acks": "all", "message.max.bytes": 2_000_000}
        )
        for i in range(30):
            p.produce("orders", value=f"order-{i}".encode(), key=f"k{i}".encode(), partition=i % 3)
        p.produce("hostile", value=MARKUP.encode(), key=MARKUP.encode(), headers=[(MARKUP, MARKUP.encode())])
        p.produce("hostile", value=BIG, key=b"big")
        p.produce("hostile", value=b"\xff\xfe not utf-8 \x00", key=None)
        assert p.flush(60) == 0
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def console(cluster: KafkapyCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    log = tmp_path_factory.mktemp("console-log") / "console.log"
    proc = ConsoleProcess(
        ["--bootstrap-server", cluster.bootstrap_servers, "--zookeeper", cluster.zookeeper_connect], log
    )
    yield proc
    proc.stop()


def cells(page: Any, table: str, row_attr: str, column: str) -> dict[str, str]:
    rows = page.locator(f"table#{table} tbody tr")
    return {
        rows.nth(i).get_attribute(row_attr): rows.nth(i).locator(f"td.{column}").inner_text().strip()
        for i in range(rows.count())
    }


def test_brokers_page_lists_each_broker_with_controller_and_partitions_led(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=30)
    led = {b: 0 for b in md.brokers}
    for t in md.topics.values():
        for p in t.partitions.values():
            led[p.leader] = led.get(p.leader, 0) + 1
    page.goto(console.url + "/")
    page.screenshot(path=str(screenshots / "brokers.png"), full_page=True)
    assert cells(page, "brokers", "data-broker", "led") == {str(b): str(n) for b, n in led.items()}
    controller = cells(page, "brokers", "data-broker", "controller")
    assert [b for b, v in controller.items() if v == "yes"] == [str(md.controller_id)]
    assert cells(page, "brokers", "data-broker", "rack") == {"0": "rack-a", "1": "rack-b"}
    endpoints = cells(page, "brokers", "data-broker", "endpoints")
    for b in cluster.brokers:
        assert f"PLAINTEXT://127.0.0.1:{b.port}" in endpoints[str(b.broker_id)]


def test_brokers_page_says_when_zookeeper_does_not_answer(
    cluster: KafkapyCluster, page: Any, tmp_path: Path
) -> None:
    silent = f"127.0.0.1:{free_port()}"  # nothing listens there
    proc = ConsoleProcess(
        ["--bootstrap-server", cluster.bootstrap_servers, "--zookeeper", silent], tmp_path / "console.log"
    )
    try:
        response = page.goto(proc.url + "/")
        assert response.status == 200
        note = page.locator("#zookeeper-error").inner_text()
        assert f"ZooKeeper {silent} did not answer (Timed out waiting for connection to {silent}" in note
        # What Metadata says is still there: each broker with its one endpoint.
        assert page.locator("table#brokers tbody tr").count() == len(cluster.brokers)
    finally:
        proc.stop()


def test_topics_page_shows_partitions_replication_configs_and_sizes(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    page.goto(console.url + "/topics")
    page.screenshot(path=str(screenshots / "topics.png"), full_page=True)
    assert cells(page, "topics", "data-topic", "partitions")["orders"] == "3"
    assert cells(page, "topics", "data-topic", "rf")["orders"] == "2"
    assert "retention.ms=3600000" in cells(page, "topics", "data-topic", "configs")["orders"]
    assert cells(page, "topics", "data-topic", "urp")["orders"] == "0"
    size = page.locator('tr[data-topic="hostile"] td.size').get_attribute("data-bytes")
    assert size is not None and int(size) > len(BIG)


def test_topic_page_matches_metadata_and_log_end_offsets(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics("orders", timeout=30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "console-watermarks"})
    ends = {p: consumer.get_watermark_offsets(TopicPartition("orders", p), timeout=30)[1] for p in range(3)}
    consumer.close()
    page.goto(console.url + "/topics/orders")
    page.screenshot(path=str(screenshots / "topic.png"), full_page=True)
    parts = md.topics["orders"].partitions
    assert cells(page, "partitions", "data-partition", "leader") == {
        str(p): str(i.leader) for p, i in parts.items()
    }
    assert cells(page, "partitions", "data-partition", "replicas") == {
        str(p): ",".join(map(str, i.replicas)) for p, i in parts.items()
    }
    assert cells(page, "partitions", "data-partition", "isr") == {
        str(p): ",".join(map(str, i.isrs)) for p, i in parts.items()
    }
    assert cells(page, "partitions", "data-partition", "end") == {str(p): str(n) for p, n in ends.items()}
    assert sum(ends.values()) == 30
    # Both replicas of each partition report a log size, and the leader's is not empty.
    for p, info in parts.items():
        sizes = page.locator(f'tr[data-partition="{p}"] td.sizes span')
        assert sizes.count() == 2
        leader = page.locator(f'tr[data-partition="{p}"] td.sizes span[data-broker="{info.leader}"]')
        assert int(leader.get_attribute("data-bytes") or 0) > 0
    assert cells(page, "configs", "data-config", "value")["retention.ms"] == "3600000"
    assert cells(page, "configs", "data-config", "source")["retention.ms"] == "DYNAMIC_TOPIC_CONFIG"


def test_records_page_renders_markup_as_text_and_truncates_a_huge_record(
    console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    page.goto(console.url + "/topics/hostile/partitions/0")
    page.screenshot(path=str(screenshots / "records.png"), full_page=True)
    # The markup is text in the page: no script ran, no element was made from it.
    assert page.title() != "pwned"
    assert page.locator("table#records img").count() == 0
    assert page.locator("table#records script").count() == 0
    first = page.locator('tr[data-offset="0"]')
    assert first.locator("td.value span.data").inner_text() == MARKUP
    assert first.locator("td.key span.data").inner_text() == MARKUP
    assert MARKUP in first.locator("td.headers").inner_text()
    big = page.locator('tr[data-offset="1"] td.value')
    assert len(big.locator("span.data").inner_text()) == 2000
    assert f"({len(BIG)} bytes, truncated)" in big.inner_text()
    assert "not utf-8" in page.locator('tr[data-offset="2"] td.value').inner_text()
    assert page.locator('tr[data-offset="2"] td.key').inner_text() == "null"
    orders = urllib.request.urlopen(console.url + "/topics/orders/partitions/0?count=3").read().decode()
    assert "order-27" in orders and "order-21" in orders and "order-18" not in orders


def test_groups_page_shows_members_assignment_and_lag_per_partition(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP, "client.id": "console-test-client",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
    })  # fmt: skip
    try:
        consumer.subscribe(["orders"])
        for _ in range(120):
            if consumer.assignment():
                break
            consumer.poll(0.5)
        assert len(consumer.assignment()) == 3
        consumer.commit(offsets=[TopicPartition("orders", p, 4) for p in range(3)], asynchronous=False)
        page.goto(console.url + "/groups")
        assert cells(page, "groups", "data-group", "state")[GROUP] == "Stable"
        page.goto(console.url + f"/groups/{GROUP}")
        page.screenshot(path=str(screenshots / "group.png"), full_page=True)
        assert page.locator("#state").inner_text() == "Stable"
        members = page.locator("table#members tbody tr")
        assert members.count() == 1
        assert members.locator("td.client").inner_text() == "console-test-client"
        assert members.locator("td.assignment").inner_text() == "orders-0, orders-1, orders-2"
        assert cells(page, "lag", "data-tp", "committed") == {f"orders-{p}": "4" for p in range(3)}
        assert cells(page, "lag", "data-tp", "lag") == {f"orders-{p}": "6" for p in range(3)}
        assert page.locator("#total-lag").inner_text() == "18"
    finally:
        consumer.close()


def test_a_group_id_with_markup_and_a_slash_is_listed_and_described_as_text(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any
) -> None:
    odd = "<i>team/one</i>"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": odd})
    try:
        consumer.commit(offsets=[TopicPartition("orders", 1, 2)], asynchronous=False)
    finally:
        consumer.close()
    page.goto(console.url + "/groups")
    link = page.locator(f'tr[data-group="{odd}"] a')
    assert link.inner_text() == odd
    assert page.locator("main i").count() == 0
    link.click()
    page.wait_for_selector("#group-id")
    assert page.locator("#group-id").inner_text() == odd
    assert cells(page, "lag", "data-tp", "lag") == {"orders-1": "8"}


def test_an_unknown_topic_is_kafka_s_error_on_an_intact_page(console: ConsoleProcess, page: Any) -> None:
    response = page.goto(console.url + "/topics/" + "%3Cb%3Enot-there%3Cb%3E")
    assert response.status == 404
    assert page.locator(".error-name").inner_text() == "UNKNOWN_TOPIC_OR_PARTITION"
    assert page.locator("main b").count() == 0


def test_read_only_mode_hides_the_action_forms_and_refuses_actions(
    console: ConsoleProcess, page: Any
) -> None:
    page.goto(console.url + "/topics/orders")
    assert page.locator("form.action").count() == 0
    page.goto(console.url + "/topics")
    assert page.locator("form.action").count() == 0
    request = urllib.request.Request(
        console.url + "/actions/create-topic",
        data=b"topic=x&partitions=1&replication_factor=1",
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403


def test_under_replicated_and_offline_partitions_are_highlighted(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    """Last in the module: it stops broker 1 for good."""
    cluster.broker(1).stop()
    for _ in range(60):
        page.goto(console.url + "/topics")
        if cells(page, "topics", "data-topic", "offline-count").get("solo-on-1") == "1":
            break
        page.wait_for_timeout(500)
    page.screenshot(path=str(screenshots / "topics-degraded.png"), full_page=True)
    assert page.locator('tr[data-topic="solo-on-1"]').get_attribute("class") == "offline"
    assert page.locator('tr[data-topic="pair"]').get_attribute("class") == "under-replicated"
    assert cells(page, "topics", "data-topic", "urp")["pair"] == "1"
    colour = page.locator('tr[data-topic="solo-on-1"] td.name').evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert colour == "rgb(255, 214, 214)"
