"""OffsetCommit, OffsetFetch and OffsetDelete: a group's committed offsets, via its coordinator.

Partitions of topics this broker's metadata does not know are answered
UNKNOWN_TOPIC_OR_PARTITION without reaching the coordinator, as Kafka's KafkaApis does. OffsetFetch
v1 has no top-level error, so a coordinator error is repeated on every partition; v8+ batches
groups, each with its own error.

Authorization as Kafka's KafkaApis: OffsetCommit needs Read on the group (else every partition
GROUP_AUTHORIZATION_FAILED) and Read on each topic (TOPIC_AUTHORIZATION_FAILED); OffsetFetch
Describe on the group and on each named topic (a fetch of all committed offsets leaves out the
topics it may not Describe); OffsetDelete Delete on the group and Read on each topic.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kafkapy.common.config_def import LONG_MAX
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import INVALID_OFFSET
from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    GroupAuthorizationException,
    TopicAuthorizationException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.offset_commit_request import OffsetCommitRequest
from kafkapy.protocol.generated.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kafkapy.protocol.generated.offset_delete_request import OffsetDeleteRequest
from kafkapy.protocol.generated.offset_delete_response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kafkapy.protocol.generated.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kafkapy.protocol.generated.offset_fetch_response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from kafkapy.server.apis.auth_helper import authorize, filter_authorized
from kafkapy.server.apis.groups import coordinator
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType

_NOT_AVAILABLE = CoordinatorNotAvailableException.code
_UNKNOWN_TOPIC = UnknownTopicOrPartitionException.code
NO_METADATA = ""


def _known(apis: KafkaApis, topic: str, partition: int) -> bool:
    return apis.metadata_cache.partition_info(topic, partition) is not None


# -- OffsetCommit ------------------------------------------------------------------------------


def _expire_timestamp(now: int, retention_ms: int) -> int | None:
    """v2-v4's retention_time_ms: -1 is the broker's offsets.retention.minutes. A retention
    near Long.MAX_VALUE would overflow an int64; Kafka's long addition wraps it into the past
    (expired at once), which is not what a client asking to keep its offsets means: saturate."""
    if retention_ms == -1:
        return None
    return min(now + retention_ms, LONG_MAX)


@handles(ApiKey.OFFSET_COMMIT)
async def handle_offset_commit(
    apis: KafkaApis, request: Request, body: OffsetCommitRequest
) -> OffsetCommitResponse:
    version = request.header.api_version
    now = time.time_ns() // 1_000_000
    retention = body.retention_time_ms if 2 <= version <= 4 else -1
    order = [(t.name, [p.partition_index for p in t.partitions]) for t in body.topics]
    codes: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    if not authorize(apis, request, Operation.READ, ResourceType.GROUP, body.group_id):
        codes = {(t, p): GroupAuthorizationException.code for t, parts in order for p in parts}
        return _commit_response(order, codes)
    readable = filter_authorized(apis, request, Operation.READ, ResourceType.TOPIC, (t for t, _ in order))
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                codes[tp] = TopicAuthorizationException.code
                continue
            if not _known(apis, *tp):
                codes[tp] = _UNKNOWN_TOPIC
                continue
            offsets[tp] = OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch if version >= 6 else -1,
                p.committed_metadata if p.committed_metadata is not None else NO_METADATA,
                now,
                _expire_timestamp(now, retention),
            )
    gc = coordinator(apis)
    if offsets:
        if gc is None:
            codes.update(dict.fromkeys(offsets, _NOT_AVAILABLE))
        else:
            codes.update(
                await gc.commit_offsets(
                    body.group_id,
                    body.member_id,
                    body.group_instance_id if version >= 7 else None,
                    body.generation_id_or_member_epoch,
                    offsets,
                )
            )
    return _commit_response(order, codes)


def _commit_response(
    order: list[tuple[str, list[int]]], codes: dict[tuple[str, int], int]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            OffsetCommitResponseTopic(
                name=t,
                partitions=[
                    OffsetCommitResponsePartition(partition_index=p, error_code=codes[(t, p)]) for p in parts
                ],
            )
            for t, parts in order
        ],
    )


# -- OffsetFetch -------------------------------------------------------------------------------


# One partition's answer: (partition, committed offset or None, error code).
_Fetched = tuple[int, OffsetAndMetadata | None, int]


def _partition_entry(fetched: _Fetched) -> OffsetFetchResponsePartition:
    partition, om, error = fetched
    return OffsetFetchResponsePartition(
        partition_index=partition,
        committed_offset=om.offset if om is not None else INVALID_OFFSET,
        committed_leader_epoch=om.leader_epoch if om is not None else -1,
        metadata=om.metadata if om is not None else NO_METADATA,
        error_code=error,
    )


def _group_partition_entry(fetched: _Fetched) -> OffsetFetchResponsePartitions:
    """v8+'s partition entry: the same fields as `_partition_entry`'s, another struct."""
    partition, om, error = fetched
    return OffsetFetchResponsePartitions(
        partition_index=partition,
        committed_offset=om.offset if om is not None else INVALID_OFFSET,
        committed_leader_epoch=om.leader_epoch if om is not None else -1,
        metadata=om.metadata if om is not None else NO_METADATA,
        error_code=error,
    )


def _fetch_group(
    apis: KafkaApis,
    request: Request,
    group_id: str,
    topics: Sequence[OffsetFetchRequestTopic] | Sequence[OffsetFetchRequestTopics] | None,
) -> tuple[int, dict[str, list[_Fetched]]]:
    """(group error, partitions by topic) for one group; `topics=None` means every committed partition."""
    gc = coordinator(apis)
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    if not authorize(apis, request, Operation.DESCRIBE, ResourceType.GROUP, group_id):
        refused: dict[str, list[_Fetched]] = {}
        for t, p in wanted or []:
            refused.setdefault(t, []).append((p, None, GroupAuthorizationException.code))
        return GroupAuthorizationException.code, refused
    unauthorized: list[tuple[str, int]] = []
    if wanted is not None and apis.authorizer is not None:
        described = filter_authorized(
            apis, request, Operation.DESCRIBE, ResourceType.TOPIC, (t for t, _ in wanted)
        )
        unauthorized = [tp for tp in wanted if tp[0] not in described]
        wanted = [tp for tp in wanted if tp[0] in described]
    if gc is None:
        code, offsets = _NOT_AVAILABLE, {}
    else:
        code, offsets = gc.fetch_offsets(group_id, wanted)
    by_topic: dict[str, list[_Fetched]] = {}
    if code:
        for t, p in wanted or []:
            by_topic.setdefault(t, []).append((p, None, code))
    else:
        if topics is None and apis.authorizer is not None:
            described = filter_authorized(
                apis, request, Operation.DESCRIBE, ResourceType.TOPIC, (t for t, _ in offsets)
            )
            offsets = {tp: om for tp, om in offsets.items() if tp[0] in described}
        for (t, p), om in offsets.items():
            by_topic.setdefault(t, []).append((p, om, 0))
    for t, p in unauthorized:
        by_topic.setdefault(t, []).append((p, None, TopicAuthorizationException.code))
    return code, by_topic


@handles(ApiKey.OFFSET_FETCH)
def handle_offset_fetch(apis: KafkaApis, request: Request, body: OffsetFetchRequest) -> OffsetFetchResponse:
    version = request.header.api_version
    if version >= 8:
        groups = []
        for g in body.groups:
            code, by_topic = _fetch_group(apis, request, g.group_id, g.topics)
            topics = [
                OffsetFetchResponseTopics(name=t, partitions=[_group_partition_entry(f) for f in parts])
                for t, parts in by_topic.items()
            ]
            groups.append(
                OffsetFetchResponseGroup(group_id=g.group_id, topics=[] if code else topics, error_code=code)
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    code, by_topic = _fetch_group(apis, request, body.group_id, body.topics)
    if version >= 2 and code:
        by_topic = {}  # v2+ has a top-level error: partitions are not repeated with it
    return OffsetFetchResponse(
        throttle_time_ms=0,
        topics=[
            OffsetFetchResponseTopic(name=t, partitions=[_partition_entry(f) for f in parts])
            for t, parts in by_topic.items()
        ],
        error_code=code,
    )


# -- OffsetDelete ------------------------------------------------------------------------------


@handles(ApiKey.OFFSET_DELETE)
async def handle_offset_delete(
    apis: KafkaApis, request: Request, body: OffsetDeleteRequest
) -> OffsetDeleteResponse:
    order = [(t.name, [p.partition_index for p in t.partitions]) for t in body.topics]
    codes: dict[tuple[str, int], int] = {}
    wanted = []
    if not authorize(apis, request, Operation.DELETE, ResourceType.GROUP, body.group_id):
        return OffsetDeleteResponse(
            error_code=GroupAuthorizationException.code, throttle_time_ms=0, topics=[]
        )
    readable = filter_authorized(apis, request, Operation.READ, ResourceType.TOPIC, (t for t, _ in order))
    for t, parts in order:
        for p in parts:
            if t not in readable:
                codes[(t, p)] = TopicAuthorizationException.code
            elif _known(apis, t, p):
                wanted.append((t, p))
            else:
                codes[(t, p)] = _UNKNOWN_TOPIC
    gc = coordinator(apis)
    top, per = (_NOT_AVAILABLE, {}) if gc is None else await gc.delete_offsets(body.group_id, wanted)
    if top and not per:
        return OffsetDeleteResponse(error_code=top, throttle_time_ms=0, topics=[])
    codes.update(per)
    return OffsetDeleteResponse(
        error_code=top,
        throttle_time_ms=0,
        topics=[
            OffsetDeleteResponseTopic(
                name=t,
                partitions=[
                    OffsetDeleteResponsePartition(partition_index=p, error_code=codes[(t, p)]) for p in parts
                ],
            )
            for t, parts in order
        ],
    )
