"""SASL listeners on a real broker: PLAIN over SASL_PLAINTEXT (JAAS users) and SCRAM-SHA-256/512
over SASL_SSL with the credentials created in ZooKeeper (/config/users/<user>, Kafka's format).
Invariants: the right password produces and consumes with librdkafka and kafka-python, a wrong
password or an unknown user is refused with SASL_AUTHENTICATION_FAILED, and the broker keeps
serving everyone else."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafkapy.server.security.scram import add_scram_credential
from kafkapy.testing import KafkapyCluster, free_port
from kafkapy.zk.admin_zk_client import AdminZkClient
from kafkapy.zk.kafka_zk_client import KafkaZkClient

# tests/ is not a package: put it on the path to reach the test-only certificate helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from security_pki import Pki, make_pki  # noqa: E402

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, str, str, Pki]]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    ports: dict[str, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        ports["sasl_plaintext"], ports["sasl_ssl"] = free_port(), free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{ports['sasl_plaintext']},"
            f"SASL_SSL://127.0.0.1:{ports['sasl_ssl']}",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
            # Sessions expire after 4 s: librdkafka re-authenticates (KIP-368) while consuming.
            "connections.max.reauth.ms": "4000",
        }

    cluster = KafkapyCluster(tmp_path_factory.mktemp("sasl"), 1, {}, overrides)
    try:
        cluster.start()
        zk = KafkaZkClient(cluster.zookeeper_connect, 6000, 10000)
        zk.start()
        try:
            admin = AdminZkClient(zk)
            add_scram_credential(admin, "alice", "SCRAM-SHA-256", "alice-secret", 8192)
            add_scram_credential(admin, "alice", "SCRAM-SHA-512", "alice-secret", 4096)
        finally:
            zk.close()
        yield (
            cluster,
            f"127.0.0.1:{ports['sasl_plaintext']}",
            f"127.0.0.1:{ports['sasl_ssl']}",
            pki,
        )
    finally:
        cluster.stop()


def _roundtrip(conf: dict[str, Any], n: int = 10, linger_s: float = 0.0) -> list[bytes]:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 30000})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(60) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(300):
            if len(got) >= n:
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def _auth_error(conf: dict[str, Any]) -> str:
    """The error librdkafka reports for a client whose credentials are refused ('' if none)."""
    errors: list[str] = []
    producer = Producer(
        {**conf, "message.timeout.ms": 10000, "error_cb": lambda err: errors.append(str(err))}
    )
    producer.produce("refused", b"x")
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(5)
    return " | ".join(errors)


def _plain(bootstrap: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def _scram(bootstrap: str, pki: Pki, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki.ca),
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


@pytest.mark.timeout(180)
def test_plain_over_sasl_plaintext(sasl_cluster: tuple[KafkapyCluster, str, str, Pki]) -> None:
    cluster, plaintext, _, _ = sasl_cluster
    expected = [f"m{i}".encode() for i in range(10)]
    assert _roundtrip(_plain(plaintext, "alice", "alice-secret")) == expected
    error = _auth_error(_plain(plaintext, "alice", "wrong"))
    assert "Authentication failed: Invalid username or password" in error
    assert "Invalid username or password" in _auth_error(_plain(plaintext, "nobody", "x"))

    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    kp = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"}
    topic = f"sasl-kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=plaintext, acks="all", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", **kp)  # fmt: skip
    for i in range(5):
        producer.send(topic, f"k{i}".encode())
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=plaintext, auto_offset_reset="earliest",
                             consumer_timeout_ms=20000, sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", **kp)  # fmt: skip
    assert [m.value for _, m in zip(range(5), consumer, strict=False)] == [f"k{i}".encode() for i in range(5)]
    consumer.close()
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=plaintext, sasl_plain_username="alice", sasl_plain_password="bad",
                      max_block_ms=10000, **kp)  # fmt: skip
    # Still serving the others after the refusals.
    assert _roundtrip(_plain(plaintext, "admin", "admin-secret"), 3) == expected[:3]
    log = cluster.broker(0).server_log()
    assert "Failed authentication with" in log


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_sasl_ssl_with_credentials_in_zookeeper(
    sasl_cluster: tuple[KafkapyCluster, str, str, Pki], mechanism: str
) -> None:
    _, _, secure, pki = sasl_cluster
    expected = [f"m{i}".encode() for i in range(10)]
    assert _roundtrip(_scram(secure, pki, mechanism, "alice", "alice-secret")) == expected
    error = _auth_error(_scram(secure, pki, mechanism, "alice", "wrong"))
    assert f"invalid credentials with SASL mechanism {mechanism}" in error
    assert "invalid credentials" in _auth_error(_scram(secure, pki, mechanism, "nobody", "x"))

    from kafka import KafkaConsumer, KafkaProducer

    kp = {"security_protocol": "SASL_SSL", "ssl_cafile": str(pki.ca), "sasl_mechanism": mechanism,
          "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}  # fmt: skip
    topic = f"scram-kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=secure, acks="all", **kp)
    for i in range(5):
        producer.send(topic, f"k{i}".encode())
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=secure, auto_offset_reset="earliest",
                             consumer_timeout_ms=20000, **kp)  # fmt: skip
    assert [m.value for _, m in zip(range(5), consumer, strict=False)] == [f"k{i}".encode() for i in range(5)]
    consumer.close()


@pytest.mark.timeout(120)
def test_alter_and_describe_user_scram_credentials_then_log_in(
    sasl_cluster: tuple[KafkapyCluster, str, str, Pki],
) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    cluster, _, secure, pki = sasl_cluster
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    upsert = UserScramCredentialUpsertion(
        "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"bob-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    described = admin.describe_user_scram_credentials(["bob"])["bob"].result(30)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    expected = [f"m{i}".encode() for i in range(3)]
    assert _roundtrip(_scram(secure, pki, "SCRAM-SHA-512", "bob", "bob-secret"), 3) == expected


@pytest.mark.timeout(60)
def test_unauthenticated_requests_and_expired_sessions_close_the_connection(
    sasl_cluster: tuple[KafkapyCluster, str, str, Pki],
) -> None:
    import socket

    from kafkapy.client.connection import BrokerConnection, ConnectionClosedError
    from kafkapy.client.sasl_client import ClientSecurity
    from kafkapy.protocol import framing, messages

    _, plaintext, _, _ = sasl_cluster
    host, port = plaintext.split(":")
    # A Metadata request before any SASL handshake: closed without an answer.
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        payload = messages.encode_request(3, 1, {"topics": []})
        sock.sendall(framing.encode_request_frame(3, 1, 1, "probe", payload))
        assert sock.recv(1024) == b""
    # Authenticated, then silent past connections.max.reauth.ms (4 s) without re-authenticating.
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", "alice-secret")
    with BrokerConnection(host, int(port), timeout=10, security=security) as conn:
        assert conn.send(3, 1, {"topics": []}) is not None
        time.sleep(5)
        with pytest.raises(ConnectionClosedError):
            conn.send(3, 1, {"topics": []})


@pytest.mark.timeout(120)
def test_aiokafka_scram_sha_512_over_sasl_ssl(sasl_cluster: tuple[KafkapyCluster, str, str, Pki]) -> None:
    import asyncio
    import ssl

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError as AioKafkaError

    cluster, _, secure, pki = sasl_cluster
    kw: dict[str, Any] = {
        "bootstrap_servers": secure,
        "security_protocol": "SASL_SSL",
        "ssl_context": ssl.create_default_context(cafile=str(pki.ca)),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    topic = f"aio-{uuid.uuid4().hex[:8]}"

    async def roundtrip() -> list[bytes]:
        producer = AIOKafkaProducer(acks="all", **kw)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **kw)
        await consumer.start()
        got: list[bytes] = []
        try:
            for _ in range(60):
                if len(got) >= 5:
                    break
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    got += [m.value for m in messages]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(roundtrip()) == [f"a{i}".encode() for i in range(5)]
    refusals_before = (
        cluster.broker(0).server_log().count("invalid credentials with SASL mechanism SCRAM-SHA-512")
    )

    async def wrong_password() -> None:
        producer = AIOKafkaProducer(**{**kw, "sasl_plain_password": "wrong"})
        try:
            await asyncio.wait_for(producer.start(), 30)
        finally:
            await producer.stop()

    with pytest.raises(AioKafkaError):
        asyncio.run(wrong_password())
    log = cluster.broker(0).server_log()
    assert log.count("invalid credentials with SASL mechanism SCRAM-SHA-512") > refusals_before


@pytest.mark.timeout(60)
def test_librdkafka_reauthenticates_before_the_session_expires(
    sasl_cluster: tuple[KafkapyCluster, str, str, Pki],
) -> None:
    """connections.max.reauth.ms=4000: a producer sending for 10 s on one connection must
    re-authenticate (KIP-368) twice or more; a session that expired instead would make the
    broker close the connection and log it."""
    cluster, plaintext, _, _ = sasl_cluster
    before = cluster.broker(0).server_log().count("without re-authentication")
    delivered: list[bool] = []
    producer = Producer({**_plain(plaintext, "alice", "alice-secret"), "acks": "all", "linger.ms": 0})
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        producer.produce(topic, b"x", on_delivery=lambda err, msg: delivered.append(err is None))
        producer.poll(0.5)
    assert producer.flush(30) == 0
    assert delivered and all(delivered)
    assert cluster.broker(0).server_log().count("without re-authentication") == before
