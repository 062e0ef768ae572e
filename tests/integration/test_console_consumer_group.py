"""Console consumers with --group are group members: against a real broker, processes started
together split a topic's partitions, a third member joining triggers a rebalance, every message
is printed exactly once across them and the group's committed offsets end at the log end.
A kafkapy member and a confluent-kafka (librdkafka) member share a group, each side leading
once, and the consumer perf test subscribes with --group.

Every wait is bounded; members use Kafka's default heartbeat interval (3 s), so a rebalance
takes a few seconds.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.client.consumer import SimpleConsumer
from kafkapy.testing import KafkapyCluster

BIN = Path(sys.executable).parent
PARTITIONS = 4
WAIT_S = 30.0


def new_topic(bootstrap: str) -> str:
    name = f"cgroup-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(bootstrap)
    try:
        admin.create_topic(NewTopic(name, PARTITIONS, 1))
    finally:
        admin.close()
    return name


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, value in enumerate(values):
            producer.send(topic, value.encode(), partition=i % PARTITIONS)
        producer.flush(WAIT_S)
    finally:
        producer.close(WAIT_S)


def members(bootstrap: str, group: str) -> dict[str, set[int]] | None:
    """{member id: assigned partitions} once the group is Stable, else None."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_groups([group])[group]
    except KafkaError:  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is being created
        return None
    finally:
        admin.close()
    if described["group_state"] != "Stable":
        return None
    return {
        m["member_id"]: {p for a in m["member_assignment"]["assigned_partitions"] for p in a["partitions"]}
        for m in described["members"]
    }


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def split_among(bootstrap: str, group: str, count: int) -> Callable[[], dict[str, set[int]] | None]:
    """A check: the group is Stable with `count` members, each holding partitions, all covered."""

    def check() -> dict[str, set[int]] | None:
        got = members(bootstrap, group)
        if not got or len(got) != count or not all(got.values()):
            return None
        return got if sorted(p for ps in got.values() for p in ps) == list(range(PARTITIONS)) else None

    return check


