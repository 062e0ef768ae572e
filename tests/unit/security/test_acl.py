"""AclAuthorizer's decision table and the ACL znodes' Kafka JSON, without ZooKeeper."""

from __future__ import annotations

import json

import pytest

from kafkapy.server.security.acl import (
    AclBinding,
    AclEntry,
    AuthorizerConfig,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    authorize,
    parse_super_users,
)
from kafkapy.server.security.principal import KafkaPrincipal
from kafkapy.zk.acl_znodes import AclChangeNotificationZNode, ResourceZNode

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
T, G = ResourceType.TOPIC, ResourceType.GROUP
R, W, D = Operation.READ, Operation.WRITE, Operation.DESCRIBE
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acl(name: str, principal: str, op: Operation, perm: Permission = ALLOW, host: str = "*",
        pattern: PatternType = PatternType.LITERAL, kind: ResourceType = T) -> AclBinding:  # fmt: skip
    return AclBinding(ResourcePattern(kind, name, pattern), AclEntry(principal, host, op, perm))


def check(acls: list[AclBinding], principal: KafkaPrincipal, op: Operation, name: str = "orders",
          host: str = "10.0.0.1", config: AuthorizerConfig | None = None, kind: ResourceType = T) -> bool:  # fmt: skip
    return authorize(config or AuthorizerConfig(), acls, principal, host, op, kind, name)


def test_no_acl_follows_allow_everyone_if_no_acl_found() -> None:
    assert not check([], ALICE, R)
    assert check([], ALICE, R, config=AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    # Another resource's ACLs do not count as ACLs on this one.
    assert not check([acl("payments", "User:alice", R)], ALICE, R)


def test_allow_matches_principal_operation_and_host() -> None:
    acls = [acl("orders", "User:alice", R, host="10.0.0.1")]
    assert check(acls, ALICE, R)
    assert not check(acls, BOB, R)
    assert not check(acls, ALICE, W)
    assert not check(acls, ALICE, R, host="10.0.0.2")
    # ACLs exist on the resource: allow.everyone no longer applies to others.
    assert not check(acls, BOB, R, config=AuthorizerConfig(allow_everyone_if_no_acl_found=True))


def test_deny_wins_over_allow_and_all_covers_every_operation() -> None:
    acls = [acl("orders", "User:*", Operation.ALL), acl("orders", "User:bob", W, DENY)]
    assert check(acls, BOB, R) and check(acls, ALICE, W)
    assert not check(acls, BOB, W)
    assert not check([acl("orders", "User:alice", R), acl("*", "User:alice", Operation.ALL, DENY)], ALICE, R)


def test_implied_describe_and_describe_configs() -> None:
    for op in (R, W, Operation.DELETE, Operation.ALTER):
        assert check([acl("orders", "User:alice", op)], ALICE, D)
    assert check([acl("orders", "User:alice", Operation.ALTER_CONFIGS)], ALICE, Operation.DESCRIBE_CONFIGS)
    assert not check([acl("orders", "User:alice", D)], ALICE, R)
    # A deny of Read does not deny Describe.
    assert check([acl("orders", "User:alice", W), acl("orders", "User:alice", R, DENY)], ALICE, D)


def test_wildcard_and_prefixed_patterns() -> None:
    assert check([acl("*", "User:alice", R)], ALICE, R, name="anything")
    prefixed = [acl("ord", "User:alice", R, pattern=PatternType.PREFIXED)]
    assert check(prefixed, ALICE, R, name="orders")
    assert not check(prefixed, ALICE, R, name="payments")
    assert not check([acl("ord", "User:alice", R)], ALICE, R, name="orders")  # literal is exact
    assert not check([acl("orders", "User:alice", R, kind=G)], ALICE, R)  # another resource type


def test_super_users_bypass() -> None:
    config = AuthorizerConfig(super_users=parse_super_users("User:admin; User:alice"))
    assert check([acl("orders", "User:alice", R, DENY)], ALICE, R, config=config)
    assert not check([], BOB, R, config=config)


def test_resource_znode_is_kafkas_json() -> None:
    pattern = ResourcePattern(T, "orders")
    assert ResourceZNode.path(pattern) == "/kafka-acl/Topic/orders"
    assert (
        ResourceZNode.path(ResourcePattern(G, "app-", PatternType.PREFIXED))
        == "/kafka-acl-extended/prefixed/Group/app-"
    )
    entries = {AclEntry("User:alice", "*", R, ALLOW), AclEntry("User:bob", "10.0.0.1", W, DENY)}
    data = ResourceZNode.encode(entries)
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
            {"principal": "User:bob", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.1"},
        ],
    }
    assert ResourceZNode.decode(data) == entries
    assert ResourceZNode.decode(None) == set()


@pytest.mark.parametrize("pattern_type", list(PatternType))
def test_change_notifications_round_trip(pattern_type: PatternType) -> None:
    pattern = ResourcePattern(T, "orders", pattern_type)
    data = AclChangeNotificationZNode.encode(pattern)
    if pattern_type is PatternType.LITERAL:
        assert data == b"Topic:orders"
        assert AclChangeNotificationZNode.create_path(pattern_type) == "/kafka-acl-changes/acl_changes_"
    assert AclChangeNotificationZNode.decode(pattern_type, data) == pattern
