"""One connection's SASL authentication on the server side (Kafka's SaslServerAuthenticator).

`SaslServerAuthenticator.receive(frame)` takes each frame a client sends before it is
authenticated (and during re-authentication) and answers with a `SaslOutcome`: the framed
response, whether the connection closes after it, or PASS for ApiVersions, which KafkaApis answers.
A SCRAM exchange looks the user's credential up in ZooKeeper, off the loop, so `receive` may
return a coroutine. Mechanisms: PLAIN (users from the JAAS line's `user_<name>="<password>"`
options, as Kafka's PlainServerCallbackHandler) and SCRAM-SHA-256/512.
"""

from __future__ import annotations

import hmac
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey, is_supported
from kafkapy.protocol.errors import (
    IllegalSaslStateException,
    ProtocolError,
    SaslAuthenticationException,
    UnsupportedSaslMechanismException,
)
from kafkapy.server.security.principal import USER_TYPE, KafkaPrincipal
from kafkapy.server.security.sasl_state import SaslEvent, SaslState, SaslStateMachine
from kafkapy.server.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkapy.server.security.scram import ScramCredential, ScramError, ScramServer, parse_client_first

log = logging.getLogger("kafkapy.security.SaslServerAuthenticator")

# (mechanism, user name) -> the user's credential, or None for an unknown user.
CredentialLookup = Callable[[str, str], Awaitable[ScramCredential | None]]
# (mechanism, token id) -> the delegation token's SCRAM credential, owner and expiry timestamp
# (ms), or None (unknown or expired token, tokens disabled); from the broker's token cache.
TokenLookup = Callable[[str, str], tuple[ScramCredential, KafkaPrincipal, int] | None]

_SIZE = struct.Struct(">i")
PLAIN_FAILURE = "Authentication failed: Invalid username or password"


def scram_failure(mechanism: str) -> str:
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


@dataclass(frozen=True, slots=True)
class SaslListenerConfig:
    """What a SASL listener accepts: built once at start-up (sasl_config.py)."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str]
    scram_credentials: CredentialLookup | None
    reauth_ms: int  # connections.max.reauth.ms; 0: sessions do not expire
    token_credentials: TokenLookup | None = None  # delegation tokens (KIP-48)


class SaslOutcome(NamedTuple):
    response: bytes | None  # framed, ready for the socket
    close: bool = False


PASS = SaslOutcome(None)  # not the authenticator's: KafkaApis answers it (ApiVersions)


class AuthenticationFailed(Exception):
    """The client's credentials were refused; the message is what the client is told."""


