"""Python `ssl` contexts from Kafka's `ssl.*` keys, for the broker's listeners and its own clients.

Key stores (KIP-651): `ssl.keystore.type=PEM` with `ssl.keystore.location` naming one PEM file
holding the private key and the certificate chain, or the same inline in
`ssl.keystore.key` + `ssl.keystore.certificate.chain`; an encrypted key's password is
`ssl.key.password`. Trust stores: `ssl.truststore.type=PEM` with `ssl.truststore.location` or
inline `ssl.truststore.certificates`. `ssl.keystore.type=PKCS12` / `ssl.truststore.type=PKCS12`
read `ssl.keystore.location` (opened with `ssl.keystore.password`; the key inside with
`ssl.key.password` when that differs) and `ssl.truststore.location` (`ssl.truststore.password`)
with the `cryptography` package; Python's ssl module loads PEM only, so the key and its chain go
through a private temporary file (mode 0600, the key encrypted with a one-time password, removed
at once) and the trusted certificates are handed over in memory. JKS is a Java format and is
always refused (convert it with `keytool -importkeystore -deststoretype PKCS12`).
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from typing import Any

from kafkapy.common.config_def import ConfigException
from kafkapy.server.security.listener_security import ListenerSettings

_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def server_context(settings: ListenerSettings) -> ssl.SSLContext:
    """The context an SSL or SASL_SSL listener accepts with: its key store is required."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _common(ctx, settings)
    if not _load_keystore(ctx, settings):
        raise ConfigException(
            settings.key_name("ssl.keystore.location"),
            None,
            f"Listener {settings.listener_name} uses TLS but has no key store"
            " (ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key)",
        )
    client_auth = (settings.string("ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigException(
            settings.key_name("ssl.client.auth"), client_auth, "Not one of required, requested, none"
        )
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    if ctx.verify_mode != ssl.CERT_NONE:
        _load_truststore(ctx, settings, required=client_auth == "required")
    return ctx


def client_context(settings: ListenerSettings) -> ssl.SSLContext:
    """The context the broker's own clients (controller, replica fetchers) connect with: the
    server's certificate is verified against the trust store (the system's CAs without one),
    its host name too unless `ssl.endpoint.identification.algorithm` is empty."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _common(ctx, settings)
    ctx.check_hostname = (settings.string("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    if not _load_truststore(ctx, settings, required=False):
        ctx.load_default_certs()
    _load_keystore(ctx, settings)  # a client certificate, for listeners with ssl.client.auth
    return ctx


def _common(ctx: ssl.SSLContext, settings: ListenerSettings) -> None:
    protocols = settings.list("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]
    unknown = [p for p in protocols if p not in _VERSIONS]
    if unknown:
        raise ConfigException(
            settings.key_name("ssl.enabled.protocols"), ",".join(protocols), f"Unknown protocols {unknown}"
        )
    versions = sorted(_VERSIONS[p] for p in protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = settings.list("ssl.cipher.suites")
    if ciphers:
        try:
            # OpenSSL's names (ECDHE-RSA-AES128-GCM-SHA256); TLS 1.3 suites are not settable here.
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError as e:
            raise ConfigException(settings.key_name("ssl.cipher.suites"), ",".join(ciphers), str(e)) from e


def _store_type(settings: ListenerSettings, key: str) -> str:
    kind = (settings.string(key) or "JKS").upper()
    if kind not in ("JKS", "PEM", "PKCS12"):
        raise ConfigException(settings.key_name(key), kind, "Unsupported store type; use PEM or PKCS12")
    return kind


def _pkcs12(
    settings: ListenerSettings, location_key: str, passwords: list[str | None]
) -> tuple[Any, Any, list[Any]]:
    """(key, certificate, other certificates) of a PKCS12 file, trying each password in turn."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    location = settings.string(location_key)
    assert location is not None
    try:
        with open(location, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigException(settings.key_name(location_key), location, f"Cannot load: {e}") from e
    error: Exception | None = None
    for password in dict.fromkeys(passwords):  # distinct, in order
        try:
            key, cert, others = pkcs12.load_key_and_certificates(
                data, password.encode() if password else None
            )
            return key, cert, list(others)
        except (ValueError, TypeError) as e:
            error = e
    raise ConfigException(
        settings.key_name(location_key), location, f"Cannot load the PKCS12 store (wrong password?): {error}"
    )


def _load_pkcs12_keystore(ctx: ssl.SSLContext, settings: ListenerSettings) -> None:
    from cryptography.hazmat.primitives import serialization

    key, cert, chain = _pkcs12(
        settings,
        "ssl.keystore.location",
        [settings.string("ssl.keystore.password"), settings.string("ssl.key.password")],
    )
    if key is None or cert is None:
        raise ConfigException(
            settings.key_name("ssl.keystore.location"), settings.string("ssl.keystore.location"),
            "The PKCS12 key store holds no private key with its certificate",
        )  # fmt: skip
    one_time = secrets.token_urlsafe(24)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *chain])
    # The ssl module only loads key material from files: a private (0600) temporary file.
    fd, path = tempfile.mkstemp(prefix="kafkapy-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=one_time)
    except ssl.SSLError as e:
        raise ConfigException(
            settings.key_name("ssl.keystore.location"),
            settings.string("ssl.keystore.location"),
            f"Cannot load: {e}",
        ) from e
    finally:
        os.unlink(path)


def _pkcs12_trusted_pem(settings: ListenerSettings) -> str:
    from cryptography.hazmat.primitives import serialization

    _, cert, others = _pkcs12(
        settings, "ssl.truststore.location", [settings.string("ssl.truststore.password"), None]
    )
    certs = ([cert] if cert is not None else []) + others
    if not certs:
        raise ConfigException(
            settings.key_name("ssl.truststore.location"), settings.string("ssl.truststore.location"),
            "The PKCS12 trust store holds no certificate",
        )  # fmt: skip
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _load_keystore(ctx: ssl.SSLContext, settings: ListenerSettings) -> bool:
    location = settings.string("ssl.keystore.location")
    chain = settings.string("ssl.keystore.certificate.chain")
    key = settings.string("ssl.keystore.key")
    if not (location or chain or key):
        return False
    kind = _store_type(settings, "ssl.keystore.type")
    if kind == "JKS":
        raise ConfigException(
            settings.key_name("ssl.keystore.type"),
            "JKS",
            "JKS key stores are a Java format; set ssl.keystore.type=PEM (KIP-651) or PKCS12",
        )
    if kind == "PKCS12":
        if not location or chain or key:
            raise ConfigException(
                settings.key_name("ssl.keystore.type"), kind,
                "A PKCS12 key store is a file (ssl.keystore.location); inline keys are PEM only",
            )  # fmt: skip
        _load_pkcs12_keystore(ctx, settings)
        return True
    password = settings.string("ssl.key.password")
    if location:
        if chain or key:
            raise ConfigException(
                settings.key_name("ssl.keystore.location"), location,
                "Give either ssl.keystore.location or the inline ssl.keystore.certificate.chain/key, not both",
            )  # fmt: skip
        try:
            ctx.load_cert_chain(location, password=password)
        except (OSError, ssl.SSLError) as e:
            raise ConfigException(
                settings.key_name("ssl.keystore.location"), location, f"Cannot load: {e}"
            ) from e
        return True
    if not (chain and key):
        raise ConfigException(
            settings.key_name("ssl.keystore.key"), None,
            "ssl.keystore.certificate.chain and ssl.keystore.key must be given together",
        )  # fmt: skip
    # The ssl module only loads key material from files: a private temporary file, removed at once.
    fd, path = tempfile.mkstemp(prefix="kafkapy-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    except ssl.SSLError as e:
        raise ConfigException(settings.key_name("ssl.keystore.key"), "[hidden]", f"Cannot load: {e}") from e
    finally:
        os.unlink(path)
    return True


def _load_truststore(ctx: ssl.SSLContext, settings: ListenerSettings, required: bool) -> bool:
    location = settings.string("ssl.truststore.location")
    inline = settings.string("ssl.truststore.certificates")
    if not (location or inline):
        if required:
            raise ConfigException(
                settings.key_name("ssl.truststore.location"), None,
                "ssl.client.auth=required needs a trust store to check client certificates against",
            )  # fmt: skip
        return False
    kind = _store_type(settings, "ssl.truststore.type")
    if kind == "JKS":
        raise ConfigException(
            settings.key_name("ssl.truststore.type"),
            "JKS",
            "JKS trust stores are a Java format; use PEM or PKCS12",
        )
    try:
        if kind == "PKCS12":
            if not location:
                raise ConfigException(
                    settings.key_name("ssl.truststore.type"), kind,
                    "A PKCS12 trust store is a file (ssl.truststore.location); inline certificates are PEM only",
                )  # fmt: skip
            ctx.load_verify_locations(cadata=_pkcs12_trusted_pem(settings))
        elif location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=inline)
    except (OSError, ssl.SSLError) as e:
        raise ConfigException(
            settings.key_name("ssl.truststore.location"), location or "[inline]", f"Cannot load: {e}"
        ) from e
    return True
