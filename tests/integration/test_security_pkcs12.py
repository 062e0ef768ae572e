"""An SSL listener whose key store and trust store are PKCS12 files (ssl.keystore.type=PKCS12,
ssl.truststore.type=PKCS12, password-protected, written with `cryptography` from the test PKI).
Invariants: librdkafka produces and consumes without a client certificate and with one signed by
the trust store's CA (ssl.client.auth=requested), and a certificate from another CA is refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_security_tls import _rdkafka_roundtrip, _refused

from kafkapy.testing import KafkapyCluster, free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from security_pki import Pki, make_pkcs12, make_pki  # noqa: E402


@pytest.fixture(scope="module")
def pkcs12_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, str, Pki]]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    stores = make_pkcs12(pki, tmp_path_factory.mktemp("p12"))
    ssl_port: dict[str, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        ssl_port["port"] = free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port['port']}",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(stores.keystore),
            "ssl.keystore.password": stores.password,
            "ssl.key.password": stores.password,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(stores.truststore),
            "ssl.truststore.password": stores.password,
            "ssl.client.auth": "requested",
        }

    cluster = KafkapyCluster(
        tmp_path_factory.mktemp("pkcs12"), 1, {"auto.create.topics.enable": "true"}, overrides
    )
    try:
        cluster.start()
        yield cluster, f"127.0.0.1:{ssl_port['port']}", pki
    finally:
        cluster.stop()


@pytest.mark.timeout(240)
def test_pkcs12_stores_serve_librdkafka_with_and_without_client_certificates(
    pkcs12_broker: tuple[KafkapyCluster, str, Pki],
) -> None:
    cluster, bootstrap, pki = pkcs12_broker
    expected = [f"m{i}".encode() for i in range(20)]
    assert _rdkafka_roundtrip(bootstrap, {"ssl.ca.location": str(pki.ca)}) == expected
    with_cert = {
        "ssl.ca.location": str(pki.ca),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }
    assert _rdkafka_roundtrip(bootstrap, with_cert) == expected
    # The PKCS12 trust store is what checks client certificates: another CA's is refused.
    rogue = {"ssl.certificate.location": str(pki.rogue_cert), "ssl.key.location": str(pki.rogue_key)}
    assert _refused(bootstrap, {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca), **rogue})
    assert cluster.broker(0).is_running()
