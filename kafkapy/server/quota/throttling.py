"""How a throttled response reaches the client (KIP-219), and which requests quotas skip.

From the request versions Kafka 2.0 introduced (KIP-219) the client throttles itself: the broker
sends the response at once with `throttle_time_ms` and then mutes the connection for that long
(a client that ignored the field gains nothing). Older versions are answered after the
throttle time instead. APIs added after 2.0 always let the client throttle.
"""

from __future__ import annotations

from kafkapy.protocol.api_keys import ApiKey

# Kafka's AbstractResponse.shouldClientThrottle: the first version with client-side throttling.
_CLIENT_THROTTLES_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 6,
    ApiKey.FETCH: 8,
    ApiKey.LIST_OFFSETS: 3,
    ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4,
    ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 3,
    ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2,
    ApiKey.SYNC_GROUP: 2,
    ApiKey.DESCRIBE_GROUPS: 2,
    ApiKey.LIST_GROUPS: 2,
    ApiKey.API_VERSIONS: 2,
    ApiKey.CREATE_TOPICS: 3,
    ApiKey.DELETE_TOPICS: 2,
    ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 2,
    ApiKey.ADD_PARTITIONS_TO_TXN: 1,
    ApiKey.ADD_OFFSETS_TO_TXN: 1,
    ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1,
    ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.CREATE_ACLS: 1,
    ApiKey.DELETE_ACLS: 1,
    ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1,
    ApiKey.ALTER_REPLICA_LOG_DIRS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1,
    ApiKey.SASL_AUTHENTICATE: 1,
    ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.DELETE_GROUPS: 1,
}
_LAST_PRE_KIP219_KEY = ApiKey.DELETE_GROUPS  # 42: every later API was born with KIP-219

# Requests no client quota applies to: the controller's and other brokers' (Kafka answers them
# with sendResponseExemptThrottle) and the pre-authentication handshake.
QUOTA_EXEMPT_APIS = frozenset(
    int(k)
    for k in (
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.API_VERSIONS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
    )
)


def client_throttles(api_key: int, version: int) -> bool:
    """Whether a response of this version is sent at once and the connection muted after it
    (True), or the response itself waits out the throttle (False)."""
    first = _CLIENT_THROTTLES_FROM.get(api_key)
    if first is None:
        return api_key > _LAST_PRE_KIP219_KEY
    return version >= first
