"""Client quotas end to end (KIP-13, KIP-55, KIP-219) with confluent-kafka against a real broker.

Invariants: a producer held to a 1 MB/s client-id producer_byte_rate moves 1 MB/s (within 10%)
measured over whole quota periods, and librdkafka reports the throttle time (throttle_cb); a
consumer_byte_rate holds a consumer the same way; quotas set, changed and removed live through
kafkapy-configs take effect without a restart.

Why "whole quota periods": Kafka's Rate lets a client that has been quiet send (samples - 1)
windows of its quota at once (10 MB here), then throttles it until the oldest sample leaves the
11 s window, so its throughput is a burst then a trickle repeating every ~11 s. The test
measures from the first request over two such periods (22 s) by default, and three (33 s) with
KAFKAPY_QUOTA_LONG=1 (marked slow); both are rates Kafka's own broker would give.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster

MB = 1024 * 1024
LONG = os.environ.get("KAFKAPY_QUOTA_LONG") == "1"
QUOTA_PERIOD_S = 11.0  # quota.window.num x quota.window.size.seconds
WAIT_S = 60.0


def configs(*args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.configs", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return result


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(WAIT_S)


class ProduceRun:
    """A producer sending as fast as it can; what was acknowledged when, and the throttles reported."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        self.throttles: list[int] = []
        self.acked: list[tuple[float, int]] = []
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
            "batch.size": 64 * 1024, "queue.buffering.max.kbytes": 4096,
            "throttle_cb": lambda event: self.throttles.append(event.throttle_time),
        })  # fmt: skip

    def _acked(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append((time.monotonic(), len(msg.value())))

    def run(self, topic: str, seconds: float, value: bytes = b"x" * 4096) -> float:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            try:
                self.producer.produce(topic, value, on_delivery=self._acked)
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
        return start

    def rate(self, start: float, seconds: float) -> float:
        """Bytes per second acknowledged in [start, start + seconds)."""
        return sum(n for t, n in self.acked if start <= t < start + seconds) / seconds

    def close(self) -> None:
        self.producer.flush(30)


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_producer_byte_rate_holds_a_producer_and_is_reported(kafkapy_cluster: KafkapyCluster) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    create_topic(boot, "quota-p")
    assert configs(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "quota-producer",
        "--add-config",
        f"producer_byte_rate={MB}",
    ) == ["Completed updating config for entity: client-id 'quota-producer'."]
    seconds = (3 if LONG else 2) * QUOTA_PERIOD_S
    run = ProduceRun(boot, "quota-producer")
    try:
        start = run.run("quota-p", seconds + 1)
        rate = run.rate(start, seconds)
    finally:
        run.close()
    print(
        f"producer held to {rate / MB:.3f} MB/s over {seconds:.0f} s; "
        f"{len(run.throttles)} throttles reported, max {max(run.throttles, default=0) * 1000:.0f} ms"
    )
    assert 0.9 * MB <= rate <= 1.1 * MB, rate / MB
    assert run.throttles and max(run.throttles) > 0


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_consumer_byte_rate_holds_a_consumer(kafkapy_cluster: KafkapyCluster) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    create_topic(boot, "quota-c")
    seconds = (3 if LONG else 2) * QUOTA_PERIOD_S
    # More than the quota lets through in the measured time, written before the quota exists.
    loader = Producer({"bootstrap.servers": boot, "linger.ms": 20})
    value = b"y" * 8192
    for _ in range(int((seconds + 15) * MB / len(value))):
        while True:
            try:
                loader.produce("quota-c", value)
                break
            except BufferError:
                loader.poll(0.05)
    assert loader.flush(60) == 0
    assert configs(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "quota-consumer",
        "--add-config",
        f"consumer_byte_rate={MB}",
    ) == ["Completed updating config for entity: client-id 'quota-consumer'."]
    throttles: list[float] = []
    consumer = Consumer({
        "bootstrap.servers": boot, "group.id": "quota-g", "client.id": "quota-consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "max.partition.fetch.bytes": 262144,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    received: list[tuple[float, int]] = []
    try:
        consumer.subscribe(["quota-c"])
        first = wait_until(lambda: consumer.poll(0.5), "the first record")
        start = time.monotonic()
        received.append((start, len(first.value())))
        while time.monotonic() - start < seconds:
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    received.append((time.monotonic(), len(msg.value())))
    finally:
        consumer.close()
    rate = sum(n for t, n in received if t < start + seconds) / seconds
    print(f"consumer held to {rate / MB:.3f} MB/s over {seconds:.0f} s; {len(throttles)} throttles reported")
    assert 0.85 * MB <= rate <= 1.15 * MB, rate / MB
    assert throttles and max(throttles) > 0


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_quotas_change_live_through_kafkapy_configs(kafkapy_cluster: KafkapyCluster) -> None:
    """A <default> user quota, then a stricter client quota for the same producer (KIP-55: the
    user's wins while it exists), then none: each takes effect on the running broker."""
    boot = kafkapy_cluster.bootstrap_servers
    create_topic(boot, "quota-live")
    run = ProduceRun(boot, "live-producer")
    try:
        run.run("quota-live", 2)
        assert not run.throttles, "throttled before any quota exists"
        configs(
            "--bootstrap-server",
            boot,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "live-producer",
            "--add-config",
            "producer_byte_rate=65536",
        )

        def throttled_again(seconds: float = 2) -> bool:
            seen = len(run.throttles)
            run.run("quota-live", seconds)
            return len(run.throttles) > seen and max(run.throttles[seen:]) > 0

        wait_until(throttled_again, "the client quota to throttle the producer")
        configs(
            "--bootstrap-server",
            boot,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "live-producer",
            "--delete-config",
            "producer_byte_rate",
        )
        # Once the change is seen no request is throttled any more.
        wait_until(lambda: not throttled_again(3), "the deleted quota to stop throttling", timeout=90)
    finally:
        run.close()


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_kafkapy_configs_sets_and_describes_quotas_through_both_paths(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    # --bootstrap-server: AlterClientQuotas, Kafka's lines; the znodes are Kafka's.
    assert configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-1",
        "--add-config",
        "producer_byte_rate=1048576,request_percentage=50",
    ) == ["Completed updating config for user alice."]
    assert json.loads(zk.get("/config/users/alice/clients/app-1")[0]) == {
        "version": 1,
        "config": {"producer_byte_rate": "1048576", "request_percentage": "50.0"},
    }
    assert configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-default",
        "--add-config",
        "consumer_byte_rate=20000",
    ) == ["Completed updating default config for clients in the cluster."]
    assert json.loads(zk.get("/config/clients/<default>")[0])["config"] == {"consumer_byte_rate": "20000"}
    assert configs(
        "--bootstrap-server",
        boot,
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-1",
    ) == [
        "Quota configs for user-principal 'alice', client-id 'app-1' are producer_byte_rate=1048576.0, "
        "request_percentage=50.0"
    ]
    assert configs(
        "--bootstrap-server", boot, "--describe", "--entity-type", "clients", "--entity-default"
    ) == ["Quota configs for the default client-id are consumer_byte_rate=20000.0"]
    # Without a name: every client id entity with a name (match type "any specified name").
    assert configs("--bootstrap-server", boot, "--describe", "--entity-type", "clients") == []
    # --zookeeper: the same entities, Kafka's ZooKeeper-path lines.
    assert configs(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-1",
        "--delete-config",
        "request_percentage",
    ) == ["Completed updating config for entity: user-principal 'alice', client-id 'app-1'."]
    assert configs(
        "--zookeeper",
        zkc,
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
    ) == ["Configs for user-principal 'alice', client-id 'app-1' are producer_byte_rate=1048576"]
    assert configs(
        "--zookeeper",
        zkc,
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--add-config",
        "producer_byte_rate=4096",
    ) == ["Completed updating config for entity: default user-principal."]
    assert configs(
        "--bootstrap-server", boot, "--describe", "--entity-type", "users", "--entity-default"
    ) == ["Quota configs for the default user-principal are producer_byte_rate=4096.0"]
    # Names pair with the entity types in command-line order, --entity-default included.
    assert configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-2",
        "--add-config",
        "consumer_byte_rate=8192",
    ) == ["Completed updating default config for users in the cluster."]
    assert json.loads(zk.get("/config/users/<default>/clients/app-2")[0])["config"] == {
        "consumer_byte_rate": "8192"
    }
    # Refusals: Kafka's messages, nothing written.
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkapy.tools.configs",
            "--bootstrap-server",
            boot,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "c",
            "--add-config",
            "retention.ms=1",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert bad.returncode == 1
    assert (
        "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: "
        "Set(retention.ms)" in bad.stderr
    )
    assert not zk.exists("/config/clients/c")


@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_alter_and_describe_client_quotas_through_the_admin_api(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    """Neither confluent-kafka nor kafka-python exposes KIP-546: kafkapy's admin client speaks it."""
    from kafkapy.client.admin import AdminClient as KafkapyAdmin
    from kafkapy.client.client_quotas import FilterComponent, alter_client_quotas, describe_client_quotas
    from kafkapy.protocol.errors import InvalidRequestException

    admin = KafkapyAdmin(kafkapy_cluster.bootstrap_servers)
    try:
        # validate_only checks and writes nothing.
        alter_client_quotas(admin, {"user": "bob"}, {"consumer_byte_rate": 1000.0}, validate_only=True)
        assert not zk.exists("/config/users/bob")
        alter_client_quotas(admin, {"user": "bob"}, {"consumer_byte_rate": 1000.0})
        alter_client_quotas(admin, {"user": "bob", "client-id": None}, {"producer_byte_rate": 2000.0})
        assert describe_client_quotas(admin, [FilterComponent.of_entity("user", "bob")]) == [
            ({"user": "bob"}, {"consumer_byte_rate": 1000.0}),
            ({"user": "bob", "client-id": None}, {"producer_byte_rate": 2000.0}),
        ]
        assert describe_client_quotas(admin, [FilterComponent.of_entity("user", "bob")], strict=True) == [
            ({"user": "bob"}, {"consumer_byte_rate": 1000.0})
        ]
        with pytest.raises(InvalidRequestException, match="Invalid configuration key nonsense"):
            alter_client_quotas(admin, {"user": "bob"}, {"nonsense": 1.0})
        with pytest.raises(InvalidRequestException, match="must be a Long value"):
            alter_client_quotas(admin, {"client-id": "x"}, {"producer_byte_rate": 1.5})
        alter_client_quotas(admin, {"user": "bob"}, {"consumer_byte_rate": None})
        assert describe_client_quotas(admin, [FilterComponent.of_entity("user", "bob")], strict=True) == []
    finally:
        admin.close()


def _metadata_until_throttled(conn: Any, version: int, limit: int = 2000) -> tuple[int, float]:
    """Metadata requests until one is throttled: its throttle time and how long it took."""
    for _ in range(limit):
        started = time.monotonic()
        answer = conn.send(3, version, {"topics": None, "allow_auto_topic_creation": False})
        if answer.throttle_time_ms:
            return answer.throttle_time_ms, time.monotonic() - started
    raise AssertionError(f"no Metadata v{version} request throttled in {limit}")


def _throttled_soon(conn: Any, version: int) -> int:
    """The throttle time of one of the next 200 Metadata requests, 0 if none was throttled (the
    broker may not have seen the quota yet: ask again)."""
    try:
        return _metadata_until_throttled(conn, version, limit=200)[0]
    except AssertionError:
        return 0


@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_request_percentage_throttles_kip219_clients_after_the_answer_and_older_ones_before(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    """request_percentage counts the time requests keep the broker's loop busy. A throttled
    Metadata v9 answer comes at once and the connection is then muted (the next answer waits);
    a throttled v5 answer (before KIP-219) is itself held for the throttle time."""
    from kafkapy.client.connection import BrokerConnection

    boot = kafkapy_cluster.bootstrap_servers
    configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "busy",
        "--add-config",
        "request_percentage=0.01",
    )
    host, port = boot.split(":")
    conn = BrokerConnection(host, int(port), client_id="busy")
    try:
        throttle_ms = wait_until(lambda: _throttled_soon(conn, 9), "a throttled Metadata v9")
        assert 0 < throttle_ms <= 1000  # a request quota throttles for one window at most
        started = time.monotonic()
        conn.send(3, 9, {"topics": None, "allow_auto_topic_creation": False})
        assert time.monotonic() - started >= throttle_ms / 1000 * 0.8, "the connection was not muted"
        throttle_ms, took = _metadata_until_throttled(conn, 5)
        assert took >= throttle_ms / 1000 * 0.8, "the v5 answer was not held"
    finally:
        conn.close()


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_kafka_python_and_aiokafka_read_everything_under_quotas(kafkapy_cluster: KafkapyCluster) -> None:
    """Throttled produce answers and empty throttled fetch answers (KIP-219) are understood by
    kafka-python and aiokafka: everything written is read, at the quota's pace."""
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from kafka import KafkaConsumer, KafkaProducer

    boot = kafkapy_cluster.bootstrap_servers
    create_topic(boot, "quota-py")
    for client in ("py-producer", "py-consumer", "aio-consumer"):
        configs(
            "--bootstrap-server",
            boot,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            client,
            "--add-config",
            "producer_byte_rate=131072,consumer_byte_rate=131072",
        )
    time.sleep(1)
    value, count = b"v" * 1024, 2000  # ~2 MB: past the 1.25 MB burst a 128 KiB/s quota allows
    producer = KafkaProducer(bootstrap_servers=boot, client_id="py-producer", linger_ms=5)
    started = time.monotonic()
    for _ in range(count):
        producer.send("quota-py", value)
    producer.flush(120)
    producer.close()
    produce_s = time.monotonic() - started

    consumer = KafkaConsumer(
        "quota-py",
        bootstrap_servers=boot,
        client_id="py-consumer",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
    )
    started, got = time.monotonic(), 0
    while got < count and time.monotonic() - started < 120:
        got += sum(len(records) for records in consumer.poll(500).values())
    consumer.close()
    kafka_python_s = time.monotonic() - started
    assert got == count

    async def aio() -> int:
        aio_consumer = AIOKafkaConsumer(
            "quota-py",
            bootstrap_servers=boot,
            client_id="aio-consumer",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await aio_consumer.start()
        n, deadline = 0, time.monotonic() + 120
        try:
            while n < count and time.monotonic() < deadline:
                batches = await aio_consumer.getmany(timeout_ms=500)
                n += sum(len(records) for records in batches.values())
        finally:
            await aio_consumer.stop()
        return n

    started = time.monotonic()
    assert asyncio.run(aio()) == count
    aiokafka_s = time.monotonic() - started
    print(
        f"2 MB at 128 KiB/s: kafka-python produce {produce_s:.1f} s, consume {kafka_python_s:.1f} s; "
        f"aiokafka consume {aiokafka_s:.1f} s"
    )
    # Beyond the burst the rest waits for the quota: seconds, not milliseconds.
    assert produce_s > 2 and kafka_python_s > 2 and aiokafka_s > 2


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=2)
def test_a_quota_altered_through_one_broker_applies_on_every_broker(kafkapy_cluster: KafkapyCluster) -> None:
    """AlterClientQuotas on broker 0 writes ZooKeeper and /config/changes: broker 1 throttles too."""
    from kafkapy.client.admin import AdminClient as KafkapyAdmin
    from kafkapy.client.client_quotas import alter_client_quotas
    from kafkapy.client.connection import BrokerConnection

    admin = KafkapyAdmin(kafkapy_cluster.broker(0).bootstrap)
    try:
        alter_client_quotas(admin, {"client-id": "everywhere"}, {"request_percentage": 0.01})
    finally:
        admin.close()
    for broker_id in (0, 1):
        conn = BrokerConnection("127.0.0.1", kafkapy_cluster.broker(broker_id).port, client_id="everywhere")
        try:
            assert wait_until(lambda c=conn: _throttled_soon(c, 9), f"broker {broker_id} to throttle") > 0  # type: ignore[misc]
        finally:
            conn.close()


if LONG:
    test_producer_byte_rate_holds_a_producer_and_is_reported = pytest.mark.slow(
        test_producer_byte_rate_holds_a_producer_and_is_reported
    )
    test_consumer_byte_rate_holds_a_consumer = pytest.mark.slow(test_consumer_byte_rate_holds_a_consumer)
