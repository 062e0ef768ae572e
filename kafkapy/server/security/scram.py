"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) and Kafka's credential format.

Kafka stores a user's credential in `/config/users/<user>` as a config value named after the
mechanism: `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>` (ScramCredentialUtils).
`credential_config` creates one from a password (kafkapy-configs' `--add-config
'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'` calls it), `parse_credential` reads it.

The exchange (client-first, server-first, client-final, server-final) is `ScramServer` here and
`ScramClient` for the broker's own connections; neither does any I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramMechanism.minIterations / maxIterations.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


class ScramError(Exception):
    """A malformed or failed exchange; the message is for the broker's log, not the client."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(algo: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, algo).digest()


def salted_password(algo: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(algo, password.encode(), salt, iterations)


def make_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    algo = _algo(mechanism)
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"Invalid iterations {iterations}: {mechanism} needs {MIN_ITERATIONS}-{MAX_ITERATIONS}"
        )
    salt = os.urandom(24) if salt is None else salt
    return credential_from_salted_password(
        mechanism, salt, salted_password(algo, password, salt, iterations), iterations
    )


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials stores: the client sent SaltedPassword, not the password."""
    algo = _algo(mechanism)
    stored_key = hashlib.new(algo, _hmac(algo, salted, b"Client Key")).digest()
    return ScramCredential(salt, stored_key, _hmac(algo, salted, b"Server Key"), iterations)


def format_credential(cred: ScramCredential) -> str:
    b64 = base64.b64encode
    return (
        f"salt={b64(cred.salt).decode()},stored_key={b64(cred.stored_key).decode()},"
        f"server_key={b64(cred.server_key).decode()},iterations={cred.iterations}"
    )


def parse_credential(text: str) -> ScramCredential:
    fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
    try:
        return ScramCredential(
            base64.b64decode(fields["salt"]),
            base64.b64decode(fields["stored_key"]),
            base64.b64decode(fields["server_key"]),
            int(fields["iterations"]),
        )
    except (KeyError, ValueError) as e:
        raise ScramError(f"Invalid SCRAM credential: {e}") from e


def credential_config(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS) -> dict[str, str]:
    """The `/config/users/<user>` entry for a password: {mechanism: formatted credential}."""
    return {mechanism: format_credential(make_credential(mechanism, password, iterations))}


def _algo(mechanism: str) -> str:
    try:
        return MECHANISMS[mechanism.upper()]
    except KeyError:
        raise ValueError(f"Unsupported SCRAM mechanism {mechanism}") from None


# -- message syntax (RFC 5802 section 7) -------------------------------------------------------

_SASLNAME = re.compile(r"=2C|=3D")


def _unescape_name(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise ScramError(f"Invalid username: {name}")
    return _SASLNAME.sub(lambda m: "," if m.group(0) == "=2C" else "=", name)


def _escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"Invalid SCRAM message: {message!r}")
        out[part[0]] = part[2:]
    return out


@dataclass(frozen=True, slots=True)
class ClientFirst:
    username: str
    nonce: str
    bare: str  # client-first-message-bare, part of the AuthMessage
    gs2_header: str
    extensions: dict[str, str]  # Kafka's (KIP-86) e.g. tokenauth=true
    authzid: str = ""  # the GS2 header's a=<name>; Kafka refuses one that is not the user


def parse_client_first(data: bytes) -> ClientFirst:
    text = data.decode("utf-8", errors="strict")
    match = re.match(r"^(n|y|p=[^,]*),(a=[^,]*)?,(.*)$", text, re.DOTALL)
    if match is None:
        raise ScramError("Invalid SCRAM client first message")
    if match.group(1).startswith("p"):
        raise ScramError("SCRAM channel binding is not supported")
    bare = match.group(3)
    parts = bare.split(",")
    if len(parts) < 2 or not parts[0].startswith("n=") or not parts[1].startswith("r="):
        raise ScramError("Invalid SCRAM client first message: no username or nonce")
    # Kafka's extensions (KIP-86) follow as key=value pairs with names longer than one letter.
    extensions = dict(part.split("=", 1) for part in parts[2:] if "=" in part)
    attrs = {"n": parts[0][2:], "r": parts[1][2:]}
    authzid = _unescape_name(match.group(2)[2:]) if match.group(2) else ""
    return ClientFirst(
        _unescape_name(attrs["n"]), attrs["r"], bare, text[: len(text) - len(bare)], extensions, authzid
    )


class ScramServer:
    """One server-side exchange. `first` answers the client-first message given the user's
    credential (None: unknown user, which gets a decoy server-first and fails at the proof, so
    the exchange does not tell which users exist; Kafka's ScramSaslServer fails it one step
    earlier, with the same SASL_AUTHENTICATION_FAILED message); `final` checks the proof and
    returns the server-final message."""

    def __init__(self, mechanism: str) -> None:
        self.mechanism = mechanism
        self.algo = _algo(mechanism)
        self._first: ClientFirst | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None

    def first(
        self, client_first: ClientFirst, credential: ScramCredential | None, server_nonce: str | None = None
    ) -> bytes:
        """`server_nonce` is for tests (RFC 7677's vector); otherwise 24 random bytes."""
        self._first = client_first
        nonce = client_first.nonce + (server_nonce or base64.b64encode(os.urandom(24)).decode().rstrip("="))
        if credential is None:
            # A throw-away credential keeps the exchange's shape for unknown users.
            credential = ScramCredential(os.urandom(24), b"", b"", MIN_ITERATIONS)
            self._credential = None
        else:
            self._credential = credential
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, data: bytes) -> bytes:
        assert self._first is not None
        text = data.decode("utf-8", errors="strict")
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message: no proof")
        attrs = _attributes(without_proof)
        expected_nonce = self._server_first.split(",", 1)[0][2:]
        if attrs.get("r") != expected_nonce:
            raise ScramError("Invalid SCRAM client final message: nonce mismatch")
        if base64.b64decode(attrs.get("c", "")) != self._first.gs2_header.encode():
            raise ScramError("Invalid SCRAM client final message: channel binding mismatch")
        cred = self._credential
        if cred is None:
            raise ScramError(f"Unknown user {self._first.username}")
        auth_message = f"{self._first.bare},{self._server_first},{without_proof}".encode()
        client_signature = _hmac(self.algo, cred.stored_key, auth_message)
        proof = base64.b64decode(proof_text)
        if len(proof) != len(client_signature):
            raise ScramError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.algo, client_key).digest(), cred.stored_key):
            raise ScramError("Invalid client credentials")
        signature = _hmac(self.algo, cred.server_key, auth_message)
        return b"v=" + base64.b64encode(signature)


class ScramClient:
    """The client side, for the broker's inter-broker connections."""

    def __init__(
        self, mechanism: str, username: str, password: str, nonce: str | None = None,
        extensions: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """`extensions`: Kafka's SCRAM extensions, e.g. {"tokenauth": "true"} for a delegation token."""
        self.algo = _algo(mechanism)
        self.username = username
        self.password = password
        self.nonce = nonce or base64.b64encode(os.urandom(24)).decode().rstrip("=")
        extra = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._bare = f"n={_escape_name(username)},r={self.nonce}{extra}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = _attributes(text)
        if not attrs.get("r", "").startswith(self.nonce):
            raise ScramError("Invalid server nonce")
        salted = salted_password(self.algo, self.password, base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = _hmac(self.algo, salted, b"Client Key")
        stored_key = hashlib.new(self.algo, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={attrs['r']}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = _hmac(self.algo, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = _hmac(self.algo, _hmac(self.algo, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attributes(server_final.decode())
        if "e" in attrs:
            raise ScramError(f"SCRAM authentication failed: {attrs['e']}")
        if base64.b64decode(attrs.get("v", "")) != self._server_signature:
            raise ScramError("Invalid server signature")


# -- ZooKeeper (what kafkapy-configs --entity-type users --add-config 'SCRAM-SHA-256=[...]' does) --


def parse_scram_config_value(value: str) -> tuple[str, int]:
    """`[iterations=8192,password=alice-secret]` (brackets optional) into (password, iterations);
    iterations default to 4096 as in Kafka's ConfigCommand."""
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    if "password" not in fields:
        raise ValueError(f"Invalid SCRAM credential config {value!r}: no password")
    return fields["password"], int(fields.get("iterations", DEFAULT_ITERATIONS))


def add_scram_credential(
    admin_zk: object, user: str, mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS
) -> None:
    """Store `user`'s credential for `mechanism` in /config/users/<user> (other configs kept) and
    notify the brokers; `admin_zk` is a kafkapy.zk.admin_zk_client.AdminZkClient."""
    configs: dict[str, str] = dict(admin_zk.fetch_entity_config("users", user))  # type: ignore[attr-defined]
    configs.update(credential_config(mechanism.upper(), password, iterations))
    admin_zk.change_entity_config("users", user, configs)  # type: ignore[attr-defined]


def delete_scram_credential(admin_zk: object, user: str, mechanism: str) -> None:
    configs: dict[str, str] = dict(admin_zk.fetch_entity_config("users", user))  # type: ignore[attr-defined]
    configs.pop(mechanism.upper(), None)
    admin_zk.change_entity_config("users", user, configs)  # type: ignore[attr-defined]


def read_scram_credential(admin_zk: object, user: str, mechanism: str) -> ScramCredential | None:
    """The credential the broker authenticates `user` with (blocking ZooKeeper read)."""
    configs = admin_zk.fetch_entity_config("users", user)  # type: ignore[attr-defined]
    text = configs.get(mechanism.upper())
    return None if text is None else parse_credential(text)
