"""The ACL pieces around the decision: DescribeAcls/DeleteAcls filters, KIP-679's
authorize-by-resource-type, the wire codes, and what the handlers' helper answers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafkapy.server.apis.auth_helper import authorized_operations
from kafkapy.server.network.request_channel import Request
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
    authorize_by_resource_type,
)
from kafkapy.server.security.acl_codes import (
    OPERATION_CODES,
    OPERATIONS,
    PATTERN_TYPE_CODES,
    PATTERN_TYPES,
    RESOURCE_TYPE_CODES,
    RESOURCE_TYPES,
)
from kafkapy.server.security.acl_filter import AclBindingFilter, PatternFilter
from kafkapy.server.security.authorizer import check_authorizer_class
from kafkapy.server.security.principal import KafkaPrincipal

ALICE = KafkaPrincipal("User", "alice")
T = ResourceType.TOPIC
ALLOW, DENY = Permission.ALLOW, Permission.DENY

pytestmark = pytest.mark.timeout(30)


def binding(name: str, pattern: PatternType = PatternType.LITERAL, principal: str = "User:alice",
            op: Operation = Operation.READ, perm: Permission = ALLOW, kind: ResourceType = T) -> AclBinding:  # fmt: skip
    return AclBinding(ResourcePattern(kind, name, pattern), AclEntry(principal, "*", op, perm))


LITERAL = binding("orders")
WILDCARD = binding("*")
PREFIX = binding("ord", PatternType.PREFIXED)
OTHER = binding("payments")
GROUP = binding("orders", kind=ResourceType.GROUP)
ALL = [LITERAL, WILDCARD, PREFIX, OTHER, GROUP]


def test_match_filter_selects_every_pattern_that_applies_to_one_name() -> None:
    f = AclBindingFilter(T, "orders", PatternFilter.MATCH)
    assert f.select(ALL) == [LITERAL, WILDCARD, PREFIX]


def test_literal_and_prefixed_filters_select_exactly_that_pattern() -> None:
    assert AclBindingFilter(T, "orders", PatternFilter.LITERAL).select(ALL) == [LITERAL]
    assert AclBindingFilter(T, "ord", PatternFilter.PREFIXED).select(ALL) == [PREFIX]
    # The wildcard is a literal pattern named "*", matched only by that name.
    assert AclBindingFilter(T, "*", PatternFilter.LITERAL).select(ALL) == [WILDCARD]


def test_any_filter_and_entry_fields() -> None:
    assert AclBindingFilter(pattern=PatternFilter.ANY).select(ALL) == ALL
    assert AclBindingFilter(None, "orders", PatternFilter.ANY).select(ALL) == [LITERAL, GROUP]
    denied = binding("orders", perm=DENY, principal="User:bob")
    f = AclBindingFilter(T, None, PatternFilter.ANY, principal="User:bob", permission=DENY)
    assert f.select([*ALL, denied]) == [denied]
    assert AclBindingFilter(T, None, PatternFilter.ANY, operation=Operation.WRITE).select(ALL) == []


def test_authorize_by_resource_type_needs_an_allow_not_covered_by_a_deny() -> None:
    config = AuthorizerConfig()
    w = Operation.WRITE

    def check(acls: list[AclBinding]) -> bool:
        return authorize_by_resource_type(config, acls, ALICE, "10.0.0.1", w, T)

    assert check([binding("orders", op=w)])
    assert check([binding("orders", op=Operation.ALL)])
    assert not check([binding("orders", op=Operation.READ)])
    # Denied on that very topic, or on a prefix covering it, or on every topic.
    assert not check([binding("orders", op=w), binding("orders", op=w, perm=DENY)])
    assert not check([binding("orders", op=w), binding("or", PatternType.PREFIXED, op=w, perm=DENY)])
    assert not check([binding("orders", op=w), binding("*", op=w, perm=DENY)])
    # A deny elsewhere leaves the allowed topic.
    assert check([binding("orders", op=w), binding("payments", op=w, perm=DENY)])
    assert authorize_by_resource_type(AuthorizerConfig(frozenset({"User:alice"})), [], ALICE, "h", w, T)
    assert authorize_by_resource_type(
        AuthorizerConfig(allow_everyone_if_no_acl_found=True), [], ALICE, "h", w, T
    )


def test_wire_codes_round_trip_and_are_kafkas() -> None:
    assert (
        RESOURCE_TYPE_CODES[ResourceType.TOPIC] == 2
        and RESOURCE_TYPE_CODES[ResourceType.TRANSACTIONAL_ID] == 5
    )
    assert OPERATION_CODES[Operation.READ] == 3 and OPERATION_CODES[Operation.IDEMPOTENT_WRITE] == 12
    assert PATTERN_TYPE_CODES[PatternType.PREFIXED] == 4
    assert all(RESOURCE_TYPES[c] is t for t, c in RESOURCE_TYPE_CODES.items())
    assert all(OPERATIONS[c] is o for o, c in OPERATION_CODES.items())
    assert all(PATTERN_TYPES[c] is p for p, c in PATTERN_TYPE_CODES.items())


@dataclass
class _FakeApis:
    """Just what auth_helper reads: the authorizer."""

    authorizer: object


class _CacheOnly:
    def __init__(self, acls: list[AclBinding], config: AuthorizerConfig | None = None) -> None:
        self.acls, self.config = acls, config or AuthorizerConfig()

    def authorize(
        self, principal: KafkaPrincipal, host: str, op: Operation, kind: ResourceType, name: str
    ) -> bool:
        return authorize(self.config, self.acls, principal, host, op, kind, name)

    def authorize_by_resource_type(self, principal: KafkaPrincipal, host: str, op: Operation,
                                   kind: ResourceType) -> bool:  # fmt: skip
        return authorize_by_resource_type(self.config, self.acls, principal, host, op, kind)


def _request() -> Request:
    return Request(None, memoryview(b""), 0, "c", "10.0.0.1", "SASL_PLAINTEXT", ALICE)


def test_authorized_operations_bits_follow_kafkas_operation_codes() -> None:
    apis = _FakeApis(
        _CacheOnly([binding("orders", op=Operation.READ), binding("orders", op=Operation.ALTER_CONFIGS)])
    )
    bits = authorized_operations(apis, _request(), T, "orders")  # type: ignore[arg-type]
    # Read, Describe (implied by Read), AlterConfigs and DescribeConfigs (implied by it).
    assert bits == (1 << 3) | (1 << 8) | (1 << 11) | (1 << 10)
    # Without an authorizer: every operation the resource type supports (Kafka's answer).
    group_bits = authorized_operations(_FakeApis(None), _request(), ResourceType.GROUP, "g")  # type: ignore[arg-type]
    assert group_bits == (1 << 3) | (1 << 8) | (1 << 6)


def test_authorizer_class_names() -> None:
    assert check_authorizer_class("kafka.security.authorizer.AclAuthorizer")
    assert check_authorizer_class("kafka.security.auth.SimpleAclAuthorizer")
    assert not check_authorizer_class("")
    try:
        check_authorizer_class("com.example.MyAuthorizer")
    except ValueError as e:
        assert "com.example.MyAuthorizer" in str(e)
    else:
        raise AssertionError("an unknown authorizer class must stop the broker")


class _MemoryZk:
    """get_children/get_data over a dict of paths: enough for AclAuthorizer.load()."""

    def __init__(self, bindings: list[AclBinding]) -> None:
        from kafkapy.zk.acl_znodes import ResourceZNode

        by_pattern: dict[ResourcePattern, set[AclEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        self.data = {ResourceZNode.path(p): ResourceZNode.encode(es) for p, es in by_pattern.items()}

    def get_children(self, path: str) -> list[str]:
        prefix = path + "/"
        return [k[len(prefix) :] for k in self.data if k.startswith(prefix) and "/" not in k[len(prefix) :]]

    def get_data(self, path: str) -> tuple[bytes, None] | None:
        got = self.data.get(path)
        return None if got is None else (got, None)


def test_the_authorizers_name_index_decides_as_the_pure_function() -> None:
    """Random ACL sets: the cache's indexed lookup (literal, wildcard, each prefix of the name)
    gives the same answers as matching every ACL's pattern."""
    import random

    from kafkapy.server.security.acl_authorizer import AclAuthorizer

    rng = random.Random(16)
    names = ["a", "ab", "abc", "b", "*", "abd"]
    principals = ["User:alice", "User:bob", "User:*"]
    for _ in range(200):
        acls = [
            AclBinding(
                ResourcePattern(
                    rng.choice([T, ResourceType.GROUP]), rng.choice(names), rng.choice(list(PatternType))
                ),
                AclEntry(
                    rng.choice(principals),
                    rng.choice(["*", "10.0.0.1", "10.0.0.2"]),
                    rng.choice(list(Operation)),
                    rng.choice(list(Permission)),
                ),
            )  # fmt: skip
            for _ in range(rng.randint(0, 6))
        ]
        config = AuthorizerConfig(allow_everyone_if_no_acl_found=rng.random() < 0.5)
        authorizer = AclAuthorizer(config, _MemoryZk(acls))
        authorizer.load()
        for _ in range(10):
            who = KafkaPrincipal("User", rng.choice(["alice", "bob", "carol"]))
            host, op, kind = (
                rng.choice(["10.0.0.1", "10.0.0.2"]),
                rng.choice(list(Operation)),
                rng.choice([T, ResourceType.GROUP]),
            )
            name = rng.choice(names[:-2] + ["abcd", "x"])
            expected = authorize(config, acls, who, host, op, kind, name)
            assert authorizer.authorize(who, host, op, kind, name) is expected, (
                acls,
                who,
                host,
                op,
                kind,
                name,
            )
