"""DelegationTokenManager (KIP-48) over an in-memory ZooKeeper, and tokenauth=true SCRAM logins
through the SASL authenticator. Invariants: Kafka's HMAC (HMAC-SHA512 of the id keyed with the
secret), lifetimes capped by delegation.token.max.lifetime.ms, Kafka's error codes for renew and
expire, Kafka's znode JSON, a second broker's cache following token_changes, expired tokens
removed by the check, and a token login whose principal is the owner, marked token-authenticated."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from typing import Any

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    DelegationTokenDisabledException,
    DelegationTokenExpiredException,
    DelegationTokenNotFoundException,
    DelegationTokenOwnerMismatchException,
)
from kafkapy.server.security.delegation_tokens import DelegationTokenManager, secret_of
from kafkapy.server.security.principal import KafkaPrincipal
from kafkapy.server.security.sasl_server import SaslListenerConfig, SaslOutcome, SaslServerAuthenticator
from kafkapy.server.security.scram import ScramClient

ALICE, BOB, CAROL = (KafkaPrincipal("User", n) for n in ("alice", "bob", "carol"))
DISABLED, NOT_FOUND = DelegationTokenDisabledException.code, DelegationTokenNotFoundException.code
MISMATCH, EXPIRED = DelegationTokenOwnerMismatchException.code, DelegationTokenExpiredException.code
DAY, WEEK = 86_400_000, 7 * 86_400_000


class FakeZk:
    """The few KafkaZkClient calls the manager makes, in memory."""

    class Stat:
        def __init__(self, ctime: float) -> None:
            self.ctime = ctime

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.seq = 0
        self.handlers: list[Any] = []

    def make_sure_persistent_path_exists(self, path: str) -> None:
        self.nodes.setdefault(path, b"")

    def get_children(self, path: str) -> list[str]:
        return [
            p[len(path) + 1 :]
            for p in self.nodes
            if p.startswith(path + "/") and "/" not in p[len(path) + 1 :]
        ]

    def get_data(self, path: str) -> tuple[bytes, Any] | None:
        return (self.nodes[path], FakeZk.Stat(10**13)) if path in self.nodes else None

    def path_exists(self, path: str) -> bool:
        return path in self.nodes

    def set_data(self, path: str, data: bytes) -> None:
        self.nodes[path] = data

    def create_recursive(self, path: str, data: bytes = b"", sequential: bool = False) -> str:
        if sequential:
            path = f"{path}{self.seq:010d}"
            self.seq += 1
        self.nodes[path] = data
        return path

    def delete_path(self, path: str) -> bool:
        return self.nodes.pop(path, None) is not None

    def register_znode_child_change_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _manager(zk: FakeZk, clock: Clock, secret: str | None = "s3cret") -> DelegationTokenManager:
    m = DelegationTokenManager(secret, WEEK, DAY, zk, clock)
    m.startup()
    m.close()  # notifications are processed synchronously in these tests
    return m


def test_create_matches_kafkas_hmac_lifetimes_and_znode() -> None:
    zk, clock = FakeZk(), Clock()
    m = _manager(zk, clock)
    r = m.create_token(ALICE, ALICE, [BOB], -1)
    assert r.error == 0 and len(r.token_id) == 22
    assert r.hmac == hmac.new(b"s3cret", r.token_id.encode(), hashlib.sha512).digest()
    assert (r.max_timestamp - r.issue_timestamp, r.expiry_timestamp - r.issue_timestamp) == (WEEK, DAY)
    znode = json.loads(zk.nodes[f"/delegation_token/tokens/{r.token_id}"])
    assert znode == {
        "version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aalice", "renewers": ["User%3Abob"],
        "issueTimestamp": r.issue_timestamp, "maxTimestamp": r.max_timestamp,
        "expiryTimestamp": r.expiry_timestamp, "tokenId": r.token_id,
    }  # fmt: skip
    assert [zk.nodes[p] for p in zk.nodes if "/token_changes/token_change_" in p] == [r.token_id.encode()]
    # A max lifetime under the default renewal caps the expiry; over the broker's cap is capped.
    short = m.create_token(ALICE, ALICE, [], 1000)
    assert short.expiry_timestamp == short.max_timestamp == short.issue_timestamp + 1000
    assert m.create_token(ALICE, ALICE, [], 10 * WEEK).max_timestamp - clock.now * 1000 == WEEK


def test_renew_and_expire_errors_as_kafka_answers_them() -> None:
    zk, clock = FakeZk(), Clock()
    m = _manager(zk, clock)
    r = m.create_token(ALICE, ALICE, [BOB], -1)
    assert m.renew_token(CAROL, r.hmac, 1000) == (MISMATCH, -1)
    assert m.renew_token(ALICE, b"nope", 1000) == (NOT_FOUND, -1)
    code, expiry = m.renew_token(BOB, r.hmac, 2 * DAY)
    assert code == 0 and expiry == int(clock.now * 1000) + 2 * DAY
    code, expiry = m.renew_token(ALICE, r.hmac, 100 * DAY)
    assert expiry == r.max_timestamp  # never past the max time
    assert m.expire_token(CAROL, r.hmac, -1) == (MISMATCH, -1)
    code, expiry = m.expire_token(ALICE, r.hmac, 5000)
    assert code == 0 and expiry == int(clock.now * 1000) + 5000
    clock.now += 6
    assert m.renew_token(ALICE, r.hmac, 1000) == (EXPIRED, -1)
    assert m.expire_token(ALICE, r.hmac, 1000) == (EXPIRED, -1)
    assert m.expire_token(BOB, r.hmac, -1) == (0, int(clock.now * 1000))  # -1: remove now, even expired
    assert f"/delegation_token/tokens/{r.token_id}" not in zk.nodes
    assert m.renew_token(ALICE, r.hmac, 1000) == (NOT_FOUND, -1)


def test_disabled_without_a_secret_and_the_older_key_name() -> None:
    m = _manager(FakeZk(), Clock(), secret=None)
    assert not m.enabled and m.create_token(ALICE, ALICE, [], -1).error == DISABLED
    assert m.renew_token(ALICE, b"x", 1) == (DISABLED, -1) and m.expire_token(ALICE, b"x", 1) == (
        DISABLED,
        -1,
    )
    config = {"delegation.token.secret.key": None, "delegation.token.master.key": "old"}
    assert secret_of(config) == "old"


def test_another_brokers_cache_follows_notifications_and_the_expiry_check() -> None:
    zk, clock = FakeZk(), Clock()
    one, two = _manager(zk, clock), _manager(zk, clock)
    r = one.create_token(ALICE, ALICE, [], -1)
    assert two.credential("SCRAM-SHA-256", r.token_id) is None
    two.process_notifications()
    found = two.credential("SCRAM-SHA-512", r.token_id)
    assert found is not None and found[1] == ALICE
    assert [t.info.token_id for t in two.tokens(lambda info: True)] == [r.token_id]
    one.expire_token(ALICE, r.hmac, 1000)
    two.process_notifications()
    assert two.tokens(lambda info: True)[0].info.expiry_timestamp == int(clock.now * 1000) + 1000
    clock.now += 2
    assert two.credential("SCRAM-SHA-256", r.token_id) is None  # expired: no login
    two.expire_tokens()
    assert f"/delegation_token/tokens/{r.token_id}" not in zk.nodes
    one.process_notifications()
    assert one.tokens(lambda info: True) == []
    # A broker started later loads the tokens that exist.
    r2 = one.create_token(BOB, BOB, [], -1)
    three = _manager(zk, clock)
    assert three.credential("SCRAM-SHA-256", r2.token_id) is not None


def _frame(api_key: int, version: int, body: dict[str, Any]) -> memoryview:
    payload = messages.encode_request(api_key, version, body)
    return memoryview(framing.encode_request_frame(api_key, version, 1, "test", payload))[4:]


def _auth_bytes(auth: SaslServerAuthenticator, token: bytes) -> tuple[int, bytes]:
    outcome = auth.receive(_frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}))
    if not isinstance(outcome, SaslOutcome):
        outcome = asyncio.run(outcome)  # type: ignore[arg-type]
    assert outcome.response is not None
    frame = outcome.response[4:]
    _, offset = framing.parse_response_header(
        frame, framing.response_header_version(ApiKey.SASL_AUTHENTICATE, 2)
    )
    resp = messages.decode_response(ApiKey.SASL_AUTHENTICATE, 2, frame, offset)
    return resp.error_code, bytes(resp.auth_bytes)


def _login(m: DelegationTokenManager, user: str, password: str, token_auth: bool) -> SaslServerAuthenticator:
    async def no_users(mechanism: str, user: str) -> None:
        return None

    config = SaslListenerConfig(("SCRAM-SHA-256",), {}, no_users, 0, m.credential)
    auth = SaslServerAuthenticator(config, "c1")
    auth.receive(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}))
    client = ScramClient(
        "SCRAM-SHA-256", user, password, extensions={"tokenauth": "true"} if token_auth else None
    )
    code, first = _auth_bytes(auth, client.first())
    assert code == 0
    code, final = _auth_bytes(auth, client.final(first))
    if code == 0:
        client.verify(final)
    return auth


def test_a_token_login_is_the_owner_marked_token_authenticated() -> None:
    clock = Clock()
    clock.now = time.time()
    m = _manager(FakeZk(), clock)
    r = m.create_token(ALICE, ALICE, [], -1)
    password = base64.b64encode(r.hmac).decode()
    auth = _login(m, r.token_id, password, token_auth=True)
    assert auth.authenticated and auth.principal == ALICE and auth.principal is not None
    assert auth.principal.token_authenticated
    # The session ends with the token (Kafka's credential lifetime), even without re-authentication.
    assert auth.session_expiry is not None
    assert abs(auth.session_expiry - time.monotonic() - DAY / 1000) < 60
    assert not _login(m, r.token_id, "wrong", token_auth=True).authenticated
    assert not _login(m, r.token_id, password, token_auth=False).authenticated  # not a user
