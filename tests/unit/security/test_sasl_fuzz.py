"""Hostile input to the SASL authenticator: random, truncated and out-of-order frames. Invariant:
nothing but a refusal comes out (a typed error or a closing answer), and no sequence of frames
without the right password ever authenticates."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import ProtocolError
from kafkapy.server.security.sasl_server import SaslListenerConfig, SaslOutcome, SaslServerAuthenticator
from kafkapy.server.security.sasl_state import IllegalSaslStateError
from kafkapy.server.security.scram import make_credential

CREDENTIAL = make_credential("SCRAM-SHA-256", "secret", 4096)


async def _lookup(mechanism: str, user: str) -> Any:
    return CREDENTIAL if user == "alice" else None


CONFIG = SaslListenerConfig(("PLAIN", "SCRAM-SHA-256"), {"alice": "secret"}, _lookup, 0)


def _frame(api_key: int, version: int, body: dict[str, Any]) -> bytes:
    payload = messages.encode_request(api_key, version, body)
    return framing.encode_request_frame(api_key, version, 1, "fuzz", payload)[4:]


VALID = [
    _frame(ApiKey.API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"}),
    _frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}),
    _frame(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "SCRAM-SHA-256"}),
    _frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}),
    _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00alice\x00wrong"}),
    _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"n,,n=alice,r=abc"}),
    _frame(ApiKey.SASL_AUTHENTICATE, 0, {"auth_bytes": b"c=biws,r=abc,p=AAAA"}),
    _frame(ApiKey.METADATA, 1, {"topics": []}),
]


def _mutations() -> st.SearchStrategy[bytes]:
    whole = st.sampled_from(VALID)
    truncated = st.tuples(st.sampled_from(VALID), st.integers(0, 40)).map(lambda t: t[0][: t[1]])
    flipped = st.tuples(st.sampled_from(VALID), st.integers(0, 200), st.integers(0, 255)).map(
        lambda t: t[0][: t[1] % max(len(t[0]), 1)] + bytes([t[2]]) + t[0][t[1] % max(len(t[0]), 1) + 1 :]
    )
    return st.one_of(whole, truncated, flipped, st.binary(max_size=64))


@settings(max_examples=1500, deadline=None)
@given(st.lists(_mutations(), min_size=1, max_size=6))
def test_hostile_frames_are_refused_and_never_authenticate(frames: list[bytes]) -> None:
    auth = SaslServerAuthenticator(CONFIG, "fuzz")
    for frame in frames:
        try:
            outcome = auth.receive(memoryview(frame))
            if not isinstance(outcome, SaslOutcome):
                outcome = asyncio.run(outcome)  # type: ignore[arg-type]
        except (IllegalSaslStateError, ProtocolError, ValueError):
            break  # the processor closes the connection
        assert not auth.authenticated
        if outcome.close:
            break
    assert not auth.authenticated
