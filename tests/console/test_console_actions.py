"""The console's operator actions end to end in a real browser, each behind its confirmation.

A read-write console on a two-broker cluster: every action is filled in on its page, the first
submit must only show the confirm page (the cluster unchanged), and the confirmed submit must
change the cluster as an independent client (confluent-kafka) then sees it. Refusals come back
as Kafka's error name and message, escaped.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from console_helpers import ConsoleProcess, known_everywhere

from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.client.admin import NewTopic as KafkapyNewTopic
from kafkapy.testing import KafkapyCluster, kafkapy_cluster_context

pytestmark = pytest.mark.timeout(240)
WAIT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    with kafkapy_cluster_context(
        2, {"auto.leader.rebalance.enable": "false"}, tmp_path_factory.mktemp("console-actions")
    ) as c:
        yield c


@pytest.fixture(scope="module")
def console(cluster: KafkapyCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    log = tmp_path_factory.mktemp("console-log") / "console.log"
    proc = ConsoleProcess(["--bootstrap-server", cluster.bootstrap_servers, "--read-write"], log)
    yield proc
    proc.stop()


def admin(cluster: KafkapyCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def partitions(cluster: KafkapyCluster, topic: str) -> dict[int, Any]:
    # All topics: naming one in the request would let the broker auto-create it.
    t = admin(cluster).list_topics(timeout=30).topics.get(topic)
    return {} if t is None or t.error is not None else dict(t.partitions)


def topic_config(cluster: KafkapyCluster, topic: str, name: str) -> str:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(cluster)  # alive until the answer is in (else librdkafka drops the request)
    configs = client.describe_configs([resource])[resource].result(30)
    return str(configs[name].value)


def make_topic(cluster: KafkapyCluster, name: str, assignment: dict[int, list[int]]) -> None:
    client = KafkapyAdmin(cluster.bootstrap_servers)
    try:
        client.create_topic(KafkapyNewTopic(name, replica_assignment=assignment))
    finally:
        client.close()
    # The console asks any broker: the topic page needs every one of them to know the topic.
    deadline = time.monotonic() + WAIT_S
    while not known_everywhere(cluster, name):
        assert time.monotonic() < deadline, f"timed out waiting for every broker to know {name}"
        time.sleep(0.2)


def wait_until(page: Any, check: Any, what: str) -> None:
    for _ in range(int(WAIT_S * 2)):
        if check():
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"timed out waiting for {what}")


def submit(page: Any, form: str, shots: Path, name: str) -> None:
    """Submit a form, check the confirm page, then confirm."""
    page.locator(f"form#{form} button[type=submit]").click()
    page.wait_for_selector("form#confirm-form")
    page.screenshot(path=str(shots / f"{name}-confirm.png"), full_page=True)


def confirm(page: Any, shots: Path, name: str) -> None:
    page.locator("button#confirm").click()
    page.wait_for_selector("#result, #error")
    page.screenshot(path=str(shots / f"{name}-result.png"), full_page=True)


def test_create_topic_acts_only_once_confirmed(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    page.goto(console.url + "/topics")
    form = page.locator("form#form-create-topic")
    form.locator("input[name=topic]").fill("created-in-console")
    form.locator("input[name=partitions]").fill("4")
    form.locator("input[name=replication_factor]").fill("2")
    form.locator("textarea[name=configs]").fill("retention.ms=7200000\ncleanup.policy=compact")
    submit(page, "form-create-topic", screenshots, "create-topic")
    assert page.locator('tr[data-field="topic"] pre').inner_text() == "created-in-console"
    assert partitions(cluster, "created-in-console") == {}, "the first submit must not create the topic"
    confirm(page, screenshots, "create-topic")
    assert "Created topic created-in-console." in page.locator("#result").inner_text()
    parts = partitions(cluster, "created-in-console")
    assert len(parts) == 4 and all(len(p.replicas) == 2 for p in parts.values())
    assert topic_config(cluster, "created-in-console", "retention.ms") == "7200000"
    assert topic_config(cluster, "created-in-console", "cleanup.policy") == "compact"


def test_a_topic_name_with_markup_is_refused_with_kafka_s_error_shown_as_text(
    console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    name = '<script>document.title="pwned"</script>'
    page.goto(console.url + "/topics")
    page.locator("form#form-create-topic input[name=topic]").fill(name)
    submit(page, "form-create-topic", screenshots, "markup-topic")
    assert page.locator('tr[data-field="topic"] pre').inner_text() == name
    confirm(page, screenshots, "markup-topic")
    assert page.title() != "pwned"
    assert page.locator("main script").count() == 0
    assert page.locator(".error-name").inner_text() == "INVALID_TOPIC_EXCEPTION"
    assert name in page.locator(".error-message").inner_text()


def test_add_partitions(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    make_topic(cluster, "grows", {0: [0], 1: [1]})
    page.goto(console.url + "/topics/grows")
    page.locator("form#form-add-partitions input[name=partitions]").fill("5")
    submit(page, "form-add-partitions", screenshots, "add-partitions")
    assert len(partitions(cluster, "grows")) == 2
    confirm(page, screenshots, "add-partitions")
    assert len(partitions(cluster, "grows")) == 5
    # Fewer partitions than now: the broker's INVALID_PARTITIONS.
    page.goto(console.url + "/topics/grows")
    page.locator("form#form-add-partitions input[name=partitions]").fill("3")
    submit(page, "form-add-partitions", screenshots, "shrink-partitions")
    confirm(page, screenshots, "shrink-partitions")
    assert page.locator(".error-name").inner_text() == "INVALID_PARTITIONS"


def test_alter_configs_and_a_malformed_value_refused_with_invalid_config(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    make_topic(cluster, "tuned", {0: [0]})
    page.goto(console.url + "/topics/tuned")
    page.locator("form#form-alter-configs textarea[name=set]").fill(
        "retention.ms=123456\nsegment.bytes=2000000"
    )
    submit(page, "form-alter-configs", screenshots, "alter-configs")
    assert topic_config(cluster, "tuned", "retention.ms") != "123456"
    confirm(page, screenshots, "alter-configs")
    assert topic_config(cluster, "tuned", "retention.ms") == "123456"
    assert topic_config(cluster, "tuned", "segment.bytes") == "2000000"
    page.goto(console.url + "/topics/tuned")
    assert page.locator('tr[data-config="retention.ms"] td.value').inner_text() == "123456"

    page.locator("form#form-alter-configs textarea[name=set]").fill("retention.ms=<b>soon</b>")
    submit(page, "form-alter-configs", screenshots, "bad-config")
    confirm(page, screenshots, "bad-config")
    assert page.locator(".error-name").inner_text() == "INVALID_CONFIG"
    assert "<b>soon</b>" in page.locator(".error-message").inner_text()
    assert page.locator("main b").count() == 0
    assert topic_config(cluster, "tuned", "retention.ms") == "123456"


def test_reassignment_is_started_and_watched_then_preferred_leader_elected(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    make_topic(cluster, "moving", {0: [0], 1: [0]})
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(50):
        p.produce("moving", value=b"v%d" % i, partition=i % 2)
    assert p.flush(60) == 0
    plan = {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [1, 0]}]}
    page.goto(console.url + "/topics/moving")
    page.locator("form#form-reassign textarea[name=plan]").fill(json.dumps(plan))
    submit(page, "form-reassign", screenshots, "reassign")
    assert partitions(cluster, "moving")[0].replicas == [0]
    confirm(page, screenshots, "reassign")
    assert "Successfully started partition reassignment for moving-0" in page.locator("#result").inner_text()
    page.locator("a#next").click()

    def completed() -> bool:
        # The new replicas reach the brokers' metadata before the controller takes the partition
        # out of /admin/reassign_partitions, so "completed" can show while it is still listed.
        page.goto(page.url)
        done = page.locator('tr[data-tp="moving-0"] td.status').inner_text() == "completed"
        return done and page.locator("#none-ongoing").count() == 1

    wait_until(page, completed, "the reassignment to complete")
    page.screenshot(path=str(screenshots / "reassignment-watched.png"), full_page=True)
    after = partitions(cluster, "moving")[0]
    assert after.replicas == [1, 0] and after.leader == 0  # the leader stays where it was

    page.goto(console.url + "/topics/moving")
    page.locator("form#form-elect-preferred input[name=partition]").fill("0")
    submit(page, "form-elect-preferred", screenshots, "elect")
    assert partitions(cluster, "moving")[0].leader == 0
    confirm(page, screenshots, "elect")
    assert (
        "Successfully completed leader election (PREFERRED) for partition moving-0"
        in page.locator("#result").inner_text()
    )
    # As in Kafka, ElectLeaders answers once the controller has decided; the brokers' metadata
    # follows with the controller's UpdateMetadata.
    wait_until(page, lambda: partitions(cluster, "moving")[0].leader == 1, "the new leader in metadata")
    # Again: the preferred replica already leads, Kafka says ELECTION_NOT_NEEDED.
    page.goto(console.url + "/topics/moving")
    page.locator("form#form-elect-preferred input[name=partition]").fill("0")
    submit(page, "form-elect-preferred", screenshots, "elect-again")
    confirm(page, screenshots, "elect-again")
    assert "ELECTION_NOT_NEEDED" in page.locator("#refusals").inner_text()


def test_delete_records(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    make_topic(cluster, "trimmed", {0: [0, 1]})
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(10):
        p.produce("trimmed", value=b"r%d" % i, partition=0)
    assert p.flush(60) == 0
    page.goto(console.url + "/topics/trimmed")
    page.locator("form#form-delete-records input[name=offset]").fill("6")
    submit(page, "form-delete-records", screenshots, "delete-records")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "console-watermarks"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=30) == (0, 10)
        confirm(page, screenshots, "delete-records")
        assert "low_watermark: 6" in page.locator("#result").inner_text()
        assert consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=30) == (6, 10)
    finally:
        consumer.close()
    page.goto(console.url + "/topics/trimmed")
    assert page.locator('tr[data-partition="0"] td.start').inner_text() == "6"


def test_reset_offsets_shows_the_plan_then_commits_it(
    cluster: KafkapyCluster, console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    group = "console-reset-group"
    client = admin(cluster)
    client.create_topics([NewTopic("resettable", 2, 1)])["resettable"].result(30)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(20):
        p.produce("resettable", value=b"x", partition=i % 2)
    assert p.flush(60) == 0
    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "enable.auto.commit": False,
    })  # fmt: skip
    try:
        consumer.commit(offsets=[TopicPartition("resettable", q, 8) for q in range(2)], asynchronous=False)
    finally:
        consumer.close()
    page.goto(console.url + f"/groups/{group}")
    form = page.locator("form#form-reset-offsets")
    form.locator("input[name=topic]").fill("resettable")
    form.locator("select[name=strategy]").select_option("to-earliest")
    submit(page, "form-reset-offsets", screenshots, "reset-offsets")
    assert page.locator("#preview").inner_text().splitlines() == [
        "resettable-0: new offset 0",
        "resettable-1: new offset 0",
    ]
    check = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        tps = [TopicPartition("resettable", q) for q in range(2)]
        assert [tp.offset for tp in check.committed(tps, timeout=30)] == [8, 8]
        confirm(page, screenshots, "reset-offsets")
        assert "resettable-0: committed offset 0" in page.locator("#result").inner_text()
        assert [tp.offset for tp in check.committed(tps, timeout=30)] == [0, 0]
    finally:
        check.close()
    page.goto(console.url + f"/groups/{group}")
    assert page.locator("#total-lag").inner_text() == "20"


def test_an_action_without_the_session_s_form_token_is_refused(
    cluster: KafkapyCluster, console: ConsoleProcess
) -> None:
    request = urllib.request.Request(
        console.url + "/actions/create-topic",
        data=b"topic=forged&partitions=1&replication_factor=1&confirmed=yes",
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403
    assert partitions(cluster, "forged") == {}
