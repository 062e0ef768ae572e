"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): the ACLs of the AclAuthorizer.

Describing needs Describe on the cluster, creating and deleting need Alter on it
(CLUSTER_AUTHORIZATION_FAILED). Without an authorizer every answer is SECURITY_DISABLED, as in
Kafka. Changes are written to ZooKeeper off the loop (one conditional update per resource
pattern, then a change notification every broker's cache follows); descriptions and the
matching of DeleteAcls filters read this broker's cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    InvalidRequestException,
    SecurityDisabledException,
    UnknownServerException,
)
from kafkapy.protocol.generated.create_acls_request import AclCreation, CreateAclsRequest
from kafkapy.protocol.generated.create_acls_response import AclCreationResult, CreateAclsResponse
from kafkapy.protocol.generated.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkapy.protocol.generated.delete_acls_response import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsResponse,
)
from kafkapy.protocol.generated.describe_acls_request import DescribeAclsRequest
from kafkapy.protocol.generated.describe_acls_response import (
    AclDescription,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclEntry,
    Operation,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.acl_authorizer import AclAuthorizer
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

log = logging.getLogger("kafkapy.security.AclAuthorizer")

_NO_AUTHORIZER = "No Authorizer is configured on the broker"
_PATTERN_FILTERS = {
    ANY: PatternFilter.ANY,
    MATCH: PatternFilter.MATCH,
    PATTERN_TYPE_CODES[PatternType.LITERAL]: PatternFilter.LITERAL,
    PATTERN_TYPE_CODES[PatternType.PREFIXED]: PatternFilter.PREFIXED,
}


def _authorizer(apis: KafkaApis) -> AclAuthorizer | None:
    authorizer = apis.authorizer
    return authorizer if isinstance(authorizer, AclAuthorizer) else None


def _binding(c: AclCreation) -> AclBinding:
    """A CreateAcls creation as a binding; InvalidRequestException when it is not one."""
    resource_type = RESOURCE_TYPES.get(c.resource_type)
    pattern_type = PATTERN_TYPES.get(c.resource_pattern_type)
    operation = OPERATIONS.get(c.operation)
    permission = PERMISSIONS.get(c.permission_type)
    if resource_type is None or pattern_type is None or operation is None or permission is None:
        raise InvalidRequestException("Invalid ACL creation: unknown or ANY resource type, pattern type, operation "
                                      "or permission type")  # fmt: skip
    if not c.resource_name:
        raise InvalidRequestException("Invalid empty resource name")
    if resource_type is ResourceType.CLUSTER and c.resource_name != CLUSTER_NAME:
        raise InvalidRequestException(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind, sep, name = (c.principal or "").partition(":")
    if not sep or not kind or not name:
        raise InvalidRequestException(f"Invalid principal {c.principal!r}: expected 'Type:name'")
    if not c.host:
        raise InvalidRequestException("Invalid empty host")
    return AclBinding(
        ResourcePattern(resource_type, c.resource_name, pattern_type),
        AclEntry(c.principal, c.host, operation, permission),
    )


def _filter(f: DescribeAclsRequest | DeleteAclsFilter) -> AclBindingFilter:
    """A DescribeAcls/DeleteAcls filter; InvalidRequestException when a code is unknown."""

    def pick(table: dict[int, Any], code: int) -> Any:
        if code == ANY:
            return None
        if code not in table:
            raise InvalidRequestException(f"Invalid ACL filter code {code}")
        return table[code]

    pattern = _PATTERN_FILTERS.get(f.pattern_type_filter)
    if pattern is None:
        raise InvalidRequestException(f"Invalid pattern type filter {f.pattern_type_filter}")
    return AclBindingFilter(
        pick(RESOURCE_TYPES, f.resource_type_filter),
        f.resource_name_filter,
        pattern,
        f.principal_filter,
        f.host_filter,
        pick(OPERATIONS, f.operation),
        pick(PERMISSIONS, f.permission_type),
    )


# -- DescribeAcls ------------------------------------------------------------------------------


@handles(ApiKey.DESCRIBE_ACLS)
def handle_describe_acls(
    apis: KafkaApis, request: Request, body: DescribeAclsRequest
) -> DescribeAclsResponse:
    def error(code: int, message: str | None) -> DescribeAclsResponse:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=code, error_message=message, resources=[])

    if not authorize_cluster(apis, request, Operation.DESCRIBE):
        return error(ClusterAuthorizationException.code, "Cluster authorization failed.")
    authorizer = _authorizer(apis)
    if authorizer is None:
        return error(SecurityDisabledException.code, _NO_AUTHORIZER)
    try:
        selected = _filter(body).select(authorizer.acls())
    except InvalidRequestException as e:
        return error(e.code, e.message)
    by_pattern: dict[ResourcePattern, list[AclEntry]] = defaultdict(list)
    for b in selected:
        by_pattern[b.pattern].append(b.entry)
    resources = [
        DescribeAclsResource(
            resource_type=RESOURCE_TYPE_CODES[p.resource_type],
            resource_name=p.name,
            pattern_type=PATTERN_TYPE_CODES[p.pattern_type],
            acls=[
                AclDescription(
                    principal=e.principal,
                    host=e.host,
                    operation=OPERATION_CODES[e.operation],
                    permission_type=PERMISSION_CODES[e.permission],
                )
                for e in sorted(entries, key=_entry_key)
            ],
        )
        for p, entries in sorted(by_pattern.items(), key=lambda kv: _pattern_key(kv[0]))
    ]
    return DescribeAclsResponse(throttle_time_ms=0, error_code=0, error_message=None, resources=resources)


def _pattern_key(p: ResourcePattern) -> tuple[str, str, str]:
    return p.resource_type.value, p.pattern_type.value, p.name


def _entry_key(e: AclEntry) -> tuple[str, str, str, str]:
    return e.principal, e.host, e.operation.value, e.permission.value


# -- CreateAcls --------------------------------------------------------------------------------


@handles(ApiKey.CREATE_ACLS)
async def handle_create_acls(
    apis: KafkaApis, request: Request, body: CreateAclsRequest
) -> CreateAclsResponse:
    creations = list(body.creations)
    results = [AclCreationResult(error_code=0, error_message=None) for _ in creations]
    authorizer = _authorizer(apis)
    if not authorize_cluster(apis, request, Operation.ALTER):
        refused: tuple[int, str | None] | None = ClusterAuthorizationException.code, None
    elif authorizer is None:
        refused = SecurityDisabledException.code, _NO_AUTHORIZER
    else:
        refused = None
    if refused is not None:
        for r in results:
            r.error_code, r.error_message = refused
        return CreateAclsResponse(throttle_time_ms=0, results=results)
    assert authorizer is not None
    wanted: dict[ResourcePattern, list[tuple[int, AclEntry]]] = defaultdict(list)
    for i, c in enumerate(creations):
        try:
            b = _binding(c)
        except InvalidRequestException as e:
            results[i].error_code, results[i].error_message = e.code, e.message
            continue
        wanted[b.pattern].append((i, b.entry))

    def write() -> dict[ResourcePattern, Exception]:
        failed: dict[ResourcePattern, Exception] = {}
        for pattern, entries in wanted.items():
            try:
                authorizer.add_acls(pattern, [e for _, e in entries])
            except Exception as e:  # noqa: BLE001 - one resource's failure is its creations' error
                log.error("Failed to add ACLs for %s: %s", pattern, e)
                failed[pattern] = e
        return failed

    if wanted:
        failed = await asyncio.get_running_loop().run_in_executor(None, write)
        for pattern, error in failed.items():
            for i, _ in wanted[pattern]:
                results[i].error_code, results[i].error_message = UnknownServerException.code, str(error)
    return CreateAclsResponse(throttle_time_ms=0, results=results)


# -- DeleteAcls --------------------------------------------------------------------------------


@handles(ApiKey.DELETE_ACLS)
async def handle_delete_acls(
    apis: KafkaApis, request: Request, body: DeleteAclsRequest
) -> DeleteAclsResponse:
    filters = list(body.filters)
    authorizer = _authorizer(apis)
    if not authorize_cluster(apis, request, Operation.ALTER):
        refused: tuple[int, str | None] | None = (ClusterAuthorizationException.code, None)
    elif authorizer is None:
        refused = (SecurityDisabledException.code, _NO_AUTHORIZER)
    else:
        refused = None
    if refused is not None:
        return DeleteAclsResponse(
            throttle_time_ms=0,
            filter_results=[
                DeleteAclsFilterResult(error_code=refused[0], error_message=refused[1], matching_acls=[])
                for _ in filters
            ],
        )
    assert authorizer is not None
    current = authorizer.acls()
    matched: list[list[AclBinding] | InvalidRequestException] = []
    for f in filters:
        try:
            matched.append(_filter(f).select(current))
        except InvalidRequestException as e:
            matched.append(e)
    to_remove: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
    for m in matched:
        if not isinstance(m, InvalidRequestException):
            for b in m:
                to_remove[b.pattern].add(b.entry)

    def write() -> dict[ResourcePattern, Exception]:
        failed: dict[ResourcePattern, Exception] = {}
        for pattern, entries in to_remove.items():
            try:
                authorizer.remove_acls(pattern, entries)
            except Exception as e:  # noqa: BLE001 - one resource's failure is its bindings' error
                log.error("Failed to delete ACLs for %s: %s", pattern, e)
                failed[pattern] = e
        return failed

    failed = await asyncio.get_running_loop().run_in_executor(None, write) if to_remove else {}
    results = []
    for m in matched:
        if isinstance(m, InvalidRequestException):
            results.append(
                DeleteAclsFilterResult(error_code=m.code, error_message=m.message, matching_acls=[])
            )
            continue
        acls = []
        for b in sorted(m, key=lambda b: (_pattern_key(b.pattern), _entry_key(b.entry))):
            failure = failed.get(b.pattern)
            acls.append(
                DeleteAclsMatchingAcl(
                    error_code=0 if failure is None else UnknownServerException.code,
                    error_message=None if failure is None else str(failure),
                    resource_type=RESOURCE_TYPE_CODES[b.pattern.resource_type],
                    resource_name=b.pattern.name,
                    pattern_type=PATTERN_TYPE_CODES[b.pattern.pattern_type],
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=OPERATION_CODES[b.entry.operation],
                    permission_type=PERMISSION_CODES[b.entry.permission],
                )
            )
        results.append(DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=acls))
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)
