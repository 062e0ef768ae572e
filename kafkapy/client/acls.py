"""CreateAcls (30), DescribeAcls (29), DeleteAcls (31) over the AdminClient: what Kafka's
Admin.createAcls / describeAcls / deleteAcls give kafkapy-acls. Any broker answers them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated.create_acls_request import AclCreation, CreateAclsRequest
from kafkapy.protocol.generated.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkapy.protocol.generated.describe_acls_request import DescribeAclsRequest
from kafkapy.server.security.acl import AclBinding, AclEntry, ResourcePattern
from kafkapy.server.security.acl_codes import (
    ANY,
    MATCH,
    OPERATION_CODES,
    OPERATIONS,
    PATTERN_TYPE_CODES,
    PATTERN_TYPES,
    PERMISSION_CODES,
    PERMISSIONS,
    RESOURCE_TYPE_CODES,
    RESOURCE_TYPES,
)
from kafkapy.server.security.acl_filter import AclBindingFilter, PatternFilter

_PATTERN_FILTER_CODES = {
    PatternFilter.ANY: ANY,
    PatternFilter.MATCH: MATCH,
    PatternFilter.LITERAL: 3,
    PatternFilter.PREFIXED: 4,
}


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    """The filter fields DescribeAclsRequest and DeleteAclsFilter share, by their spec names."""
    return {
        "resource_type_filter": ANY if f.resource_type is None else RESOURCE_TYPE_CODES[f.resource_type],
        "resource_name_filter": f.name,
        "pattern_type_filter": _PATTERN_FILTER_CODES[f.pattern],
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": ANY if f.operation is None else OPERATION_CODES[f.operation],
        "permission_type": ANY if f.permission is None else PERMISSION_CODES[f.permission],
    }


def _binding(resource_type: int, name: str, pattern_type: int, acl: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(RESOURCE_TYPES[resource_type], name, PATTERN_TYPES[pattern_type]),
        AclEntry(acl.principal, acl.host, OPERATIONS[acl.operation], PERMISSIONS[acl.permission_type]),
    )


def create_acls(admin: AdminClient, bindings: Sequence[AclBinding]) -> None:
    """Raises the first creation's error, as Admin.createAcls().all().get() does."""
    body = CreateAclsRequest(
        creations=[
            AclCreation(
                resource_type=RESOURCE_TYPE_CODES[b.pattern.resource_type],
                resource_name=b.pattern.name,
                resource_pattern_type=PATTERN_TYPE_CODES[b.pattern.pattern_type],
                principal=b.entry.principal,
                host=b.entry.host,
                operation=OPERATION_CODES[b.entry.operation],
                permission_type=PERMISSION_CODES[b.entry.permission],
            )
            for b in bindings
        ]
    )
    answer = admin.send_to_node(None, ApiKey.CREATE_ACLS, "createAcls", lambda v: body)
    for r in answer.results:
        raise_for_error(r.error_code, r.error_message)


def describe_acls(admin: AdminClient, f: AclBindingFilter) -> list[AclBinding]:
    answer = admin.send_to_node(
        None, ApiKey.DESCRIBE_ACLS, "describeAcls", lambda v: DescribeAclsRequest(**_filter_fields(f))
    )
    raise_for_error(answer.error_code, answer.error_message)
    return [
        _binding(r.resource_type, r.resource_name, r.pattern_type, a)
        for r in answer.resources
        for a in r.acls
    ]


def delete_acls(admin: AdminClient, filters: Sequence[AclBindingFilter]) -> list[AclBinding]:
    """The bindings deleted; raises the first filter's error."""
    body = DeleteAclsRequest(filters=[DeleteAclsFilter(**_filter_fields(f)) for f in filters])
    answer = admin.send_to_node(None, ApiKey.DELETE_ACLS, "deleteAcls", lambda v: body)
    deleted = []
    for r in answer.filter_results:
        raise_for_error(r.error_code, r.error_message)
        for m in r.matching_acls:
            raise_for_error(m.error_code, m.error_message)
            deleted.append(_binding(m.resource_type, m.resource_name, m.pattern_type, m))
    return deleted
