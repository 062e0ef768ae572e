"""Delegation tokens (KIP-48) on a real 2-broker cluster with SASL_PLAINTEXT (SCRAM) listeners,
delegation.token.secret.key set and AclAuthorizer on (User:ANONYMOUS, the harness's PLAINTEXT
listener and the inter-broker one, is the super user; alice holds ACLs on one topic, bob none).

Invariants: kafkapy-delegation-tokens creates a token for alice (renewer bob) through broker 0;
a SCRAM-SHA-256/512 login with tokenauth=true, the token id and the base64 HMAC succeeds on
broker 1 (the token reached it through /delegation_token/token_changes) and produces and fetches
as User:alice (bob's own login is refused the topic); such a connection may not manage tokens
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), nor may PLAINTEXT; renew by the renewer extends the
expiry, by a stranger is DELEGATION_TOKEN_OWNER_MISMATCH; describe lists it; expire makes the
next token login fail on every broker; a token past its expiry is removed by the periodic check;
a broker without the secret answers DELEGATION_TOKEN_AUTH_DISABLED."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkapy.client.connection import BrokerConnection
from kafkapy.client.sasl_client import ClientSecurity
from kafkapy.protocol.errors import (
    DelegationTokenNotFoundException,
    DelegationTokenOwnerMismatchException,
    SaslAuthenticationException,
    UnsupportedByAuthenticationException,
)
from kafkapy.protocol.record_codec import build_batch, decode_records
from kafkapy.server.security.scram import add_scram_credential
from kafkapy.testing import KafkapyCluster, free_port
from kafkapy.zk.admin_zk_client import AdminZkClient
from kafkapy.zk.kafka_zk_client import KafkaZkClient

SECRET = "token-secret-for-tests"
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, dict[int, int]]]:
    sasl_ports: dict[int, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        sasl_ports[broker_id] = free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_ports[broker_id]}",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        }

    c = KafkapyCluster(
        tmp_path_factory.mktemp("tokens"),
        2,
        {
            "delegation.token.secret.key": SECRET,
            "delegation.token.expiry.check.interval.ms": "1000",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            "offsets.topic.replication.factor": "1",
        },
        overrides,
    )
    try:
        c.start()
        zk = KafkaZkClient(c.zookeeper_connect, 6000, 10000)
        zk.start()
        try:
            admin = AdminZkClient(zk)
            for user, password in PASSWORDS.items():
                add_scram_credential(admin, user, "SCRAM-SHA-256", password)
        finally:
            zk.close()
        yield c, sasl_ports
    finally:
        c.stop()


def _eventually(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def _tool(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.delegation_tokens", "--command-config", str(config), *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TZ": "UTC"},
    )  # fmt: skip


def _config(tmp_path: Path, user: str) -> Path:
    path = tmp_path / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";\n'
    )
    return path


def _user(user: str) -> ClientSecurity:
    return ClientSecurity("SASL_PLAINTEXT", None, "SCRAM-SHA-256", user, PASSWORDS[user])


def _token(token_id: str, hmac: str, mechanism: str = "SCRAM-SHA-256") -> ClientSecurity:
    return ClientSecurity("SASL_PLAINTEXT", None, mechanism, token_id, hmac, token_auth=True)


def _connect(port: int, security: ClientSecurity) -> BrokerConnection:
    conn = BrokerConnection("127.0.0.1", port, "token-test", 10.0, security=security)
    conn.connect()
    return conn


def _produce(conn: BrokerConnection, topic: str, values: list[bytes]) -> int:
    batch = build_batch([(None, v, (), int(time.time() * 1000)) for v in values])
    answer = conn.send(0, 8, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
    })  # fmt: skip
    assert answer is not None
    return int(answer.responses[0].partition_responses[0].error_code)


def _fetch(conn: BrokerConnection, topic: str) -> tuple[int, list[bytes]]:
    answer = conn.send(1, 11, {
        "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 20, "current_leader_epoch": -1}]}],
        "forgotten_topics_data": [], "rack_id": "",
    })  # fmt: skip
    assert answer is not None
    part = answer.responses[0].partitions[0]
    records = bytes(part.records or b"")
    return int(part.error_code), [bytes(r.value) for r in decode_records(records)] if records else []


def _create(out: str) -> tuple[str, str]:
    """(token id, base64 HMAC) from the tool's --create output."""
    match = re.search(r"Created delegation token with tokenId : (\S+)", out)
    assert match, out
    token_id = match.group(1)
    row = [line for line in out.splitlines() if line.startswith(token_id)]
    assert row, out
    return token_id, row[0].split()[1]


