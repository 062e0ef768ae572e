"""Kafka's ACL model and AclAuthorizer's decision, as pure functions (no ZooKeeper, no I/O).

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED; the literal name `*` is the
wildcard) to an entry (principal, host, operation, ALLOW/DENY). `authorize` decides as Kafka's
AclAuthorizer does: super users pass; without any ACL on the resource the answer is
`allow.everyone.if.no.acl.found`; a matching DENY wins over any ALLOW; an ALLOW of Read, Write,
Delete or Alter implies Describe, and AlterConfigs implies DescribeConfigs; `All` covers every
operation; principal `User:*` and host `*` match anyone. Storage is zk/acl_znodes.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The model lives in kafkapy.common.acl (ZooKeeper and the tools use it too); re-exported here.
from kafkapy.common.acl import (
    CLUSTER_NAME,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclEntry,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.principal import KafkaPrincipal

__all__ = [  # the model, re-exported for the broker's modules
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclEntry",
    "Operation",
    "PatternType",
    "Permission",
    "ResourcePattern",
    "ResourceType",
    "AuthorizerConfig",
    "authorize",
    "authorize_by_resource_type",
    "decide",
    "parse_super_users",
]

# What an ALLOW of each key operation also grants (Kafka's AclAuthorizer implied operations).
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    super_users: frozenset[str] = frozenset()  # "User:admin", from super.users (';'-separated)
    allow_everyone_if_no_acl_found: bool = False


def parse_super_users(value: str | None) -> frozenset[str]:
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


# Per operation, the ALLOW operations that grant it: itself, All, and what implies it.
_GRANTING: dict[Operation, frozenset[Operation]] = {
    op: frozenset({op, Operation.ALL}) | _IMPLIED_BY.get(op, frozenset()) for op in Operation
}


def authorize(
    config: AuthorizerConfig,
    acls: Iterable[AclBinding],
    principal: KafkaPrincipal,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
) -> bool:
    matching = [b.entry for b in acls if b.pattern.matches(resource_type, name)]
    return decide(config, matching, str(principal), host, operation)


def decide(
    config: AuthorizerConfig, entries: Iterable[AclEntry], principal: str, host: str, operation: Operation
) -> bool:
    """The decision over the entries of every ACL whose pattern matches the resource (one pass:
    this runs once per resource of each request)."""
    if principal in config.super_users:
        return True
    found = allowed = False
    granting = _GRANTING[operation]
    for e in entries:
        found = True
        if (e.principal == principal or e.principal == WILDCARD_PRINCIPAL) and (
            e.host == host or e.host == WILDCARD
        ):
            if e.permission is Permission.DENY:
                if e.operation is operation or e.operation is Operation.ALL:
                    return False
            elif e.operation in granting:
                allowed = True
    return allowed if found else config.allow_everyone_if_no_acl_found


def authorize_by_resource_type(
    config: AuthorizerConfig,
    acls: Iterable[AclBinding],
    principal: KafkaPrincipal,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
) -> bool:
    """Whether `operation` is allowed on at least one resource of the type (KIP-679's
    Authorizer.authorizeByResourceType): some ALLOW pattern for the principal is not wholly
    covered by a DENY (a DENY of the wildcard, or a literal or prefix DENY covering it)."""
    if str(principal) in config.super_users:
        return True
    of_type = [b for b in acls if b.pattern.resource_type is resource_type]
    if not of_type:
        return config.allow_everyone_if_no_acl_found
    applicable = [
        b for b in of_type
        if b.entry.applies_to(str(principal), host) and b.entry.operation in (operation, Operation.ALL)
    ]  # fmt: skip
    deny_literals = {
        b.pattern.name for b in applicable
        if b.entry.permission is Permission.DENY and b.pattern.pattern_type is PatternType.LITERAL
    }  # fmt: skip
    if WILDCARD in deny_literals:
        return False
    deny_prefixes = [
        b.pattern.name for b in applicable
        if b.entry.permission is Permission.DENY and b.pattern.pattern_type is PatternType.PREFIXED
    ]  # fmt: skip
    for b in applicable:
        if b.entry.permission is not Permission.ALLOW:
            continue
        name = b.pattern.name
        if any(name.startswith(p) for p in deny_prefixes):
            continue
        if b.pattern.pattern_type is PatternType.PREFIXED or name not in deny_literals:
            return True
    return False
