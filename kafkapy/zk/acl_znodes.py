"""ACLs in ZooKeeper, in Kafka's layout (ZkData.scala's ZkAclStore family).

- literal patterns:  /kafka-acl/<ResourceType>/<name>
- prefixed patterns: /kafka-acl-extended/prefixed/<ResourceType>/<prefix>
  both holding {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
  "operation":"Read","host":"*"}, ...]}
- change notifications, so every broker's cache follows:
  /kafka-acl-changes/acl_changes_<seq> holding "<ResourceType>:<name>" (literal), and
  /kafka-acl-extended-changes/acl_changes_<seq> holding
  {"version":1,"resourceType":"Topic","name":"x","patternType":"PREFIXED"}.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkapy.common.acl import (
    AclEntry,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.zk._json import decode_json, encode_json
from kafkapy.zk.errors import ZkDataError


class AclZNode:
    """The store root of a pattern type."""

    @staticmethod
    def path(pattern_type: PatternType) -> str:
        return "/kafka-acl" if pattern_type is PatternType.LITERAL else "/kafka-acl-extended/prefixed"


class ResourceZNode:
    @staticmethod
    def path(pattern: ResourcePattern) -> str:
        return f"{AclZNode.path(pattern.pattern_type)}/{pattern.resource_type.value}/{pattern.name}"

    @staticmethod
    def encode(entries: Iterable[AclEntry]) -> bytes:
        acls = [
            {
                "principal": e.principal,
                "permissionType": e.permission.value,
                "operation": e.operation.value,
                "host": e.host,
            }
            for e in sorted(
                entries, key=lambda e: (e.principal, e.host, e.operation.value, e.permission.value)
            )
        ]
        return encode_json({"version": 1, "acls": acls})

    @staticmethod
    def decode(data: bytes | None) -> set[AclEntry]:
        js = decode_json(data)
        if js is None:
            return set()
        try:
            return {
                AclEntry(
                    a["principal"], a["host"], Operation(a["operation"]), Permission(a["permissionType"])
                )
                for a in js["acls"]
            }
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"Invalid ACL znode data: {e}") from e


class AclChangeNotificationZNode:
    SEQUENCE_PREFIX = "acl_changes_"

    @staticmethod
    def path(pattern_type: PatternType) -> str:
        return "/kafka-acl-changes" if pattern_type is PatternType.LITERAL else "/kafka-acl-extended-changes"

    @classmethod
    def create_path(cls, pattern_type: PatternType) -> str:
        return f"{cls.path(pattern_type)}/{cls.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(pattern: ResourcePattern) -> bytes:
        if pattern.pattern_type is PatternType.LITERAL:
            return f"{pattern.resource_type.value}:{pattern.name}".encode()
        return encode_json(
            {"version": 1, "resourceType": pattern.resource_type.value, "name": pattern.name,
             "patternType": pattern.pattern_type.value}
        )  # fmt: skip

    @staticmethod
    def decode(pattern_type: PatternType, data: bytes) -> ResourcePattern:
        try:
            if pattern_type is PatternType.LITERAL:
                kind, _, name = data.decode().partition(":")
                return ResourcePattern(ResourceType(kind), name)
            js = decode_json(data)
            return ResourcePattern(
                ResourceType(js["resourceType"]), js["name"], PatternType(js["patternType"])
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"Invalid ACL change notification: {e}") from e