def console_consumer(bootstrap: str, topic: str, group: str, timeout_ms: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN / "kafkapy-console-consumer"), "--bootstrap-server", bootstrap, "--topic", topic,
         "--group", group, "--from-beginning", "--timeout-ms", str(timeout_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_console_consumers_in_a_group_split_partitions_and_rebalance_for_a_third(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), f"g-{uuid.uuid4().hex[:8]}"
    first = [f"first-{i}" for i in range(200)]
    second = [f"second-{i}" for i in range(200)]
    procs = [console_consumer(bootstrap, topic, group, 12_000) for _ in range(2)]
    try:
        # Produce once both are members, so that each has records to print.
        two = wait_for("two members sharing the partitions", split_among(bootstrap, group, 2))
        produce(bootstrap, topic, first)
        procs.append(console_consumer(bootstrap, topic, group, 12_000))
        three = wait_for("a rebalance giving the third member partitions", split_among(bootstrap, group, 3))
        assert set(two) < set(three)  # the first two kept their member ids through the rebalance
        produce(bootstrap, topic, second)
        outputs = [p.communicate(timeout=45) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    printed = [out.decode().splitlines() for out, _ in outputs]
    assert all(p.returncode == 0 for p in procs), [err.decode()[-2000:] for _, err in outputs]
    assert sorted(line for lines in printed for line in lines) == sorted(first + second)  # exactly once
    assert all(lines for lines in printed), [len(lines) for lines in printed]
    for (_, err), lines in zip(outputs, printed, strict=True):
        assert f"Processed a total of {len(lines)} messages" in err.decode()

    described = subprocess.run(
        [str(BIN / "kafkapy-consumer-groups"), "--bootstrap-server", bootstrap, "--describe", "--group", group],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
    assert sorted((int(r[2]), r[3], r[4], r[5]) for r in rows) == [
        (p, "100", "100", "0") for p in range(PARTITIONS)
    ], described.stdout + described.stderr


def test_a_kafkapy_and_a_librdkafka_member_split_the_partitions_whichever_leads(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), f"interop-{uuid.uuid4().hex[:8]}"
    settings = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}
    stop = threading.Event()
    seen: dict[str, list[str]] = {"kafkapy": [], "kafkapy-2": [], "librdkafka": []}

    def run_kafkapy(name: str, done: threading.Event) -> None:
        consumer = SimpleConsumer(
            bootstrap, group_id=group, client_id=name, auto_offset_reset="earliest", **settings
        )
        try:
            consumer.subscribe([topic])
            while not done.is_set():
                seen[name].extend(r.value.decode() for r in consumer.poll(200))
        finally:
            consumer.close()

    def run_librdkafka() -> None:
        c = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": "librdkafka",
            "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
        })  # fmt: skip
        try:
            c.subscribe([topic])
            while not stop.is_set():
                seen["librdkafka"].extend(
                    m.value().decode() for m in c.consume(100, 0.2) if m.error() is None
                )
        finally:
            c.close()

    # kafkapy joins first, so it leads; then it leaves and a new kafkapy member joins the
    # group librdkafka now leads.
    first_done, second_done = threading.Event(), threading.Event()
    threads = [threading.Thread(target=run_kafkapy, args=("kafkapy", first_done))]
    threads[0].start()
    try:
        wait_for("the kafkapy member alone", split_among(bootstrap, group, 1))
        threads.append(threading.Thread(target=run_librdkafka))
        threads[1].start()
        wait_for("kafkapy leading librdkafka", split_among(bootstrap, group, 2))
        produce(bootstrap, topic, [f"a-{i}" for i in range(40)])
        wait_for("the first batch", lambda: len(seen["kafkapy"]) + len(seen["librdkafka"]) >= 40)
        assert seen["kafkapy"] and seen["librdkafka"]

        first_done.set()
        threads[0].join(WAIT_S)
        wait_for("librdkafka alone", split_among(bootstrap, group, 1))
        threads.append(threading.Thread(target=run_kafkapy, args=("kafkapy-2", second_done)))
        threads[2].start()
        split = wait_for("librdkafka leading kafkapy", split_among(bootstrap, group, 2))
        assert any(m.startswith("kafkapy-2-") for m in split)
        produce(bootstrap, topic, [f"b-{i}" for i in range(40)])
        wait_for("the second batch", lambda: sum(len(v) for v in seen.values()) >= 80)
        time.sleep(0.5)  # nothing more may arrive
    finally:
        stop.set()
        first_done.set()
        second_done.set()
        for t in threads:
            t.join(WAIT_S)
    assert seen["kafkapy-2"] and any(v.startswith("b-") for v in seen["librdkafka"])
    everything = [v for values in seen.values() for v in values]
    assert sorted(everything) == sorted([f"a-{i}" for i in range(40)] + [f"b-{i}" for i in range(40)])


def test_consumer_perf_test_with_a_group_subscribes_and_commits(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), f"perf-{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, [f"m-{i}" for i in range(400)])
    run = subprocess.run(
        [str(BIN / "kafkapy-consumer-perf-test"), "--bootstrap-server", bootstrap, "--topic", topic,
         "--messages", "400", "--group", group, "--timeout", "20000"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    fields = run.stdout.strip().splitlines()[-1].split(", ")
    assert fields[4] == "400"
    consumer = SimpleConsumer(bootstrap, group_id=group)
    try:
        from kafkapy.common.topic_partition import TopicPartition

        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()
    assert sorted(committed.values()) == [100] * PARTITIONS


def test_a_whitelist_subscription_takes_every_matching_topic(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topics = [new_topic(bootstrap), new_topic(bootstrap)]
    for topic in topics:
        produce(bootstrap, topic, [f"{topic}-{i}" for i in range(8)])
    run = subprocess.run(
        [str(BIN / "kafkapy-console-consumer"), "--bootstrap-server", bootstrap, "--whitelist",
         "|".join(topics), "--group", f"wl-{uuid.uuid4().hex[:8]}", "--from-beginning", "--max-messages", "16",
         "--timeout-ms", "20000"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(f"{t}-{i}" for t in topics for i in range(8))
