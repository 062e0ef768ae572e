"""The server's SASL handshake: the transition table, and the authenticator fed request frames as
real clients send them (v1 with SaslAuthenticate, v0 with raw tokens), without sockets."""

from __future__ import annotations

import asyncio
import re
import struct
from typing import Any

import pytest

from kafkapy.common.config_def import ConfigException
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.config import KafkaConfig
from kafkapy.server.security.channel_builder import listener_security
from kafkapy.server.security.sasl_server import (
    PASS,
    PLAIN_FAILURE,
    SaslListenerConfig,
    SaslOutcome,
    SaslServerAuthenticator,
)
from kafkapy.server.security.sasl_state import (
    TRANSITIONS,
    IllegalSaslStateError,
    SaslEvent,
    SaslState,
    SaslStateMachine,
)
from kafkapy.server.security.scram import ScramClient, make_credential


@pytest.mark.parametrize("state", list(SaslState))
def test_events_outside_the_table_name_state_and_event_and_change_nothing(state: SaslState) -> None:
    for event in SaslEvent:
        machine = SaslStateMachine()
        machine.state = state
        if event in TRANSITIONS[state]:
            assert machine.transition(event) is TRANSITIONS[state][event]
        else:
            with pytest.raises(
                IllegalSaslStateError,
                match=re.escape(f"Unexpected {event.value} in SASL state {state.value}"),
            ):
                machine.transition(event)
            assert machine.state is state


def test_a_request_before_authentication_is_illegal() -> None:
    with pytest.raises(
        IllegalSaslStateError, match="Unexpected request in SASL state HANDSHAKE_OR_VERSIONS_REQUEST"
    ):
        SaslStateMachine().transition(SaslEvent.REQUEST)


# -- the authenticator ----------------------------------------------------------------------------

CONFIG = SaslListenerConfig(("PLAIN", "SCRAM-SHA-256"), {"alice": "alice-secret"}, None, 0)


def _frame(api_key: int, version: int, body: dict[str, Any], correlation_id: int = 7) -> memoryview:
    payload = messages.encode_request(api_key, version, body)
    return memoryview(framing.encode_request_frame(api_key, version, correlation_id, "test", payload))[4:]


def _response(api_key: int, version: int, outcome: SaslOutcome) -> Any:
    assert outcome.response is not None
    frame = outcome.response[4:]
    _, offset = framing.parse_response_header(frame, framing.response_header_version(api_key, version))
    return messages.decode_response(api_key, version, frame, offset)


def _handshake(auth: SaslServerAuthenticator, mechanism: str, version: int = 1) -> Any:
    outcome = auth.receive(_frame(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism}))
    assert isinstance(outcome, SaslOutcome)
    return outcome, _response(ApiKey.SASL_HANDSHAKE, version, outcome)


def _authenticate(auth: SaslServerAuthenticator, token: bytes, version: int = 2) -> tuple[SaslOutcome, Any]:
    outcome = auth.receive(_frame(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token}))
    if not isinstance(outcome, SaslOutcome):
        outcome = asyncio.run(outcome)  # type: ignore[arg-type]
    return outcome, _response(ApiKey.SASL_AUTHENTICATE, version, outcome)


