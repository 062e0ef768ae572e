"""OffsetForLeaderEpoch (KIP-101, KIP-320): where a leader epoch ended in this broker's log.

Followers ask it after a leader change, to truncate exactly where their log and the leader's
diverge instead of at their high watermark; consumers ask it (v2+, KIP-320) to check that the
position they hold was not truncated away by an unclean leader change. Both name their current
leader epoch, and a stale or unknown one is refused like a fetch.
"""

from __future__ import annotations

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import DEBUGGING_REPLICA_ID
from kafkapy.protocol.errors import TopicAuthorizationException
from kafkapy.protocol.generated.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from kafkapy.protocol.generated.offset_for_leader_epoch_response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kafkapy.server.apis.auth_helper import authorize_cluster, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def handle_offset_for_leader_epoch(
    apis: KafkaApis, request: Request, body: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
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
                EpochEndOffset(partition=p.partition, error_code=TopicAuthorizationException.code)
                for p in t.partitions
            ]
            topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=refused))
            continue
        partitions = []
        for p in t.partitions:
            found = rm.last_offset_for_leader_epoch(
                TopicPartition(t.topic, p.partition),
                p.current_leader_epoch,
                p.leader_epoch,
                fetch_only_from_leader,
            )
            partitions.append(
                EpochEndOffset(
                    error_code=found.error_code,
                    partition=found.partition,
                    leader_epoch=found.leader_epoch,
                    end_offset=found.end_offset,
                )
            )
        topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
