"""TLS contexts from Kafka's ssl.* keys: PEM files, KIP-651 inline PEM, listener prefixes, and
PKCS12 key and trust stores (read with `cryptography`), and the stores kafkapy refuses with a
reason (JKS, a PKCS12 store with the wrong password)."""

from __future__ import annotations

import ssl
import sys
import tempfile
from pathlib import Path

import pytest

from kafkapy.common.config_def import ConfigException
from kafkapy.server.config import KafkaConfig
from kafkapy.server.security.listener_security import ListenerSettings
from kafkapy.server.security.ssl_context import client_context, server_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from security_pki import Pki, make_pkcs12, make_pki  # noqa: E402


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _settings(listener: str = "SSL", **props: str) -> ListenerSettings:
    config = KafkaConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
            **props,
        }
    )
    return ListenerSettings.of(config, listener)


def test_inline_pem_key_store_and_trust_store(pki: Pki) -> None:
    ctx = server_context(
        _settings(
            **{
                "ssl.keystore.type": "PEM",
                "ssl.keystore.key": pki.server_key.read_text(),
                "ssl.keystore.certificate.chain": pki.server_cert.read_text(),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.certificates": pki.ca.read_text(),
                "ssl.client.auth": "requested",
                "ssl.enabled.protocols": "TLSv1.3",
            }
        )
    )
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3 == ctx.maximum_version
    assert ctx.cert_store_stats()["x509_ca"] == 1


def test_listener_prefix_wins_over_the_top_level_key(pki: Pki) -> None:
    settings = _settings(
        **{
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/nonexistent.pem",
            "listener.name.ssl.ssl.keystore.location": str(pki.server_keystore),
            "listener.name.ssl.ssl.client.auth": "none",
        }
    )
    assert server_context(settings).verify_mode == ssl.CERT_NONE


def test_client_context_checks_host_names_unless_told_not_to(pki: Pki) -> None:
    trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    assert client_context(_settings(**trust)).check_hostname
    assert not client_context(
        _settings(**trust, **{"ssl.endpoint.identification.algorithm": ""})
    ).check_hostname


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.location": "/x.jks"}, "JKS key stores are a Java format"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/x.p12"}, "Cannot load"),
        (
            {"ssl.keystore.type": "JKS", "ssl.keystore.location": "/x.jks"},
            "set ssl.keystore.type=PEM .* or PKCS12",
        ),
        (
            {"ssl.keystore.type": "BCFKS", "ssl.keystore.location": "/x"},
            "Unsupported store type; use PEM or PKCS12",
        ),
        ({}, "has no key store"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "x"}, "must be given together"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/missing.pem"}, "Cannot load"),
    ],
)
def test_refused_key_stores_say_why(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException, match=message):
        server_context(_settings(**props))


def test_required_client_auth_needs_a_trust_store(pki: Pki) -> None:
    with pytest.raises(ConfigException, match="needs a trust store"):
        server_context(
            _settings(
                **{
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(pki.server_keystore),
                    "ssl.client.auth": "required",
                }
            )
        )


def test_pkcs12_key_store_and_trust_store(pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stores = make_pkcs12(pki, tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    props = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(stores.keystore),
        "ssl.keystore.password": stores.password,
        "ssl.key.password": stores.password,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(stores.truststore),
        "ssl.truststore.password": stores.password,
        "ssl.client.auth": "required",
    }
    server = server_context(_settings(**props))
    assert server.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in server.get_ca_certs()] == [((("commonName", "ca"),),)]
    client = client_context(_settings(**props))
    # A TLS handshake in memory: the client trusts the PKCS12 trust store's CA, the server
    # presents the PKCS12 key store's certificate and checks the client's (the same one here).
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for obj in (c, s):
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
    assert c.getpeercert()["subject"] == ((("commonName", "localhost"),),)
    assert s.getpeercert()["subject"] == ((("commonName", "localhost"),),)
    assert not list((tmp_path / "tmp").iterdir())  # the temporary PEM is gone


def test_pkcs12_wrong_password_and_inline_keys_are_refused(pki: Pki, tmp_path: Path) -> None:
    stores = make_pkcs12(pki, tmp_path)
    base = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores.keystore)}
    with pytest.raises(ConfigException, match="wrong password"):
        server_context(_settings(**base, **{"ssl.keystore.password": "nope"}))
    with pytest.raises(ConfigException, match="inline keys are PEM only"):
        server_context(_settings(**{"ssl.keystore.type": "PKCS12", "ssl.keystore.key": "x"}))
    with pytest.raises(ConfigException, match="wrong password"):
        server_context(_settings(**base, **{
            "ssl.keystore.password": stores.password, "ssl.client.auth": "required",
            "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(stores.truststore),
            "ssl.truststore.password": "nope",
        }))  # fmt: skip
