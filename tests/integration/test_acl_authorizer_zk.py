"""AclAuthorizer against a real ZooKeeper: two authorizers (two brokers' sessions) share ACLs.
Invariants: an ACL added through one takes effect on the other within seconds (through
/kafka-acl-changes and /kafka-acl-extended-changes), the znodes hold Kafka's JSON, deny wins,
and removing the last ACL removes the resource's znode and the permission everywhere."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkapy.server.security.acl import (
    AclEntry,
    AuthorizerConfig,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.acl_authorizer import AclAuthorizer
from kafkapy.server.security.principal import KafkaPrincipal
from kafkapy.zk.kafka_zk_client import KafkaZkClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zk_server import zookeeper_server  # noqa: E402

ALICE = KafkaPrincipal("User", "alice")


@pytest.fixture(scope="module")
def zk_connect() -> Iterator[str]:
    with zookeeper_server() as zk:
        yield zk.connect_string


def _eventually(check: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.timeout(90)
def test_acls_written_on_one_broker_apply_on_the_other(zk_connect: str) -> None:
    sessions = [KafkaZkClient(zk_connect, 6000, 10000) for _ in range(2)]
    for s in sessions:
        s.start()
    try:
        one, two = (AclAuthorizer(AuthorizerConfig(), s) for s in sessions)
        one.startup()
        two.startup()
        orders = ResourcePattern(ResourceType.TOPIC, "orders")
        read = AclEntry("User:alice", "*", Operation.READ, Permission.ALLOW)
        assert not two.authorize(ALICE, "10.0.0.1", Operation.READ, ResourceType.TOPIC, "orders")

        one.add_acls(orders, [read])
        assert _eventually(
            lambda: two.authorize(ALICE, "10.0.0.1", Operation.READ, ResourceType.TOPIC, "orders")
        )
        data = sessions[1].get_data("/kafka-acl/Topic/orders")
        assert data is not None and json.loads(data[0]) == {
            "version": 1,
            "acls": [
                {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
            ],
        }
        assert sessions[1].get_children("/kafka-acl-changes")

        deny = AclEntry("User:alice", "10.0.0.9", Operation.ALL, Permission.DENY)
        two.add_acls(ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED), [deny])
        assert _eventually(
            lambda: not one.authorize(ALICE, "10.0.0.9", Operation.READ, ResourceType.TOPIC, "orders")
        )
        assert one.authorize(ALICE, "10.0.0.1", Operation.READ, ResourceType.TOPIC, "orders")
        assert sessions[0].get_children("/kafka-acl-extended-changes")

        one.remove_acls(orders, [read])
        assert sessions[0].get_data("/kafka-acl/Topic/orders") is None
        assert _eventually(
            lambda: not two.authorize(ALICE, "10.0.0.1", Operation.READ, ResourceType.TOPIC, "orders")
        )

        # A third authorizer starting now loads what is there.
        three = AclAuthorizer(AuthorizerConfig(), sessions[1])
        three.startup()
        assert {b.entry for b in three.acls()} == {deny}
    finally:
        for s in sessions:
            s.close()
