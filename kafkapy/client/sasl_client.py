"""The client side of TLS and SASL for kafkapy's blocking BrokerConnection.

Used by the broker's own clients on a secured inter-broker listener (the controller's channel to
each broker, the replica fetchers): SaslHandshake v1, then the mechanism's tokens in
SaslAuthenticate requests (KIP-152). PLAIN sends one token; SCRAM two (RFC 5802), and the
server's final signature is checked so a broker that does not know the password is not trusted.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import SaslAuthenticationException, for_code
from kafkapy.server.security.scram import ScramClient, ScramError


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How to connect: `protocol` is the listener's security protocol."""

    protocol: str
    ssl_context: ssl.SSLContext | None
    sasl_mechanism: str | None = None
    username: str = ""
    password: str = ""
    # SCRAM with a delegation token (the JAAS option tokenauth=true): username is the token id,
    # password its base64 HMAC.
    token_auth: bool = False


PLAINTEXT = ClientSecurity("PLAINTEXT", None)

# (api_key, version, body) -> decoded response, on the connection being authenticated.
Send = Callable[[int, int, dict[str, Any]], Any]


def sasl_authenticate(send: Send, security: ClientSecurity, where: str) -> None:
    """Raises SaslAuthenticationException (or the broker's error) when refused."""
    mechanism = security.sasl_mechanism
    assert mechanism is not None
    handshake = send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if handshake.error_code:
        raise for_code(
            handshake.error_code,
            f"{where}: SASL mechanism {mechanism} refused (enabled: {handshake.mechanisms})",
        )

    def token(data: bytes) -> bytes:
        resp = send(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": data})
        if resp.error_code:
            raise for_code(resp.error_code, f"{where}: {resp.error_message}")
        return bytes(resp.auth_bytes)

    if mechanism == "PLAIN":
        token(b"\x00" + security.username.encode() + b"\x00" + security.password.encode())
        return
    extensions = {"tokenauth": "true"} if security.token_auth else None
    scram = ScramClient(mechanism, security.username, security.password, extensions=extensions)
    try:
        server_first = token(scram.first())
        scram.verify(token(scram.final(server_first)))
    except ScramError as e:
        raise SaslAuthenticationException(f"{where}: {e}") from e