def test_plain_v1_after_api_versions() -> None:
    auth = SaslServerAuthenticator(CONFIG, "c1")
    assert (
        auth.receive(
            _frame(ApiKey.API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})
        )
        is PASS
    )
    _, handshake = _handshake(auth, "PLAIN")
    assert handshake.error_code == 0 and list(handshake.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
    outcome, resp = _authenticate(auth, b"\x00alice\x00alice-secret")
    assert resp.error_code == 0 and not outcome.close
    assert auth.authenticated and str(auth.principal) == "User:alice"


@pytest.mark.parametrize("token", [b"\x00alice\x00wrong", b"\x00nobody\x00x", b"garbage"])
def test_plain_refusals_answer_sasl_authentication_failed_and_close(token: bytes) -> None:
    auth = SaslServerAuthenticator(CONFIG, "c1")
    _handshake(auth, "PLAIN")
    outcome, resp = _authenticate(auth, token)
    assert resp.error_code == 58 and outcome.close and not auth.authenticated
    if token != b"garbage":
        assert resp.error_message == PLAIN_FAILURE
    with pytest.raises(IllegalSaslStateError):  # nothing more is accepted on that connection
        auth.receive(_frame(ApiKey.METADATA, 1, {"topics": []}))


def test_requests_before_authentication_are_refused() -> None:
    auth = SaslServerAuthenticator(CONFIG, "c1")
    with pytest.raises(IllegalSaslStateError):
        auth.receive(_frame(ApiKey.METADATA, 1, {"topics": []}))
    auth = SaslServerAuthenticator(CONFIG, "c1")
    _handshake(auth, "PLAIN")
    with pytest.raises(IllegalSaslStateError):
        auth.receive(_frame(ApiKey.PRODUCE, 3, {"acks": 1, "timeout_ms": 1, "topic_data": []}))


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes() -> None:
    auth = SaslServerAuthenticator(CONFIG, "c1")
    outcome, resp = _handshake(auth, "GSSAPI")
    assert resp.error_code == 33 and list(resp.mechanisms) == ["PLAIN", "SCRAM-SHA-256"] and outcome.close


def test_v0_handshake_then_raw_tokens() -> None:
    auth = SaslServerAuthenticator(CONFIG, "c1")
    _handshake(auth, "PLAIN", version=0)
    outcome = auth.receive(memoryview(b"\x00alice\x00alice-secret"))
    assert isinstance(outcome, SaslOutcome)
    assert outcome.response == struct.pack(">i", 0) and auth.authenticated
    auth = SaslServerAuthenticator(CONFIG, "c2")
    _handshake(auth, "PLAIN", version=0)
    outcome = auth.receive(memoryview(b"\x00alice\x00nope"))
    assert outcome == SaslOutcome(None, close=True)  # raw tokens cannot carry an error


def test_scram_with_credentials_from_the_lookup_and_reauthentication() -> None:
    credential = make_credential("SCRAM-SHA-256", "alice-secret", 4096)

    async def lookup(mechanism: str, user: str) -> Any:
        return credential if user == "alice" else None

    config = SaslListenerConfig(("SCRAM-SHA-256",), {}, lookup, 60000)
    auth = SaslServerAuthenticator(config, "c1")
    for _ in range(2):  # the second round is a KIP-368 re-authentication
        _handshake(auth, "SCRAM-SHA-256")
        client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
        _, first = _authenticate(auth, client.first())
        _, final = _authenticate(auth, client.final(bytes(first.auth_bytes)))
        client.verify(bytes(final.auth_bytes))
        assert final.error_code == 0 and final.session_lifetime_ms == 60000
        assert auth.authenticated and str(auth.principal) == "User:alice"
        assert auth.session_expiry is not None
    wrong = SaslServerAuthenticator(config, "c2")
    _handshake(wrong, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "wrong")
    _, first = _authenticate(wrong, client.first())
    outcome, final = _authenticate(wrong, client.final(bytes(first.auth_bytes)))
    assert final.error_code == 58 and outcome.close
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in final.error_message


def test_gssapi_is_refused_at_start_up() -> None:
    config = KafkaConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
        }
    )
    with pytest.raises(ConfigException, match="GSSAPI is not supported by kafkapy"):
        listener_security(config, "SASL_PLAINTEXT", "SASL_PLAINTEXT", None)


def test_scram_authorization_id_other_than_the_user_is_refused_at_client_first() -> None:
    """Found by tests/faults/test_auth_handshake_fuzz.py: a client-first `n,a=bob,n=alice,...`
    got a server-first. Kafka's ScramSaslServer refuses it there; `a=alice` stays allowed."""
    credential = make_credential("SCRAM-SHA-256", "alice-secret", 4096)

    async def lookup(mechanism: str, user: str) -> Any:
        return credential if user == "alice" else None

    config = SaslListenerConfig(("SCRAM-SHA-256",), {}, lookup, 0)
    auth = SaslServerAuthenticator(config, "c1")
    _handshake(auth, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    outcome, first = _authenticate(auth, client.first().replace(b"n,,", b"n,a=bob,", 1))
    assert first.error_code == 58 and outcome.close and not auth.authenticated
    assert first.error_message == (
        "Authentication failed: Client requested an authorization id that is different from username"
    )
    auth = SaslServerAuthenticator(config, "c2")
    _handshake(auth, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    _, first = _authenticate(auth, client.first().replace(b"n,,", b"n,a=alice,", 1))
    assert first.error_code == 0 and bytes(first.auth_bytes).startswith(b"r=" + client.nonce.encode())
