"""User quotas on authenticated principals (KIP-55) over SASL_PLAINTEXT, with confluent-kafka.

Invariants: a producer_byte_rate on user alice throttles alice's connections and not bob's with
the very same client id (bob has no quota); the quota shares /config/users/alice with alice's
SCRAM credential, which keeps working; SCRAM credentials set with kafkapy-configs through
--zookeeper and --bootstrap-server (AlterUserScramCredentials) authenticate.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster, free_port

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
)
SASL_PORTS: dict[int, int] = {}


def _overrides(broker_id: int, port: int) -> dict[str, str]:
    SASL_PORTS[broker_id] = free_port()
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{SASL_PORTS[broker_id]}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }


def configs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.configs", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def _producer(user: str, password: str, mechanism: str, throttles: list[float]) -> Producer:
    return Producer({
        "bootstrap.servers": f"127.0.0.1:{SASL_PORTS[0]}", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
        "client.id": "shared-app", "linger.ms": 5, "batch.size": 65536, "queue.buffering.max.kbytes": 2048,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip


def _send_for(producer: Producer, seconds: float) -> int:
    """Bytes acknowledged within `seconds` of producing as fast as the local queue allows."""
    acked: list[int] = []
    deadline = time.monotonic() + seconds

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None and time.monotonic() < deadline:
            acked.append(len(msg.value()))

    while time.monotonic() < deadline:
        try:
            producer.produce("users-q", b"z" * 4096, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge(in_queue=True)
    producer.flush(15)
    return sum(acked)


@pytest.fixture
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, KazooClient]]:
    cluster = KafkapyCluster(tmp_path_factory.mktemp("quota-sasl"), 1, {}, _overrides)
    try:
        cluster.start()
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        zk.start(timeout=15)
        try:
            yield cluster, zk
        finally:
            zk.stop()
            zk.close()
    finally:
        cluster.stop()


@pytest.mark.timeout(240)
def test_a_user_quota_throttles_that_principal_only_and_keeps_its_scram_credential(
    sasl_cluster: tuple[KafkapyCluster, KazooClient],
) -> None:
    kafkapy_cluster, zk = sasl_cluster
    boot = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("users-q", 1, 1)])["users-q"].result(60)
    # SCRAM credentials through kafkapy-configs, both paths: alice's written to ZooKeeper by the
    # tool, bob's salted by the tool and sent with AlterUserScramCredentials.
    assert configs(
        "--zookeeper",
        kafkapy_cluster.zookeeper_connect,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
    ).stdout.splitlines() == ["Completed updating config for entity: user-principal 'alice'."]
    assert configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "bob",
        "--add-config",
        "SCRAM-SHA-512=[password=bob-secret]",
    ).stdout.splitlines() == ["Completed updating config for user bob."]
    mixed = configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "bob",
        "--add-config",
        "SCRAM-SHA-256=[password=x],producer_byte_rate=1",
    )
    assert (
        mixed.returncode == 1
        and "Cannot alter both quota and SCRAM credential configs simultaneously for "
        "'users' using --bootstrap-server."
        in mixed.stderr
    )
    assert configs(
        "--bootstrap-server",
        boot,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=262144",
    ).stdout.splitlines() == ["Completed updating config for user alice."]
    config = json.loads(zk.get("/config/users/alice")[0])["config"]
    assert config["producer_byte_rate"] == "262144" and "iterations=8192" in config["SCRAM-SHA-256"]
    assert configs(
        "--bootstrap-server", boot, "--describe", "--entity-type", "users", "--entity-name", "alice"
    ).stdout.splitlines() == [
        "Quota configs for user-principal 'alice' are producer_byte_rate=262144.0",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
    ]
    time.sleep(1)  # the broker applies the change notification

    alice_throttles: list[float] = []
    alice = _producer("alice", "alice-secret", "PLAIN", alice_throttles)
    alice_bytes = _send_for(alice, 6)
    bob_throttles: list[float] = []
    bob = _producer("bob", "bob-secret", "SCRAM-SHA-512", bob_throttles)
    bob_bytes = _send_for(bob, 6)
    # SCRAM login of the same user, whose znode now also holds the quota: authenticated, throttled too.
    scram_throttles: list[float] = []
    scram = _producer("alice", "alice-secret", "SCRAM-SHA-256", scram_throttles)
    scram_bytes = _send_for(scram, 4)
    print(
        f"alice {alice_bytes / 6 / 1024:.0f} KiB/s ({len(alice_throttles)} throttles), "
        f"bob {bob_bytes / 6 / 1024:.0f} KiB/s ({len(bob_throttles)} throttles), "
        f"alice over SCRAM {scram_bytes / 4 / 1024:.0f} KiB/s ({len(scram_throttles)} throttles)"
    )
    assert alice_throttles and max(alice_throttles) > 0
    assert not any(bob_throttles)
    assert scram_bytes > 0 and scram_throttles and max(scram_throttles) > 0
    # alice's quota allows a burst of 10 windows x 256 KiB, then 256 KiB/s: bob is not held.
    assert alice_bytes <= (10 + 6 + 1) * 262144
    assert bob_bytes > 2 * alice_bytes
