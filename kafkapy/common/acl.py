"""Kafka's ACL model: resource patterns, entries and bindings, as plain values (no decision, no
storage). The broker's authorizer decides with them (kafkapy.server.security.acl), ZooKeeper
stores them (kafkapy.zk.acl_znodes) and the tools print them; Kafka keeps them in
org.apache.kafka.common.acl and .resource for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(Enum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"


class PatternType(Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Operation(Enum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


class Permission(Enum):
    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclEntry:
    principal: str  # "User:alice" or "User:*"
    host: str  # an address or "*"
    operation: Operation
    permission: Permission

    def applies_to(self, principal: str, host: str) -> bool:
        """`principal` as its string, "User:alice"."""
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AclEntry