@pytest.mark.timeout(240)
def test_token_lifecycle(cluster: tuple[KafkapyCluster, dict[int, int]], tmp_path: Path) -> None:
    c, ports = cluster
    alice_cfg = _config(tmp_path, "alice")
    topic = "tokens-topic"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    assert _eventually(lambda: topic in admin.list_topics(timeout=10).topics)
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    for f in admin.create_acls([
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)
        for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)
    ]).values():  # fmt: skip
        f.result(30)
    time.sleep(1.0)  # the ACL cache of both brokers follows the change notification

    # Create through broker 0 with the tool (alice authenticates with her password).
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[0]}", "--create", "--max-life-time-period", "-1",
                "--renewer-principal", "User:bob", config=alice_cfg)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(
        "Calling create token operation with renewers :[User:bob] , max-life-time-period :-1\n"
    ), res.stdout
    assert "TOKENID" in res.stdout and "User:alice" in res.stdout and "[User:bob]" in res.stdout
    token_id, hmac = _create(res.stdout)
    assert (
        base64.b64decode(hmac)
        == __import__("hmac").new(SECRET.encode(), token_id.encode(), "sha512").digest()
    )

    # Kafka's znode, and the token on broker 1 through the change notification.
    zk = KafkaZkClient(c.zookeeper_connect, 6000, 10000)
    zk.start()
    try:
        got = zk.get_data(f"/delegation_token/tokens/{token_id}")
        assert got is not None
        info = json.loads(got[0])
        assert info["owner"] == "User%3Aalice" and info["renewers"] == ["User%3Abob"] and info["version"] == 3
        assert info["maxTimestamp"] - info["issueTimestamp"] == 7 * 24 * 3600 * 1000
        assert info["expiryTimestamp"] - info["issueTimestamp"] == 24 * 3600 * 1000
        assert zk.get_children("/delegation_token/token_changes")
    finally:
        zk.close()

    # The token logs in on broker 1 (SCRAM-SHA-256 and -512) and acts as User:alice.
    t0 = time.monotonic()
    assert _eventually(lambda: _login_ok(ports[1], _token(token_id, hmac)))
    print(f"token usable on broker 1 {time.monotonic() - t0:.2f}s after creation on broker 0")
    with _connect(ports[leader], _token(token_id, hmac, "SCRAM-SHA-512")) as conn:
        versions = conn.api_versions()
        assert [versions.get(k) for k in (38, 39, 40, 41)] == [(0, 3), (0, 2), (0, 2), (0, 3)]
        assert _produce(conn, topic, [b"t1", b"t2", b"t3"]) == 0
        assert _fetch(conn, topic) == (0, [b"t1", b"t2", b"t3"])
        # A token-authenticated connection may not manage tokens.
        answer = conn.send(41, 3, {"owners": None})
        assert answer is not None and answer.error_code == UnsupportedByAuthenticationException.code
    with _connect(ports[leader], _user("bob")) as conn:
        assert _produce(conn, topic, [b"bob"]) == 29  # TOPIC_AUTHORIZATION_FAILED
    # A wrong HMAC, and the token's id without tokenauth, are refused.
    for bad in (_token(token_id, base64.b64encode(b"x" * 64).decode()),
                ClientSecurity("SASL_PLAINTEXT", None, "SCRAM-SHA-256", token_id, hmac)):  # fmt: skip
        assert not _login_ok(ports[1], bad)
    # PLAINTEXT may not manage tokens.
    with BrokerConnection("127.0.0.1", c.broker(0).port, "token-test", 10.0) as conn:
        answer = conn.send(38, 3, {"renewers": [], "max_lifetime_ms": -1})
        assert answer is not None and answer.error_code == UnsupportedByAuthenticationException.code

    # Describe lists it (alice, and bob as its renewer); carol sees nothing.
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[1]}", "--describe", config=alice_cfg)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(
        "Calling describe token operation for current user.\nTotal number of tokens : 1"
    )
    assert token_id in res.stdout and hmac in res.stdout
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[0]}", "--describe", "--owner-principal", "User:alice",
                config=_config(tmp_path, "bob"))  # fmt: skip
    assert (
        "Calling describe token operation for owners: [User:alice]" in res.stdout and token_id in res.stdout
    )
    res = _tool(
        "--bootstrap-server", f"127.0.0.1:{ports[0]}", "--describe", config=_config(tmp_path, "carol")
    )
    assert "Total number of tokens : 0" in res.stdout, res.stdout
    # Describe on DelegationToken:<tokenId> lets carol see it (CreateAcls as the super user).
    with BrokerConnection("127.0.0.1", c.broker(0).port, "token-test", 10.0) as conn:
        answer = conn.send(30, 1, {"creations": [{
            "resource_type": 6, "resource_name": token_id, "resource_pattern_type": 3, "principal": "User:carol",
            "host": "*", "operation": 8, "permission_type": 3,
        }]})  # fmt: skip
        assert answer is not None and answer.results[0].error_code == 0
    carol_cfg = _config(tmp_path, "carol")
    assert _eventually(lambda: token_id in _tool(
        "--bootstrap-server", f"127.0.0.1:{ports[0]}", "--describe", config=carol_cfg).stdout)  # fmt: skip

    # Renew: carol is neither owner nor renewer; bob (renewer) extends it.
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[0]}", "--renew", "--renew-time-period", "3600000",
                "--hmac", hmac, config=_config(tmp_path, "carol"))  # fmt: skip
    assert res.returncode == 1 and res.stderr.strip(), res
    with _connect(ports[0], _user("carol")) as conn:
        answer = conn.send(39, 2, {"hmac": base64.b64decode(hmac), "renew_period_ms": 1000})
        assert answer is not None and answer.error_code == DelegationTokenOwnerMismatchException.code
    before = time.time()
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[0]}", "--renew", "--renew-time-period", str(48 * 3600000),
                "--hmac", hmac, config=_config(tmp_path, "bob"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(
        f"Calling renew token operation with hmac :{hmac} , renew-time-period :{48 * 3600000}\n"
    )
    dates = {time.strftime("%Y-%m-%dT%H:%M", time.gmtime(t + 48 * 3600)) for t in (before, time.time())}
    assert any(res.stdout.endswith(f"Completed renew operation. New expiry date : {d}") for d in dates), (
        res.stdout
    )

    # Expire now: the next token login fails on both brokers; the token is gone from ZooKeeper.
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[1]}", "--expire", "--expiry-time-period", "-1",
                "--hmac", hmac, config=alice_cfg)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Completed expire operation. New expiry date : " in res.stdout
    for b in (0, 1):
        assert _eventually(lambda b=b: not _login_ok(ports[b], _token(token_id, hmac)))
    res = _tool("--bootstrap-server", f"127.0.0.1:{ports[0]}", "--renew", "--renew-time-period", "-1",
                "--hmac", hmac, config=alice_cfg)  # fmt: skip
    assert res.returncode == 1 and res.stderr.strip(), res