class SaslServerAuthenticator:
    def __init__(self, config: SaslListenerConfig, connection_id: str, client_host: str = "") -> None:
        self.config = config
        self.connection_id = connection_id
        self.client_host = client_host  # Kafka names the peer by address in authentication logs
        self.machine = SaslStateMachine()
        self.principal: KafkaPrincipal | None = None
        self.mechanism: str | None = None
        self.handshake_version = 0
        # time.monotonic() after which the session needs re-authenticating; None: never.
        self.session_expiry: float | None = None
        self._scram: ScramServer | None = None
        self._scram_first_sent = False
        self._scram_user = ""
        self._token_owner: KafkaPrincipal | None = None  # set for a tokenauth=true login
        self._token_expiry_ms: int | None = None
        self._reauth_principal: KafkaPrincipal | None = None

    @property
    def authenticated(self) -> bool:
        return self.machine.authenticated

    @property
    def state(self) -> SaslState:
        return self.machine.state

    def session_expired(self, now: float) -> bool:
        return self.session_expiry is not None and now > self.session_expiry

    # -- frames ------------------------------------------------------------------------------

    def receive(self, frame: memoryview) -> SaslOutcome | Awaitable[SaslOutcome]:
        """Raises IllegalSaslStateError (the caller closes) for a frame the state does not allow."""
        if self.machine.state is SaslState.RAW_AUTHENTICATE:
            self.machine.transition(SaslEvent.RAW_TOKEN)
            return self._token(bytes(frame), None)
        header = framing.parse_request_header(frame)
        api_key, version = header.api_key, header.api_version
        if api_key == ApiKey.API_VERSIONS:
            supported = version <= SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
            self.machine.transition(
                SaslEvent.API_VERSIONS if supported else SaslEvent.UNSUPPORTED_API_VERSIONS
            )
            return PASS
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE) and not is_supported(
            api_key, version
        ):
            # Kafka's authenticator refuses these with UnsupportedVersionException and closes.
            raise ProtocolError(f"Unsupported version {version} of {ApiKey(api_key).name}")
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(header, frame)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            self.machine.transition(SaslEvent.SASL_AUTHENTICATE)
            body = messages.decode_request(api_key, version, frame, header.body_offset)
            return self._token(bytes(body.auth_bytes), header)
        self.machine.transition(SaslEvent.REQUEST)  # raises before authentication
        return PASS

    def _handshake(self, header: framing.RequestHeader, frame: memoryview) -> SaslOutcome:
        body = messages.decode_request(header.api_key, header.api_version, frame, header.body_offset)
        mechanism = str(body.mechanism)
        reauthenticating = self.machine.state is SaslState.COMPLETE
        event = SaslEvent.HANDSHAKE_V0 if header.api_version == 0 else SaslEvent.HANDSHAKE_V1
        allowed = mechanism in self.config.mechanisms and (
            not reauthenticating or mechanism == self.mechanism
        )
        if not allowed:
            self.machine.transition(SaslEvent.AUTHENTICATION_FAILED)
            log.info(
                "Failed authentication with /%s (Unsupported SASL mechanism %s)", self.client_host, mechanism
            )
            code = UnsupportedSaslMechanismException.code
            response = {"error_code": code, "mechanisms": list(self.config.mechanisms)}
            return SaslOutcome(self._frame(header, response), close=True)
        self.machine.transition(event)
        if reauthenticating:
            self._reauth_principal = self.principal
        self.mechanism = mechanism
        self.handshake_version = header.api_version
        self._scram_first_sent = False
        self._scram = ScramServer(mechanism) if mechanism in SCRAM_MECHANISMS else None
        return SaslOutcome(self._frame(header, {"error_code": 0, "mechanisms": list(self.config.mechanisms)}))

    def _token(
        self, token: bytes, header: framing.RequestHeader | None
    ) -> SaslOutcome | Awaitable[SaslOutcome]:
        try:
            if self.mechanism == "PLAIN":
                return self._reply(header, self._plain(token), done=True)
            if not self._scram_first_sent:
                return self._scram_first(token, header)
            return self._reply(header, self._scram_final(token), done=True)
        except AuthenticationFailed as e:
            return self._failed(header, str(e))

    # -- PLAIN -------------------------------------------------------------------------------

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", errors="replace") for p in parts)
        expected = self.config.plain_users.get(user)
        if not user or expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed(PLAIN_FAILURE)
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self._set_principal(user)
        return b""

    # -- SCRAM -------------------------------------------------------------------------------

    async def _scram_first(self, token: bytes, header: framing.RequestHeader | None) -> SaslOutcome:
        assert self._scram is not None and self.mechanism is not None
        try:
            first = parse_client_first(token)
        except (ScramError, UnicodeDecodeError) as e:
            log.debug("Invalid SCRAM client-first message from %s: %s", self.connection_id, e)
            return self._failed(header, scram_failure(self.mechanism))
        if first.authzid and first.authzid != first.username:
            # Kafka's ScramSaslServer: the authorization id may only repeat the user name.
            return self._failed(
                header,
                "Authentication failed: Client requested an authorization id that is different from username",
            )
        self._token_owner, self._token_expiry_ms = None, None
        credential: ScramCredential | None
        if first.extensions.get("tokenauth", "").lower() == "true":
            # A delegation token (Kafka's ScramSaslServer with tokenauth): the user name is the
            # token id, the password the token's HMAC; unknown or expired tokens fail at the proof.
            tokens = self.config.token_credentials
            found = tokens(self.mechanism, first.username) if tokens is not None else None
            if found is None:
                credential, self._token_owner, self._token_expiry_ms = None, None, None
            else:
                credential, self._token_owner, self._token_expiry_ms = found
        else:
            lookup = self.config.scram_credentials
            credential = await lookup(self.mechanism, first.username) if lookup is not None else None
        self._scram_user = first.username
        self._scram_first_sent = True
        return self._reply(header, self._scram.first(first, credential), done=False)

    def _scram_final(self, token: bytes) -> bytes:
        assert self._scram is not None and self.mechanism is not None
        try:
            answer = self._scram.final(token)
        except (ScramError, UnicodeDecodeError, ValueError) as e:
            log.debug("SCRAM exchange with %s failed: %s", self.connection_id, e)
            raise AuthenticationFailed(scram_failure(self.mechanism)) from e
        if self._token_owner is not None:
            owner = self._token_owner
            self._set_principal(owner.name, owner.principal_type, token_authenticated=True)
        else:
            self._set_principal(self._scram_user)
        return answer

    # -- outcomes ----------------------------------------------------------------------------

    def _set_principal(self, user: str, kind: str = USER_TYPE, token_authenticated: bool = False) -> None:
        principal = KafkaPrincipal(kind, user, token_authenticated)
        if self._reauth_principal is not None and principal != self._reauth_principal:
            raise AuthenticationFailed(
                f"Cannot change principals during re-authentication from {self._reauth_principal}: {principal}"
            )
        self.principal = principal

    def _reply(self, header: framing.RequestHeader | None, challenge: bytes, done: bool) -> SaslOutcome:
        lifetime_ms = 0
        if done:
            self.machine.transition(SaslEvent.MECHANISM_COMPLETE)
            self._reauth_principal = None
            # Kafka's session lifetime: connections.max.reauth.ms, and for a delegation token
            # never past the token's expiry (its credential lifetime), re-authentication or not.
            limits = [self.config.reauth_ms] if self.config.reauth_ms > 0 else []
            if self._token_owner is not None and self._token_expiry_ms is not None:
                limits.append(max(0, self._token_expiry_ms - int(time.time() * 1000)))
            if limits:
                lifetime_ms = min(limits)
                self.session_expiry = time.monotonic() + lifetime_ms / 1000
        if header is None:
            return SaslOutcome(_SIZE.pack(len(challenge)) + challenge)
        body = {
            "error_code": 0,
            "error_message": None,
            "auth_bytes": challenge,
            "session_lifetime_ms": lifetime_ms,
        }
        return SaslOutcome(self._frame(header, body))

    def _failed(self, header: framing.RequestHeader | None, message: str) -> SaslOutcome:
        self.machine.transition(SaslEvent.AUTHENTICATION_FAILED)
        log.info("Failed authentication with /%s (%s)", self.client_host, message)
        if header is None:
            return SaslOutcome(None, close=True)  # raw tokens have no way to carry an error
        body = {
            "error_code": SaslAuthenticationException.code,
            "error_message": message,
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
        return SaslOutcome(self._frame(header, body), close=True)

    @staticmethod
    def _frame(header: framing.RequestHeader, body: Mapping[str, object]) -> bytes:
        payload = messages.encode_response(header.api_key, header.api_version, body)
        return framing.encode_response_frame(
            header.api_key, header.api_version, header.correlation_id, payload
        )


def illegal_state_response(header: framing.RequestHeader) -> bytes:
    """KafkaApis' answer to SaslHandshake/SaslAuthenticate outside a SASL exchange."""
    if header.api_key == ApiKey.SASL_HANDSHAKE:
        body: dict[str, object] = {"error_code": IllegalSaslStateException.code, "mechanisms": []}
    else:
        body = {
            "error_code": IllegalSaslStateException.code,
            "error_message": "Unexpected SaslAuthenticate: the connection is not in a SASL exchange",
            "auth_bytes": b"",
        }
    return SaslServerAuthenticator._frame(header, body)
