"""A tool's `--command-config` properties as a ClientSecurity, the way Kafka's clients read them.

Kafka's admin tools take a client property file: `security.protocol`, `sasl.mechanism` (PLAIN,
SCRAM-SHA-256/512; GSSAPI is not supported by kafkapy), `sasl.jaas.config` with `username` and
`password`, and the `ssl.*` trust store keys (PEM or PKCS12, as the broker reads them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kafkapy.client.sasl_client import PLAINTEXT, ClientSecurity

if TYPE_CHECKING:
    from kafkapy.client.admin import Connection

PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})


class ClientConfigError(ValueError):
    """A client property that cannot be used; the message names it."""


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    from kafkapy.common.jaas import JaasConfigError, single_module
    from kafkapy.server.security.listener_security import ListenerSettings
    from kafkapy.server.security.ssl_context import client_context

    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ClientConfigError(f"Invalid value {protocol} for configuration security.protocol")
    if protocol == "PLAINTEXT":
        return PLAINTEXT
    # Kafka's clients verify the broker's host name unless the algorithm is set empty.
    settings = ListenerSettings("CLIENT", {"ssl.endpoint.identification.algorithm": "https", **props}, {})
    context = client_context(settings) if protocol in ("SSL", "SASL_SSL") else None
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, context)
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise ClientConfigError(
            f"Unsupported SASL mechanism {mechanism} (kafkapy supports {', '.join(sorted(MECHANISMS))})"
        )
    text = props.get("sasl.jaas.config")
    if not text:
        raise ClientConfigError("sasl.jaas.config is required for SASL (username and password)")
    try:
        options = single_module(text, "sasl.jaas.config").options
    except JaasConfigError as e:
        raise ClientConfigError(str(e)) from e
    if "username" not in options or "password" not in options:
        raise ClientConfigError("sasl.jaas.config needs username and password")
    token_auth = str(options.get("tokenauth", "false")).lower() == "true"
    return ClientSecurity(protocol, context, mechanism, options["username"], options["password"], token_auth)


def connector(security: ClientSecurity, client_id: str) -> Callable[[str, int, float], Connection]:
    """An AdminClient connector whose connections authenticate with `security`."""
    from kafkapy.client.connection import BrokerConnection

    def connect(host: str, port: int, timeout_s: float) -> Connection:
        return BrokerConnection(host, port, client_id, timeout_s, security=security)

    return connect
