"""kafkapy-acls against a real broker with allow.everyone.if.no.acl.found=true.

Invariants: ACLs added through `--bootstrap-server` (a SASL admin from `--command-config`) and
through `--authorizer-properties zookeeper.connect=...` are listed with AclCommand's lines and
removed again; the broker enforces what the tool wrote (its cache follows the ZooKeeper change
notifications); a resource without any ACL is open to everyone while allow.everyone is on, and
closed to everyone else the moment it has one."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster, free_port

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, str, Path]]:
    ports: dict[str, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        ports["sasl"] = free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{ports['sasl']}",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }

    base = tmp_path_factory.mktemp("aclcmd")
    c = KafkapyCluster(
        base,
        1,
        {
            # The older name of the same authorizer.
            "authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer",
            "super.users": "User:admin",
            "allow.everyone.if.no.acl.found": "true",
            "auto.create.topics.enable": "false",
        },
        overrides,
    )
    config = base / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n'
    )
    try:
        c.start()
        yield c, f"127.0.0.1:{ports['sasl']}", config
    finally:
        c.stop()


def acls(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.acls", *args],
        capture_output=True, text=True, timeout=60, input=stdin,
    )  # fmt: skip


def _topic(cluster: KafkapyCluster) -> str:
    name = f"cmd-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(60)
    return name


def _anonymous_produce(cluster: KafkapyCluster, topic: str) -> int:
    """The delivery error code of one PLAINTEXT (User:ANONYMOUS) message; 0 when delivered."""
    results: list[int] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 10000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: results.append(err.code() if err else 0))
    producer.flush(20)
    return results[0] if results else -1


def _eventually_code(cluster: KafkapyCluster, topic: str, code: int) -> bool:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if _anonymous_produce(cluster, topic) == code:
            return True
        time.sleep(0.3)
    return False


@pytest.mark.timeout(180)
def test_add_list_remove_through_bootstrap_server(cluster: tuple[KafkapyCluster, str, Path]) -> None:
    c, sasl, config = cluster
    topic = _topic(c)
    # No ACL on the topic: allow.everyone.if.no.acl.found lets User:ANONYMOUS write.
    assert _anonymous_produce(c, topic) == 0
    base = ["--bootstrap-server", sasl, "--command-config", str(config)]
    added = acls(*base, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                 "--operation", "Write", "--topic", topic)  # fmt: skip
    assert added.returncode == 0, added.stderr
    pattern = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    read = "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    write = "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"
    assert added.stdout == (
        f"Adding ACLs for resource `{pattern}`: \n {read}\n{write} \n\n"
        f"Current ACLs for resource `{pattern}`: \n {read}\n{write} \n\n"
    )
    # The topic has ACLs now: allow.everyone no longer applies to it.
    assert _eventually_code(c, topic, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    listed = acls(*base, "--list", "--topic", topic)
    assert (
        listed.returncode == 0
        and listed.stdout == f"Current ACLs for resource `{pattern}`: \n {read}\n{write} \n\n"
    )
    # Remove one entry (answer 'y' to AclCommand's question), then the rest with --force.
    removed = acls(*base, "--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic,
                   stdin="y\n")  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("Are you sure you want to remove ACLs: \n \t(principal=User:alice, host=*, "
                                     "operation=WRITE, permissionType=ALLOW) \n from resource filter "
                                     f"`ResourcePatternFilter(resourceType=TOPIC, name={topic}, patternType=LITERAL)`? (y/n)")  # fmt: skip
    assert (
        acls(*base, "--list", "--topic", topic).stdout
        == f"Current ACLs for resource `{pattern}`: \n {read} \n\n"
    )
    assert acls(*base, "--remove", "--topic", topic, "--force").returncode == 0
    assert acls(*base, "--list", "--topic", topic).stdout == ""
    assert _eventually_code(c, topic, 0)


@pytest.mark.timeout(180)
def test_add_list_remove_through_zookeeper(cluster: tuple[KafkapyCluster, str, Path]) -> None:
    c, sasl, config = cluster
    topic = _topic(c)
    group = f"g-{topic}"
    zk = ["--authorizer-properties", f"zookeeper.connect={c.zookeeper_connect}"]
    added = acls(
        *zk, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", topic, "--group", group
    )
    assert added.returncode == 0, added.stderr
    assert (
        f"Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name={group}, patternType=LITERAL)`"
        in added.stdout
    )
    # The broker follows the notification the tool wrote: ANONYMOUS is refused on the topic now.
    assert _eventually_code(c, topic, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    # What the ZooKeeper path wrote, the broker describes.
    listed = acls("--bootstrap-server", sasl, "--command-config", str(config), "--list", "--topic", topic)
    assert "operation=READ" in listed.stdout and "operation=DESCRIBE" in listed.stdout
    # A prefixed pattern, listed through a MATCH filter for a name under it.
    prefix = f"pre-{uuid.uuid4().hex[:6]}"
    assert acls(*zk, "--add", "--deny-principal", "User:alice", "--deny-host", "10.0.0.1", "--operation", "Describe",
                "--topic", prefix, "--resource-pattern-type", "prefixed").returncode == 0  # fmt: skip
    matched = acls(*zk, "--list", "--topic", prefix + "-x", "--resource-pattern-type", "match")
    assert matched.stdout == (
        f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={prefix}, patternType=PREFIXED)`: \n"
        " \t(principal=User:alice, host=10.0.0.1, operation=DESCRIBE, permissionType=DENY) \n\n"
    )
    for args in (
        ["--topic", topic],
        ["--group", group],
        ["--topic", prefix, "--resource-pattern-type", "prefixed"],
    ):
        assert acls(*zk, "--remove", "--force", *args).returncode == 0
    assert acls(*zk, "--list", "--topic", topic).stdout == ""
    assert _eventually_code(c, topic, 0)


@pytest.mark.timeout(60)
def test_usage_errors() -> None:
    both = acls(
        "--bootstrap-server", "127.0.0.1:1", "--authorizer-properties", "zookeeper.connect=x", "--list"
    )
    assert both.returncode == 1
    assert "Only one of --authorizer-properties or --bootstrap-server must be specified" in both.stderr
    no_action = acls("--bootstrap-server", "127.0.0.1:1", "--topic", "t")
    assert no_action.returncode == 1 and "exactly one action" in no_action.stderr
    bad_op = acls("--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "User:a", "--operation",
                  "IdempotentWrite", "--topic", "t")  # fmt: skip
    assert bad_op.returncode == 1 and "ResourceType TOPIC only supports operations" in bad_op.stderr


@pytest.mark.timeout(120)
def test_kafka_python_admin_manages_acls(cluster: tuple[KafkapyCluster, str, Path]) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    c, sasl, _ = cluster
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="admin", sasl_plain_password="admin-secret")  # fmt: skip
    try:
        acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))  # fmt: skip
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        wanted = ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.MATCH))  # fmt: skip
        acls, error = admin.describe_acls(wanted)
        assert error.errno == 0 and [(a.principal, a.operation) for a in acls] == [
            ("User:alice", ACLOperation.READ)
        ]
        deleted = admin.delete_acls([wanted])
        assert [len(matched) for _, matched, _ in deleted] == [1]
        assert admin.describe_acls(wanted)[0] == []
    finally:
        admin.close()
