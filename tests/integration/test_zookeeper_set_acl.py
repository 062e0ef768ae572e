"""zookeeper.set.acl=true against a real ZooKeeper: the broker, authenticated as the JAAS `Client`
section KAFKA_OPTS names, creates its znodes with Kafka's secure ACLs; an anonymous client can read
them but not write them; kafkapy-topics --zookeeper writes with the credentials and fails with
NoAuth without them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from kafkapy.testing import BrokerHandle, KafkapyCluster, free_port

JAAS = """Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka" password="kafka-secret";
};
"""


def run_tool(module: str, *args: str, kafka_opts: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
    if kafka_opts is not None:
        env["KAFKA_OPTS"] = kafka_opts
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=env,
    )


@pytest.mark.timeout(240)
def test_broker_and_tools_with_secure_acls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jaas = tmp_path / "kafka_jaas.conf"
    jaas.write_text(JAAS)
    kafka_opts = f"-Djava.security.auth.login.config={jaas}"
    monkeypatch.setenv("KAFKA_OPTS", kafka_opts)  # the brokers inherit it
    cluster = KafkapyCluster(tmp_path, 1, overrides={"zookeeper.set.acl": "true"})
    anonymous = authenticated = None
    try:
        cluster.start()
        server = cluster.zookeeper_connect
        created = run_tool(
            "kafkapy.tools.topics",
            "--zookeeper",
            server,
            "--create",
            "--topic",
            "t",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            kafka_opts=kafka_opts,
        )
        assert created.returncode == 0, created.stdout + created.stderr

        anonymous = KazooClient(hosts=server, timeout=10)
        anonymous.start(timeout=15)
        # ZooKeeper shows a digest ACL's hash only to a client holding that identity.
        authenticated = KazooClient(hosts=server, timeout=10, auth_data=[("digest", "kafka:kafka-secret")])
        authenticated.start(timeout=15)
        deadline = time.monotonic() + 30
        while anonymous.exists("/brokers/topics/t/partitions/0/state") is None:
            assert time.monotonic() < deadline, "the controller did not elect a leader for t-0"
            time.sleep(0.2)

        kafka = ACL(Permissions.ALL, Id("digest", make_digest_acl_credential("kafka", "kafka-secret")))
        world_read = ACL(Permissions.READ, Id("world", "anyone"))
        for path in (
            "/brokers/ids/0",
            "/brokers/topics/t",
            "/config/topics/t",
            "/controller",
            "/brokers/topics/t/partitions/0/state",
            "/cluster/id",
            "/config/changes",
        ):
            assert authenticated.get_acls(path)[0] == [kafka, world_read], path
        assert authenticated.get_acls("/config/users")[0] == [kafka]  # sensitive: not even world-readable
        assert authenticated.get_acls("/consumers")[0] == [ACL(Permissions.ALL, Id("world", "anyone"))]

        assert anonymous.get("/brokers/topics/t")[0]  # readable by all
        with pytest.raises(NoAuthError):
            anonymous.get("/config/users")
        with pytest.raises(NoAuthError):
            anonymous.set("/brokers/topics/t", b"{}")
        with pytest.raises(NoAuthError):
            anonymous.create("/config/topics/t/x")

        refused = run_tool(
            "kafkapy.tools.topics",
            "--zookeeper",
            server,
            "--create",
            "--topic",
            "t2",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            kafka_opts=None,
        )
        assert refused.returncode != 0
        assert "KeeperErrorCode = NoAuth for /config/topics/t2" in refused.stdout + refused.stderr
        assert anonymous.exists("/brokers/topics/t2") is None

        shell = run_tool(
            "kafkapy.tools.zookeeper_shell", server, "set", "/config/topics/t", "{}", kafka_opts=None
        )
        assert shell.returncode == 1
        assert "Insufficient permission : /config/topics/t" in shell.stderr
        shell = run_tool(
            "kafkapy.tools.zookeeper_shell",
            server,
            "create",
            "/config/topics/t/mine",
            "x",
            kafka_opts=kafka_opts,
        )
        assert shell.returncode == 0, shell.stderr

        configs = run_tool(
            "kafkapy.tools.configs",
            "--zookeeper",
            server,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "t",
            "--add-config",
            "retention.ms=1000",
            kafka_opts=None,
        )
        assert configs.returncode != 0 and "NoAuth" in configs.stdout + configs.stderr
        configs = run_tool(
            "kafkapy.tools.configs",
            "--zookeeper",
            server,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "t",
            "--add-config",
            "retention.ms=1000",
            kafka_opts=kafka_opts,
        )
        assert configs.returncode == 0, configs.stdout + configs.stderr
        assert authenticated.get_acls("/config/changes")[0] == [kafka, world_read]

        # A second broker with zookeeper.set.acl=true but no credentials refuses to start.
        monkeypatch.delenv("KAFKA_OPTS")
        refused_broker = BrokerHandle(
            1, free_port(), tmp_path / "broker-1", server, {"zookeeper.set.acl": "true"}
        )
        refused_broker.start()
        assert refused_broker.process is not None
        assert refused_broker.process.wait(timeout=60) != 0
        out = (refused_broker.logs / "kafkaServer.out").read_text()
        assert "zookeeper.set.acl is true, but the verification of the JAAS login file failed." in out
        assert authenticated.exists("/brokers/ids/1") is None
    finally:
        for client in (anonymous, authenticated):
            if client is not None:
                client.stop()
                client.close()
        cluster.stop()
