"""The ACL model's wire codes (org.apache.kafka.common.acl / resource enums' `code()`).

CreateAcls, DescribeAcls and DeleteAcls carry resource types, pattern types, operations and
permissions as int8 codes; `authorized_operations` bit fields number operations the same way.
UNKNOWN (0) and the filter-only values ANY (1) and MATCH (pattern type 2) have no member in the
model (kafkapy/server/security/acl.py): filters hold None for "any".
"""

from __future__ import annotations

from typing import Final

from kafkapy.server.security.acl import Operation, PatternType, Permission, ResourceType

UNKNOWN: Final = 0
ANY: Final = 1
MATCH: Final = 2  # pattern type only: literal, wildcard and prefixed patterns that match a name

RESOURCE_TYPE_CODES: Final[dict[ResourceType, int]] = {
    ResourceType.TOPIC: 2,
    ResourceType.GROUP: 3,
    ResourceType.CLUSTER: 4,
    ResourceType.TRANSACTIONAL_ID: 5,
    ResourceType.DELEGATION_TOKEN: 6,
}
PATTERN_TYPE_CODES: Final[dict[PatternType, int]] = {PatternType.LITERAL: 3, PatternType.PREFIXED: 4}
OPERATION_CODES: Final[dict[Operation, int]] = {
    Operation.ALL: 2,
    Operation.READ: 3,
    Operation.WRITE: 4,
    Operation.CREATE: 5,
    Operation.DELETE: 6,
    Operation.ALTER: 7,
    Operation.DESCRIBE: 8,
    Operation.CLUSTER_ACTION: 9,
    Operation.DESCRIBE_CONFIGS: 10,
    Operation.ALTER_CONFIGS: 11,
    Operation.IDEMPOTENT_WRITE: 12,
}
PERMISSION_CODES: Final[dict[Permission, int]] = {Permission.DENY: 2, Permission.ALLOW: 3}

RESOURCE_TYPES: Final = {v: k for k, v in RESOURCE_TYPE_CODES.items()}
PATTERN_TYPES: Final = {v: k for k, v in PATTERN_TYPE_CODES.items()}
OPERATIONS: Final = {v: k for k, v in OPERATION_CODES.items()}
PERMISSIONS: Final = {v: k for k, v in PERMISSION_CODES.items()}
