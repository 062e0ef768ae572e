"""Throw-away certificates for the TLS tests, made with the openssl CLI into a temporary directory.

A CA, a server certificate for 127.0.0.1/localhost and client certificates signed by that CA,
plus one client certificate from a CA the broker does not trust. Nothing is committed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Pki:
    ca: Path  # CA certificate (PEM): the trust store
    server_keystore: Path  # key + chain in one PEM file (ssl.keystore.type=PEM)
    server_cert: Path
    server_key: Path
    client_cert: Path  # subject /C=US/O=kafkapy/CN=alice
    client_key: Path
    rogue_cert: Path  # signed by a CA nobody trusts
    rogue_key: Path


def _make_ca(d: Path, name: str) -> tuple[Path, Path]:
    key, cert = d / f"{name}.key", d / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", str(key), "-out", str(cert))  # fmt: skip
    return key, cert


def _make_leaf(d: Path, name: str, subject: str, ca: tuple[Path, Path], san: str | None) -> tuple[Path, Path]:
    key, csr, cert = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.pem"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(key), "-out", str(csr))
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]), "-CAcreateserial",
             "-days", "2", "-out", str(cert), "-extfile", str(ext))  # fmt: skip
    return key, cert


def make_pki(d: Path) -> Pki:
    d.mkdir(parents=True, exist_ok=True)
    ca = _make_ca(d, "ca")
    server_key, server_cert = _make_leaf(d, "server", "/CN=localhost", ca, "DNS:localhost,IP:127.0.0.1")
    keystore = d / "server.keystore.pem"
    keystore.write_text(server_key.read_text() + server_cert.read_text())
    client_key, client_cert = _make_leaf(d, "client", "/C=US/O=kafkapy/CN=alice", ca, None)
    rogue_ca = _make_ca(d, "rogue-ca")
    rogue_key, rogue_cert = _make_leaf(d, "rogue", "/CN=mallory", rogue_ca, None)
    return Pki(ca[1], keystore, server_cert, server_key, client_cert, client_key, rogue_cert, rogue_key)


@dataclass(frozen=True)
class Pkcs12Stores:
    keystore: Path  # the server's key and certificate, the CA as its chain
    truststore: Path  # the CA certificate alone (what keytool -importcert makes)
    password: str


def make_pkcs12(pki: Pki, d: Path, password: str = "store-secret") -> Pkcs12Stores:
    """The same PKI as PKCS12 files (ssl.keystore.type=PKCS12), written with `cryptography`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    cert = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    encryption = serialization.BestAvailableEncryption(password.encode())
    keystore, truststore = d / "server.keystore.p12", d / "truststore.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(b"server", key, cert, [ca], encryption))  # type: ignore[arg-type]
    truststore.write_bytes(pkcs12.serialize_key_and_certificates(b"ca", None, None, [ca], encryption))
    return Pkcs12Stores(keystore, truststore, password)