LIFETIME_MS = 6000


@pytest.mark.timeout(120)
def test_expired_tokens_are_removed_by_the_periodic_check(
    cluster: tuple[KafkapyCluster, dict[int, int]], tmp_path: Path
) -> None:
    c, ports = cluster
    with _connect(ports[0], _user("alice")) as conn:
        created = conn.send(38, 3, {"renewers": [], "max_lifetime_ms": LIFETIME_MS})
        assert created is not None and created.error_code == 0
        assert created.max_timestamp_ms - created.issue_timestamp_ms == LIFETIME_MS
        assert created.expiry_timestamp_ms == created.max_timestamp_ms  # capped by the max lifetime
    token_id, hmac = created.token_id, base64.b64encode(bytes(created.hmac)).decode()
    # Broker 1 learns the token from ZooKeeper's change notification: inside its lifetime even
    # on a loaded machine (a 1.5 s lifetime left little margin for that).
    assert _eventually(lambda: _login_ok(ports[1], _token(token_id, hmac)), 10)
    # Past its max lifetime: the login fails at once; the check (every 1 s) removes the znode.
    time.sleep(max(0.0, (created.max_timestamp_ms + 500) / 1000 - time.time()))
    assert not _login_ok(ports[0], _token(token_id, hmac))
    zk = KafkaZkClient(c.zookeeper_connect, 6000, 10000)
    zk.start()
    try:
        assert _eventually(lambda: zk.get_data(f"/delegation_token/tokens/{token_id}") is None, 15)
    finally:
        zk.close()
    with _connect(ports[0], _user("alice")) as conn:
        answer = conn.send(39, 2, {"hmac": bytes(created.hmac), "renew_period_ms": -1})
        assert answer is not None and answer.error_code == DelegationTokenNotFoundException.code


def _login_ok(port: int, security: ClientSecurity) -> bool:
    try:
        with _connect(port, security):
            return True
    except SaslAuthenticationException:
        return False
