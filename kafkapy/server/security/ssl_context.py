"""Python `ssl` contexts from Kafka's `ssl.*` keys, for the broker's listeners and its own clients.

Key stores (KIP-651): `ssl.keystore.type=PEM` with `ssl.keystore.location` naming one PEM file
holding the private key and the certificate chain, or the same inline in
`ssl.keystore.key` + `ssl.keystore.certificate.chain`; an encrypted key's password is
`ssl.key.password`. Trust stores: `ssl.truststore.type=PEM` with `ssl.truststore.location` or
inline `ssl.truststore.certificates`. PKCS12 needs the `cryptography` package, which this
installation may lack: then it is refused at start-up with a message saying so; JKS is a Java
format and is always refused (convert it with `keytool -importkeystore` to PKCS12 or PEM).
"""

from __future__ import annotations

import importlib.util
import os
import ssl
import tempfile

from kafkapy.server.config_def import ConfigException
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
    if kind == "JKS":
        return kind
    if kind == "PKCS12":
        # Reading PKCS12 needs the `cryptography` package; until an installation has it (this one
        # did not when this was written) PKCS12 is refused with the conversion to PEM.
        why = (
            "PKCS12 stores are not read by kafkapy yet"
            if importlib.util.find_spec("cryptography") is not None
            else "PKCS12 stores need the 'cryptography' package, which is not installed"
        )
        raise ConfigException(
            settings.key_name(key), kind, f"{why}; use PEM (openssl pkcs12 -in store.p12 -nodes > store.pem)"
        )
    if kind != "PEM":
        raise ConfigException(settings.key_name(key), kind, "Unsupported store type; use PEM")
    return kind


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
            "JKS key stores are a Java format; set ssl.keystore.type=PEM (KIP-651)",
        )
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
    if _store_type(settings, "ssl.truststore.type") == "JKS":
        raise ConfigException(
            settings.key_name("ssl.truststore.type"), "JKS", "JKS trust stores are a Java format; use PEM"
        )
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=inline)
    except (OSError, ssl.SSLError) as e:
        raise ConfigException(
            settings.key_name("ssl.truststore.location"), location or "[inline]", f"Cannot load: {e}"
        ) from e
    return True
