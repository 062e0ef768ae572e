"""TLS listeners on a real broker: librdkafka and kafka-python produce and consume over SSL with
server authentication, then with mutual TLS (ssl.client.auth=required). Invariants: a client
without a certificate, with an untrusted one, or speaking plaintext to the TLS port gets
nothing, and the broker keeps serving the others."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kafkapy.testing import KafkapyCluster, free_port

# tests/ is not a package: put it on the path to reach the test-only certificate helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from security_pki import Pki, make_pki  # noqa: E402


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _tls_cluster(base: Path, pki: Pki, client_auth: str) -> Iterator[tuple[KafkapyCluster, str]]:
    ports: dict[int, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        ports[broker_id] = free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ports[broker_id]}",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
            "ssl.client.auth": client_auth,
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT",
        }

    cluster = KafkapyCluster(base, 1, {"auto.create.topics.enable": "true"}, overrides)
    try:
        cluster.start()
        yield cluster, f"127.0.0.1:{ports[0]}"
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def server_auth(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[tuple[KafkapyCluster, str]]:
    yield from _tls_cluster(tmp_path_factory.mktemp("tls"), pki, "none")


@pytest.fixture(scope="module")
def mutual(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[tuple[KafkapyCluster, str]]:
    yield from _tls_cluster(tmp_path_factory.mktemp("mtls"), pki, "required")


def _rdkafka_roundtrip(bootstrap: str, conf: dict[str, str], n: int = 20) -> list[bytes]:
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    common = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", **conf}
    producer = Producer({**common, "acks": "all", "message.timeout.ms": 30000})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(60) == 0
    consumer = Consumer({**common, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
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


def _refused(bootstrap: str, conf: dict[str, str]) -> bool:
    """The client reports a connection error (librdkafka's error_cb) and delivers nothing."""
    errors: list[str] = []
    delivered: list[object] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "message.timeout.ms": 20000,
            "error_cb": lambda e: errors.append(str(e)),
            **conf,
        }
    )
    producer.produce("refused", b"x", on_delivery=lambda err, msg: delivered.append(err is None))
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    # After the first error, a few more seconds of retries must not get the message through.
    confirm = time.monotonic() + 3
    while time.monotonic() < confirm:
        producer.poll(0.2)
    refused = bool(errors) and True not in delivered
    producer.purge()
    producer.flush(5)
    return refused


@pytest.mark.timeout(240)
def test_ssl_server_auth_librdkafka_and_kafka_python(
    server_auth: tuple[KafkapyCluster, str], pki: Pki
) -> None:
    cluster, bootstrap = server_auth
    got = _rdkafka_roundtrip(bootstrap, {"ssl.ca.location": str(pki.ca)})
    assert got == [f"m{i}".encode() for i in range(20)]

    from kafka import KafkaConsumer, KafkaProducer

    topic = f"tls-kp-{uuid.uuid4().hex[:8]}"
    tls = {"security_protocol": "SSL", "ssl_cafile": str(pki.ca), "ssl_check_hostname": True}
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **tls)
    for i in range(10):
        producer.send(topic, f"k{i}".encode())
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=20000, **tls)  # fmt: skip
    values = [m.value for _, m in zip(range(10), consumer, strict=False)]
    consumer.close()
    assert values == [f"k{i}".encode() for i in range(10)]

    # A plaintext client on the TLS port and a client that does not trust the broker's CA fail...
    assert _refused(bootstrap, {"security.protocol": "PLAINTEXT"})
    assert _refused(bootstrap, {"security.protocol": "SSL", "ssl.ca.location": str(pki.rogue_cert)})
    # ...and the broker still serves everyone else.
    assert _rdkafka_roundtrip(bootstrap, {"ssl.ca.location": str(pki.ca)}, 5) == [
        f"m{i}".encode() for i in range(5)
    ]
    assert "Failed authentication with /127.0.0.1 (SSL handshake failed" in cluster.broker(0).server_log()


@pytest.mark.timeout(240)
def test_mutual_tls_requires_a_trusted_client_certificate(
    mutual: tuple[KafkapyCluster, str], pki: Pki
) -> None:
    cluster, bootstrap = mutual
    with_cert = {
        "ssl.ca.location": str(pki.ca),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }
    assert _rdkafka_roundtrip(bootstrap, with_cert) == [f"m{i}".encode() for i in range(20)]
    # No certificate, or one from a CA the broker does not trust: refused.
    assert _refused(bootstrap, {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)})
    rogue = {"ssl.certificate.location": str(pki.rogue_cert), "ssl.key.location": str(pki.rogue_key)}
    assert _refused(bootstrap, {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca), **rogue})
    assert _rdkafka_roundtrip(bootstrap, with_cert, 5) == [f"m{i}".encode() for i in range(5)]
