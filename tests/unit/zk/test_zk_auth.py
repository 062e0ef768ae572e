"""zookeeper.set.acl's pieces without a ZooKeeper: the JAAS `Client` credentials from KAFKA_OPTS,
Kafka's ZkData.defaultAcls, and the start-up refusal without credentials."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from kazoo.security import ACL, Id, Permissions

from kafkapy.common.jaas import JaasConfigError
from kafkapy.server.zk_connection import ZkSecurityError, ZooKeeperConnection
from kafkapy.zk.errors import ZkNoAuthError
from kafkapy.zk.zk_auth import (
    ZkCredentials,
    credentials_from_jaas,
    default_acls,
    login_config_path,
    tool_zk_security,
    zk_credentials,
)

JAAS = """
// the broker's identity for ZooKeeper
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin" password="admin-secret";
};
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka"
  password="kafka-secret";
};
"""

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
WORLD_ALL = ACL(Permissions.ALL, Id("world", "anyone"))


def test_client_section_credentials() -> None:
    assert credentials_from_jaas(JAAS) == ZkCredentials("kafka", "kafka-secret")
    assert credentials_from_jaas(JAAS, "Other") is None
    assert ZkCredentials("kafka", "kafka-secret").auth_data == [("digest", "kafka:kafka-secret")]
    with pytest.raises(JaasConfigError):
        credentials_from_jaas("Client { org.apache.zookeeper.server.auth.DigestLoginModule required; };")


@pytest.mark.timeout(10)
def test_credentials_from_kafka_opts(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    env = {"KAFKA_OPTS": f"-Xmx1G -Djava.security.auth.login.config={jaas} -Dfoo=bar"}
    assert login_config_path(env) == str(jaas)
    assert zk_credentials(env) == ZkCredentials("kafka", "kafka-secret")
    assert tool_zk_security(env) == {
        "credentials": ZkCredentials("kafka", "kafka-secret"),
        "secure_acls": True,
    }
    assert zk_credentials({}) is None
    assert tool_zk_security({}) == {"credentials": None, "secure_acls": False}
    other = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas} -Dzookeeper.sasl.clientconfig=Nope"}
    assert zk_credentials(other) is None
    with pytest.raises(JaasConfigError, match="Could not read"):
        zk_credentials({"KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path / 'missing'}"})


def test_default_acls_as_kafka_zk_data() -> None:
    for path in (
        "/brokers/ids/0",
        "/brokers/topics/t",
        "/config/topics/t",
        "/controller",
        "/config",
        "/kafka",
    ):
        assert default_acls(True, path) == [CREATOR_ALL, WORLD_READ], path
    for path in ("/config/users", "/config/users/alice", "/config/brokers/0", "/delegation_token/tokens/x"):
        assert default_acls(True, path) == [CREATOR_ALL], path
    assert default_acls(True, "/consumers") == [WORLD_ALL]
    assert default_acls(False, "/brokers/ids/0") == [WORLD_ALL]


def test_no_auth_error_names_the_path() -> None:
    assert str(ZkNoAuthError("/brokers/topics/t")).startswith(
        "KeeperErrorCode = NoAuth for /brokers/topics/t"
    )


@pytest.mark.timeout(10)
def test_set_acl_without_credentials_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    config = SimpleNamespace(zookeeper_set_acl=True)
    with pytest.raises(
        ZkSecurityError,
        match=r"^zookeeper.set.acl is true, but the verification of the JAAS "
        r"login file failed\.",
    ):
        ZooKeeperConnection(config).connect()
