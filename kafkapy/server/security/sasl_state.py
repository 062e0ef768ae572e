"""The server side of Kafka's SASL handshake as one transition table (no I/O).

Kafka's SaslServerAuthenticator moves through HANDSHAKE_OR_VERSIONS_REQUEST, HANDSHAKE_REQUEST,
AUTHENTICATE, COMPLETE, FAILED and the re-authentication states of KIP-368. A client that sends
SaslHandshake v0 then exchanges raw size-prefixed tokens (no Kafka header, the pre-KIP-152
framing kafka-python 2.0 still used); v1 wraps every token in SaslAuthenticate. Whatever the
table does not name is a protocol error: the connection is closed, the state stays as it was.
"""

from __future__ import annotations

from enum import Enum


class SaslState(Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"  # SaslAuthenticate requests carry the tokens (handshake v1)
    RAW_AUTHENTICATE = "RAW_AUTHENTICATE"  # bare tokens (handshake v0)
    COMPLETE = "COMPLETE"
    REAUTHENTICATE = "REAUTHENTICATE"  # KIP-368: a new SaslHandshake on an authenticated connection
    FAILED = "FAILED"


class SaslEvent(Enum):
    API_VERSIONS = "ApiVersions"
    # A version newer than ours: answered (v0 fallback) and the client retries, state unchanged,
    # as Kafka's authenticator does (kafka-python starts at a version kafkapy may not serve).
    UNSUPPORTED_API_VERSIONS = "ApiVersions (unsupported version)"
    HANDSHAKE_V0 = "SaslHandshake v0"
    HANDSHAKE_V1 = "SaslHandshake v1"
    SASL_AUTHENTICATE = "SaslAuthenticate"
    RAW_TOKEN = "raw SASL token"
    MECHANISM_COMPLETE = "mechanism complete"
    AUTHENTICATION_FAILED = "authentication failed"
    REQUEST = "request"


S, E = SaslState, SaslEvent
_HANDSHAKE = {
    E.HANDSHAKE_V0: S.RAW_AUTHENTICATE,
    E.HANDSHAKE_V1: S.AUTHENTICATE,
    E.AUTHENTICATION_FAILED: S.FAILED,
}
TRANSITIONS: dict[SaslState, dict[SaslEvent, SaslState]] = {
    S.HANDSHAKE_OR_VERSIONS_REQUEST: {
        E.API_VERSIONS: S.HANDSHAKE_REQUEST,
        E.UNSUPPORTED_API_VERSIONS: S.HANDSHAKE_OR_VERSIONS_REQUEST,
        **_HANDSHAKE,
    },
    S.HANDSHAKE_REQUEST: dict(_HANDSHAKE),
    S.AUTHENTICATE: {
        E.SASL_AUTHENTICATE: S.AUTHENTICATE,
        E.MECHANISM_COMPLETE: S.COMPLETE,
        E.AUTHENTICATION_FAILED: S.FAILED,
    },
    S.RAW_AUTHENTICATE: {
        E.RAW_TOKEN: S.RAW_AUTHENTICATE,
        E.MECHANISM_COMPLETE: S.COMPLETE,
        E.AUTHENTICATION_FAILED: S.FAILED,
    },
    S.COMPLETE: {
        E.REQUEST: S.COMPLETE,
        E.API_VERSIONS: S.COMPLETE,
        E.UNSUPPORTED_API_VERSIONS: S.COMPLETE,
        E.HANDSHAKE_V1: S.REAUTHENTICATE,
    },
    S.REAUTHENTICATE: {
        E.SASL_AUTHENTICATE: S.REAUTHENTICATE,
        E.MECHANISM_COMPLETE: S.COMPLETE,
        E.AUTHENTICATION_FAILED: S.FAILED,
    },
    S.FAILED: {},
}


class IllegalSaslStateError(Exception):
    """An event the table does not allow in the current state (Kafka's IllegalSaslStateException)."""

    def __init__(self, state: SaslState, event: SaslEvent) -> None:
        super().__init__(f"Unexpected {event.value} in SASL state {state.value}")
        self.state = state
        self.event = event


class SaslStateMachine:
    def __init__(self) -> None:
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST

    def transition(self, event: SaslEvent) -> SaslState:
        new = TRANSITIONS[self.state].get(event)
        if new is None:
            raise IllegalSaslStateError(self.state, event)
        self.state = new
        return new

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE
