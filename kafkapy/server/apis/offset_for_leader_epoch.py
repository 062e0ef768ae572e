"""OffsetForLeaderEpoch (KIP-101, KIP-320): where a leader epoch ended in this broker's log.

Followers ask it after a leader change, to truncate exactly where their log and the leader's
diverge instead of at their high watermark; consumers ask it (v2+, KIP-320) to check that the
position they hold was not truncated away by an unclean leader change. Both name their current
leader epoch, and a stale or unknown one is refused like a fetch.
"""

from __future__ import annotations

from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import DEBUGGING_REPLICA_ID
from kafkapy.protocol.errors import TopicAuthorizationException
from kafkapy.server.apis.auth_helper import authorize_cluster, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def handle_offset_for_leader_epoch(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    # Only a v3+ request that says it is the debugging replica may read a follower's log. Before
    # v3 the field is absent and the codec fills in the spec's default, which is also -2: that
    # means "not said" (librdkafka sends v2), and those clients must reach the leader.
    fetch_only_from_leader = request.header.api_version < 3 or body.replica_id != DEBUGGING_REPLICA_ID
    rm = apis.replica_manager
    topics = []
    # Followers hold ClusterAction; consumers (KIP-320) need Describe on each topic.
    names = {t.topic for t in body.topics}
    if not authorize_cluster(apis, request, Operation.CLUSTER_ACTION, log_denied=False):
        names = filter_authorized(apis, request, Operation.DESCRIBE, ResourceType.TOPIC, names)
    for t in body.topics:
        if t.topic not in names:
            refused = [
                {"partition": p.partition, "error_code": TopicAuthorizationException.code} for p in t.partitions
            ]
            topics.append({"topic": t.topic, "partitions": refused})
            continue
        partitions = [
            rm.last_offset_for_leader_epoch(
                TopicPartition(t.topic, p.partition),
                p.current_leader_epoch,
                p.leader_epoch,
                fetch_only_from_leader,
            )
            for p in t.partitions
        ]
        topics.append({"topic": t.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
