"""What each listener's connections go through, built once at start-up (Kafka's ChannelBuilders).

`listener_security` turns a listener's protocol and settings into a `ListenerSecurity` the
network layer reads (a TLS context, the principal mapping, the SASL configuration);
`inter_broker_client_security` gives the broker's own clients (the controller's channel, the
replica fetchers) what to connect to the inter-broker listener with.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from kafkapy.client.sasl_client import ClientSecurity
from kafkapy.common.config_def import ConfigException
from kafkapy.common.jaas import JaasConfigError, LoginModule, single_module
from kafkapy.server.security.listener_security import ListenerSettings
from kafkapy.server.security.principal import SslPrincipalMapper
from kafkapy.server.security.sasl_server import CredentialLookup, SaslListenerConfig, TokenLookup
from kafkapy.server.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkapy.server.security.ssl_context import client_context, server_context

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
GSSAPI_REFUSAL = "GSSAPI is not supported by kafkapy: enable PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    protocol: str
    ssl_context: ssl.SSLContext | None
    principal_mapper: SslPrincipalMapper
    sasl: SaslListenerConfig | None

    @property
    def uses_tls(self) -> bool:
        return self.ssl_context is not None


def listener_security(
    config: object,
    listener_name: str,
    protocol: str,
    scram_credentials: CredentialLookup | None,
    token_credentials: TokenLookup | None = None,
) -> ListenerSecurity:
    settings = ListenerSettings.of(config, listener_name)
    tls = protocol in ("SSL", "SASL_SSL")
    context = server_context(settings) if tls else None
    mapper = SslPrincipalMapper.from_rules(settings.string("ssl.principal.mapping.rules"))
    sasl = None
    if protocol.startswith("SASL_"):
        sasl = _sasl_listener_config(settings, scram_credentials, token_credentials)
    return ListenerSecurity(protocol, context, mapper, sasl)


def _sasl_listener_config(
    settings: ListenerSettings,
    scram_credentials: CredentialLookup | None,
    token_credentials: TokenLookup | None = None,
) -> SaslListenerConfig:
    mechanisms = [m.upper() for m in settings.list("sasl.enabled.mechanisms")]
    key = settings.key_name("sasl.enabled.mechanisms")
    if not mechanisms:
        raise ConfigException(
            key, "", f"Listener {settings.listener_name} uses SASL but enables no mechanism"
        )
    if "GSSAPI" in mechanisms:
        raise ConfigException(key, ",".join(mechanisms), GSSAPI_REFUSAL)
    unknown = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unknown:
        raise ConfigException(key, ",".join(mechanisms), f"Unsupported SASL mechanisms {unknown}")
    plain_users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        module = _jaas_module(settings, "PLAIN")
        if module is None or module.name != PLAIN_LOGIN_MODULE:
            raise ConfigException(
                f"{settings.prefix}plain.sasl.jaas.config", None,
                f"Listener {settings.listener_name} enables PLAIN: it needs a {PLAIN_LOGIN_MODULE} JAAS line",
            )  # fmt: skip
        plain_users = {k[len("user_") :]: v for k, v in module.options.items() if k.startswith("user_")}
    reauth_ms = settings.integer("connections.max.reauth.ms", 0)
    return SaslListenerConfig(
        tuple(mechanisms), plain_users, scram_credentials, max(reauth_ms, 0), token_credentials
    )


def _jaas_module(settings: ListenerSettings, mechanism: str) -> LoginModule | None:
    text = settings.jaas_config(mechanism)
    if text is None:
        return None
    try:
        return single_module(text, f"listener {settings.listener_name}, {mechanism}")
    except JaasConfigError as e:
        raise ConfigException(
            f"{settings.prefix}{mechanism.lower()}.sasl.jaas.config", "[hidden]", str(e)
        ) from e


def inter_broker_client_security(config: object) -> ClientSecurity:
    """The inter-broker listener's protocol with this broker's client-side settings: its trust
    store and key store, and for SASL `sasl.mechanism.inter.broker.protocol` with the username
    and password of that mechanism's JAAS line on the inter-broker listener."""
    listener: str = config.inter_broker_listener_name  # type: ignore[attr-defined]
    protocol: str = config.inter_broker_security_protocol  # type: ignore[attr-defined]
    settings = ListenerSettings.of(config, listener)
    context = client_context(settings) if protocol in ("SSL", "SASL_SSL") else None
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, context)
    mechanism = (settings.string("sasl.mechanism.inter.broker.protocol") or "GSSAPI").upper()
    if mechanism == "GSSAPI":
        raise ConfigException("sasl.mechanism.inter.broker.protocol", mechanism, GSSAPI_REFUSAL)
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigException("sasl.mechanism.inter.broker.protocol", mechanism, "Unsupported SASL mechanism")
    module = _jaas_module(settings, mechanism)
    options = getattr(module, "options", {})
    if "username" not in options or "password" not in options:
        raise ConfigException(
            f"{settings.prefix}{mechanism.lower()}.sasl.jaas.config", None,
            f"The inter-broker mechanism {mechanism} needs username and password in listener"
            f" {listener}'s JAAS line",
        )  # fmt: skip
    return ClientSecurity(protocol, context, mechanism, options["username"], options["password"])
