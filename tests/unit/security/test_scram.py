"""SCRAM (RFC 5802/7677) and Kafka's credential format, without a broker."""

from __future__ import annotations

import base64

import pytest

from kafkapy.server.security.scram import (
    ScramClient,
    ScramError,
    ScramServer,
    credential_config,
    format_credential,
    make_credential,
    parse_client_first,
    parse_credential,
    parse_scram_config_value,
)

# RFC 7677 section 3.
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
CLIENT_FINAL = (
    f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=".encode()
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_client_reproduces_rfc7677_vector() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first() == f"n,,n=user,r={CLIENT_NONCE}".encode()
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)


def test_server_reproduces_rfc7677_vector() -> None:
    credential = make_credential("SCRAM-SHA-256", "pencil", 4096, salt=SALT)
    server = ScramServer("SCRAM-SHA-256")
    first = parse_client_first(f"n,,n=user,r={CLIENT_NONCE}".encode())
    assert server.first(first, credential, server_nonce=SERVER_NONCE) == SERVER_FIRST
    assert server.final(CLIENT_FINAL) == SERVER_FINAL


def test_server_refuses_a_wrong_proof_and_an_unknown_user() -> None:
    credential = make_credential("SCRAM-SHA-256", "other", 4096, salt=SALT)
    server = ScramServer("SCRAM-SHA-256")
    server.first(parse_client_first(f"n,,n=user,r={CLIENT_NONCE}".encode()), credential, SERVER_NONCE)
    with pytest.raises(ScramError, match="Invalid client credentials"):
        server.final(CLIENT_FINAL)
    unknown = ScramServer("SCRAM-SHA-256")
    unknown.first(parse_client_first(f"n,,n=user,r={CLIENT_NONCE}".encode()), None, SERVER_NONCE)
    with pytest.raises(ScramError):
        unknown.final(CLIENT_FINAL)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_and_server_agree_through_the_stored_format(mechanism: str) -> None:
    stored = credential_config(mechanism, "alice-secret", 8192)[mechanism]
    assert stored.startswith("salt=") and stored.endswith(",iterations=8192")
    credential = parse_credential(stored)
    assert format_credential(credential) == stored
    client = ScramClient(mechanism, "alice", "alice-secret")
    server = ScramServer(mechanism)
    server_first = server.first(parse_client_first(client.first()), credential)
    client.verify(server.final(client.final(server_first)))


def test_client_first_with_escaped_name_and_kafka_extension() -> None:
    first = parse_client_first(b"n,,n=a=2Cb=3Dc,r=abc,tokenauth=true")
    assert first.username == "a,b=c"
    assert first.extensions == {"tokenauth": "true"}
    with pytest.raises(ScramError):
        parse_client_first(b"p=tls-unique,,n=u,r=x")  # channel binding


def test_iterations_bounds_and_kafka_configs_value() -> None:
    with pytest.raises(ValueError):
        make_credential("SCRAM-SHA-256", "x", 1000)
    assert parse_scram_config_value("[iterations=8192,password=alice-secret]") == ("alice-secret", 8192)
    assert parse_scram_config_value("[password=p]") == ("p", 4096)
