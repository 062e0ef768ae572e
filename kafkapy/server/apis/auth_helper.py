"""What the handlers ask the authorizer, as Kafka's AuthHelper does for KafkaApis.

Every check is one call per resource of a request (a topic, a group, the cluster), never per
partition or record. With no authorizer configured every check passes, and `authorized_operations`
answers every operation the resource type supports (Kafka's answer without an authorizer).
The `authorized_operations` bit field numbers operations as Kafka's AclOperation codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import CLUSTER_NAME, Operation, ResourceType
from kafkapy.server.security.acl_codes import OPERATION_CODES

if TYPE_CHECKING:
    from kafkapy.server.apis.kafka_apis import KafkaApis

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
    apis: KafkaApis, request: Request, operation: Operation, resource_type: ResourceType, name: str
) -> bool:
    # getattr: lightweight stand-ins for KafkaApis (unit tests of single handlers) carry none.
    authorizer = getattr(apis, "authorizer", None)
    if authorizer is None:
        return True
    return authorizer.authorize(request.principal, request.client_host, operation, resource_type, name)


def authorize_cluster(apis: KafkaApis, request: Request, operation: Operation) -> bool:
    return authorize(apis, request, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorize_by_resource_type(
    apis: KafkaApis, request: Request, operation: Operation, resource_type: ResourceType
) -> bool:
    """Whether `operation` is allowed on any resource of the type (KIP-679)."""
    authorizer = getattr(apis, "authorizer", None)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(request.principal, request.client_host, operation, resource_type)


def filter_authorized(
    apis: KafkaApis, request: Request, operation: Operation, resource_type: ResourceType, names: Iterable[str]
) -> set[str]:
    """The names (deduplicated first: one decision per resource) `operation` is allowed on."""
    unique = set(names)
    if getattr(apis, "authorizer", None) is None:
        return unique
    return {n for n in unique if authorize(apis, request, operation, resource_type, n)}


def authorized_operations(apis: KafkaApis, request: Request, resource_type: ResourceType, name: str) -> int:
    """Kafka's `authorizedOperations` bit field: bit n set when AclOperation code n is allowed."""
    bits = 0
    for op in SUPPORTED_OPERATIONS[resource_type]:
        if authorize(apis, request, op, resource_type, name):
            bits |= 1 << OPERATION_CODES[op]
    return bits
