"""AclBindingFilter: which ACLs a DescribeAcls or DeleteAcls filter (or kafkapy-acls) selects.

Kafka's filter semantics: each field is a value or "any" (None here); the pattern type filter is
a pattern type, ANY (every pattern) or MATCH: the patterns that apply to one named resource (the
literal name, the wildcard `*`, and every prefix pattern the name starts with).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from kafkapy.server.security.acl import (
    WILDCARD,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)


class PatternFilter(Enum):
    ANY = "ANY"
    MATCH = "MATCH"
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    resource_type: ResourceType | None = None
    name: str | None = None
    pattern: PatternFilter = PatternFilter.LITERAL
    principal: str | None = None
    host: str | None = None
    operation: Operation | None = None  # None: ANY
    permission: Permission | None = None  # None: ANY

    def matches(self, binding: AclBinding) -> bool:
        p, e = binding.pattern, binding.entry
        if self.resource_type is not None and p.resource_type is not self.resource_type:
            return False
        if not self._name_matches(p.name, p.pattern_type):
            return False
        return (
            (self.principal is None or e.principal == self.principal)
            and (self.host is None or e.host == self.host)
            and (self.operation is None or e.operation is self.operation)
            and (self.permission is None or e.permission is self.permission)
        )

    def _name_matches(self, name: str, pattern_type: PatternType) -> bool:
        if self.pattern is PatternFilter.ANY:
            return self.name is None or self.name == name
        if self.pattern is PatternFilter.MATCH:
            if self.name is None:
                return True
            if pattern_type is PatternType.PREFIXED:
                return self.name.startswith(name)
            return name in (self.name, WILDCARD)
        if pattern_type.value != self.pattern.value:
            return False
        return self.name is None or self.name == name

    def select(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        return [b for b in bindings if self.matches(b)]
