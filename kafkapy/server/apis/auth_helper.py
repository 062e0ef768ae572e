"""What the handlers ask the authorizer, as Kafka's AuthHelper does for KafkaApis.

Every check is one call per resource of a request (a topic, a group, the cluster), never per
partition or record. With no authorizer configured every check passes, and `authorized_operations`
answers every operation the resource type supports (Kafka's answer without an authorizer).
The `authorized_operations` bit field numbers operations as Kafka's AclOperation codes.

Refusals are logged at INFO on `kafka.authorizer.logger` in AclAuthorizer's words (allowed
requests at DEBUG), except where Kafka asks quietly: filtering an all-topics Metadata answer or
ListGroups, and computing authorized operations.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import CLUSTER_NAME, Operation, ResourceType
from kafkapy.server.security.acl_codes import OPERATION_CODES

if TYPE_CHECKING:
    from kafkapy.server.apis.kafka_apis import KafkaApis

authorizer_log = logging.getLogger("kafka.authorizer.logger")

# The operations each resource type supports (Kafka's AclEntry.supportedOperations).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DESCRIBE, Operation.DELETE,
        Operation.ALTER, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE),
    ResourceType.CLUSTER: (
        Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE, Operation.ALTER, Operation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
}  # fmt: skip


def authorize(
    apis: KafkaApis,
    request: Request,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
    log_denied: bool = True,
) -> bool:
    # getattr: lightweight stand-ins for KafkaApis (unit tests of single handlers) carry none.
    authorizer = apis.authorizer
    if authorizer is None:
        return True
    allowed = bool(
        authorizer.authorize(request.principal, request.client_host, operation, resource_type, name)
    )
    if not allowed and log_denied:
        _audit(request, "Denied", operation, resource_type, name, logging.INFO)
    elif allowed and authorizer_log.isEnabledFor(logging.DEBUG):
        _audit(request, "Allowed", operation, resource_type, name, logging.DEBUG)
    return allowed


def _audit(request: Request, result: str, operation: Operation, resource_type: ResourceType, name: str,
           level: int) -> None:  # fmt: skip
    try:
        api = ApiKey(request.header.api_key).name
    except (AttributeError, ValueError):
        api = "UNKNOWN"
    authorizer_log.log(
        level, "Principal = %s is %s Operation = %s from host = %s on resource = %s:LITERAL:%s for request = %s "
        "with resourceRefCount = 1", request.principal, result, operation.value, request.client_host,
        resource_type.value, name, api,
    )  # fmt: skip


def authorize_cluster(
    apis: KafkaApis, request: Request, operation: Operation, log_denied: bool = True
) -> bool:
    return authorize(apis, request, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_denied)


def authorize_by_resource_type(
    apis: KafkaApis, request: Request, operation: Operation, resource_type: ResourceType
) -> bool:
    """Whether `operation` is allowed on any resource of the type (KIP-679)."""
    authorizer = apis.authorizer
    if authorizer is None:
        return True
    return bool(
        authorizer.authorize_by_resource_type(
            request.principal, request.client_host, operation, resource_type
        )
    )


def filter_authorized(
    apis: KafkaApis,
    request: Request,
    operation: Operation,
    resource_type: ResourceType,
    names: Iterable[str],
    log_denied: bool = True,
) -> set[str]:
    """The names (deduplicated first: one decision per resource) `operation` is allowed on."""
    unique = set(names)
    if apis.authorizer is None:
        return unique
    return {n for n in unique if authorize(apis, request, operation, resource_type, n, log_denied)}


def authorized_operations(apis: KafkaApis, request: Request, resource_type: ResourceType, name: str) -> int:
    """Kafka's `authorizedOperations` bit field: bit n set when AclOperation code n is allowed."""
    bits = 0
    for op in SUPPORTED_OPERATIONS[resource_type]:
        if authorize(apis, request, op, resource_type, name, log_denied=False):
            bits |= 1 << OPERATION_CODES[op]
    return bits
