"""Kafka API keys and the versions a kafkapy broker advertises in its ApiVersions answer.

`SUPPORTED_VERSIONS` is the one table to edit: the server team trims it to what its handlers
really serve. Every listed range must lie inside the JSON spec's validVersions (a test checks
it), so any version we advertise can be decoded and encoded.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class ApiKey(IntEnum):
    """Kafka's API key numbers (org.apache.kafka.common.protocol.ApiKeys)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75


# (min, max) per API. Comments say why a range stops where it does.
SUPPORTED_VERSIONS: Final[dict[ApiKey, tuple[int, int]]] = {
    ApiKey.PRODUCE: (3, 9),  # produce.py decodes 3-12; v3 is the first with record batch v2 only
    ApiKey.FETCH: (4, 16),  # librdkafka 2.16 fetches with v16 (topic ids, v13+)
    ApiKey.LIST_OFFSETS: (1, 8),
    ApiKey.METADATA: (0, 12),
    ApiKey.LEADER_AND_ISR: (7, 7),  # inter-broker: only the version our controller sends
    ApiKey.STOP_REPLICA: (4, 4),
    ApiKey.UPDATE_METADATA: (8, 8),
    ApiKey.CONTROLLED_SHUTDOWN: (3, 3),
    ApiKey.OFFSET_COMMIT: (2, 8),  # v9+ belongs to the KIP-848 consumer protocol
    ApiKey.OFFSET_FETCH: (1, 8),
    ApiKey.FIND_COORDINATOR: (0, 4),  # v5 adds TRANSACTION_ABORTABLE, v6 share groups
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.API_VERSIONS: (0, 3),
    # v0 handshakes are followed by raw tokens (pre-KIP-152 clients), v1 by SaslAuthenticate.
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),  # v1: KIP-368 session lifetime, v2: flexible
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),  # KIP-554
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # Delegation tokens (KIP-48); v3 of Create/Describe carries the owner and the requester.
    ApiKey.CREATE_DELEGATION_TOKEN: (0, 3),
    ApiKey.RENEW_DELEGATION_TOKEN: (0, 2),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 2),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    # The spec kafka-python ships starts at v2 (Kafka 4 dropped 0-1); librdkafka sends v2 only,
    # kafka-python up to v4; v3 adds replica_id, v4 is flexible.
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    # Transactions (KIP-98). librdkafka 2.x sends AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v0-3
    # and TxnOffsetCommit up to v3; v4+ of AddPartitionsToTxn and v5 of EndTxn are KIP-890's
    # (server-side verification, epoch bump per transaction), which kafkapy does not do.
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.WRITE_TXN_MARKERS: (1, 1),  # the spec starts at v1 (Kafka 4 dropped v0); our coordinators send v1
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),  # v2 adds a transactional id regex (Kafka 4)
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    # The spec kafka-python ships starts at v1; v5 (IsCordoned) is Kafka 4's.
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),  # the spec kafka-python ships starts at v1
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),  # KIP-546
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # v1 (allowReplicationFactorChange, Kafka 3.x) would need refusing RF changes on request.
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    # The specs kafka-python ships start at v1 (Kafka 4 dropped v0, which had no pattern types).
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
}

# KAFKA-18659: librdkafka before the fix only enables compression when the broker's
# ApiVersions answer lists Produce starting at v0, so Kafka 4 advertises min 0 while
# refusing v0-2. We do the same: advertise 0, answer v0-2 with UNSUPPORTED_VERSION.
ADVERTISED_MIN_OVERRIDES: Final[dict[ApiKey, int]] = {ApiKey.PRODUCE: 0}


def advertised_versions(
    supported: dict[ApiKey, tuple[int, int]] | None = None,
) -> list[tuple[int, int, int]]:
    """(api_key, min, max) rows for an ApiVersions response, in key order."""
    table = SUPPORTED_VERSIONS if supported is None else supported
    return [
        (int(key), ADVERTISED_MIN_OVERRIDES.get(key, low), high) for key, (low, high) in sorted(table.items())
    ]


def is_supported(api_key: int, version: int) -> bool:
    """Whether the broker serves this (api_key, version): the server's dispatch check."""
    try:
        low, high = SUPPORTED_VERSIONS[ApiKey(api_key)]
    except (ValueError, KeyError):
        return False
    return low <= version <= high
