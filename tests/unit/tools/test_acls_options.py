"""kafkapy-acls without a broker: what the options ask for and AclCommand's text forms."""

from __future__ import annotations

import pytest

from kafkapy.server.security.acl import (
    AclEntry,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.acl_filter import AclBindingFilter, PatternFilter
from kafkapy.tools.acls import Options, UsageError, entry_text, filter_text, parse_operation, pattern_text

pytestmark = pytest.mark.timeout(30)


def options(**kw: object) -> Options:
    defaults: dict[str, object] = dict(
        topics=(), groups=(), cluster=False, transactional_ids=(), pattern_type="literal", allow_principals=(),
        deny_principals=(), allow_hosts=(), deny_hosts=(), operations=(), producer=False, consumer=False,
        idempotent=False,
    )  # fmt: skip
    defaults.update(kw)
    return Options(**defaults)  # type: ignore[arg-type]


def test_operation_names_as_kafka_parses_them() -> None:
    assert parse_operation("Read") is Operation.READ
    assert (
        parse_operation("IdempotentWrite")
        is parse_operation("IDEMPOTENT_WRITE")
        is Operation.IDEMPOTENT_WRITE
    )
    assert parse_operation("describe-configs") is Operation.DESCRIBE_CONFIGS
    with pytest.raises(UsageError):
        parse_operation("Fly")


def test_producer_and_consumer_shortcuts() -> None:
    got = options(topics=("t",), groups=("g",), transactional_ids=("tx",), allow_principals=("User:a",),
                  producer=True, consumer=True, idempotent=True).requested_acls()  # fmt: skip
    ops = {p.resource_type: {e.operation for e in es} for p, es in got.items()}
    assert ops == {
        ResourceType.TOPIC: {Operation.WRITE, Operation.DESCRIBE, Operation.CREATE, Operation.READ},
        ResourceType.TRANSACTIONAL_ID: {Operation.WRITE, Operation.DESCRIBE},
        ResourceType.CLUSTER: {Operation.IDEMPOTENT_WRITE},
        ResourceType.GROUP: {Operation.READ},
    }


def test_principals_hosts_and_default_operation() -> None:
    got = options(topics=("t",), allow_principals=("User:a",), deny_principals=("User:b",),
                  deny_hosts=("10.0.0.1", "10.0.0.2")).requested_acls()  # fmt: skip
    assert got == {
        ResourcePattern(ResourceType.TOPIC, "t"): [
            AclEntry("User:a", "*", Operation.ALL, Permission.ALLOW),
            AclEntry("User:b", "10.0.0.1", Operation.ALL, Permission.DENY),
            AclEntry("User:b", "10.0.0.2", Operation.ALL, Permission.DENY),
        ]
    }


def test_an_operation_the_resource_type_does_not_support_is_refused() -> None:
    with pytest.raises(UsageError, match="ResourceType GROUP only supports operations"):
        options(groups=("g",), allow_principals=("User:a",), operations=("Write",)).requested_acls()


def test_filters_of_list_and_remove() -> None:
    got = options(topics=("ord",), cluster=True, pattern_type="match").filters()
    assert got == [
        AclBindingFilter(ResourceType.TOPIC, "ord", PatternFilter.MATCH),
        AclBindingFilter(ResourceType.CLUSTER, "kafka-cluster", PatternFilter.LITERAL),
    ]


def test_text_forms_are_javas_to_string() -> None:
    assert pattern_text(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PatternType.PREFIXED)) == (
        "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=PREFIXED)"
    )
    assert entry_text(AclEntry("User:a", "*", Operation.IDEMPOTENT_WRITE, Permission.DENY)) == (
        "(principal=User:a, host=*, operation=IDEMPOTENT_WRITE, permissionType=DENY)"
    )
    assert filter_text(AclBindingFilter(pattern=PatternFilter.ANY)) == (
        "ResourcePatternFilter(resourceType=ANY, name=null, patternType=ANY)"
    )
