"""Metadata: brokers, controller and topic partitions from the metadata cache.

Unknown topics are created when auto.create.topics.enable is on and the client allows it
(v4+ asks; older versions always allow), through the same ZooKeeper path as CreateTopics; the
answer meanwhile is LEADER_NOT_AVAILABLE, as Kafka's, and the client retries.

With an authorizer (Kafka's KafkaApis.handleTopicMetadataRequest): an all-topics request lists
only the topics the principal may Describe; a named topic it may not Describe is answered
TOPIC_AUTHORIZATION_FAILED (existing or not, so nothing is learnt about it); auto-creation
needs Create on the cluster or on the topic. Authorized operations are computed only when the
request asks for them (v8+).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.errors import (
    InvalidTopicException,
    KafkaError,
    LeaderNotAvailableException,
    TopicAuthorizationException,
    TopicExistsException,
    UnknownTopicIdException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.metadata_request import MetadataRequest
from kafkapy.protocol.generated.metadata_response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkapy.server.apis.auth_helper import (
    authorize,
    authorize_cluster,
    authorized_operations,
    filter_authorized,
)
from kafkapy.server.apis.cluster import AUTHORIZED_OPERATIONS_OMITTED, brokers_for_listener, controller_id
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import CLUSTER_NAME, Operation, ResourceType

log = logging.getLogger("kafkapy.server.KafkaApis")

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def topic_metadata(apis: KafkaApis, topic: str, listener: str) -> MetadataResponseTopic:
    """The topic's entry as `listener` sees it; built once per metadata change, so callers must
    not modify it (copy it first, as `_with_operations` does)."""
    return apis.metadata_cache.topic_entries.get(listener, topic, lambda: _build_topic(apis, topic, listener))


def _build_topic(apis: KafkaApis, topic: str, listener: str) -> MetadataResponseTopic:
    cache = apis.metadata_cache
    live = set(cache.brokers)
    reachable = {b for b in live if cache.alive_endpoint(b, listener) is not None}
    partitions = []
    for index, p in sorted(cache.partitions.get(topic, {}).items()):
        leader_known = p.leader >= 0 and p.leader in reachable
        partitions.append(
            MetadataResponsePartition(
                error_code=0 if leader_known else LeaderNotAvailableException.code,
                partition_index=index,
                leader_id=p.leader if leader_known else -1,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                # Dead brokers, and replicas the controller marked offline (a failed log dir).
                offline_replicas=[r for r in p.replicas if r not in live or r in p.offline_replicas],
            )
        )
    return MetadataResponseTopic(
        error_code=0,
        name=topic,
        topic_id=cache.topic_id(topic),
        is_internal=topic in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _with_operations(entry: MetadataResponseTopic, operations: int) -> MetadataResponseTopic:
    """A copy of a (shared, cached) topic entry carrying the principal's authorized operations."""
    return MetadataResponseTopic(
        error_code=entry.error_code,
        name=entry.name,
        topic_id=entry.topic_id,
        is_internal=entry.is_internal,
        partitions=entry.partitions,
        topic_authorized_operations=operations,
    )


def _error_topic(name: str | None, code: int, topic_id: uuid.UUID = ZERO_UUID) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=[],
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


@handles(ApiKey.METADATA)
def handle_metadata(
    apis: KafkaApis, request: Request, body: MetadataRequest
) -> MetadataResponse | Coroutine[None, None, MetadataResponse]:
    version = request.header.api_version
    cache = apis.metadata_cache
    listener = request.listener_name
    requested = body.topics
    all_topics = requested is None or (version == 0 and not requested)
    allow_auto_create = version < 4 or bool(body.allow_auto_topic_creation)
    topics_out: list[MetadataResponseTopic] = []
    to_create: list[str] = []
    if all_topics:
        names = cache.all_topics()
        if apis.authorizer is not None:
            allowed = filter_authorized(
                apis, request, Operation.DESCRIBE, ResourceType.TOPIC, names, log_denied=False
            )
            names = [t for t in names if t in allowed]
        topics_out = [topic_metadata(apis, t, listener) for t in names]
    else:
        seen: set[str | uuid.UUID] = set()
        for t in requested or ():
            # Kafka reads the requested topics into a Set: a topic named twice is answered
            # once, so repeating a large topic's name cannot multiply the response.
            key = t.name if t.name is not None else t.topic_id
            if key in seen:
                continue
            seen.add(key)
            name = t.name
            topic_id = t.topic_id
            if name is None and topic_id != ZERO_UUID:
                name = cache.topic_name(topic_id)
                if name is None:
                    topics_out.append(_error_topic(None, UnknownTopicIdException.code, topic_id))
                    continue
            if name is not None and not authorize(
                apis, request, Operation.DESCRIBE, ResourceType.TOPIC, name
            ):
                # A topic asked for by id keeps its name to itself.
                shown = name if t.name is not None else None
                topics_out.append(_error_topic(shown, TopicAuthorizationException.code, topic_id))
            elif name is not None and cache.contains_topic(name):
                topics_out.append(topic_metadata(apis, name, listener))
            elif name and allow_auto_create and apis.config.auto_create_topics_enable:
                if _may_create(apis, request, name):
                    to_create.append(name)
                else:
                    topics_out.append(_error_topic(name, TopicAuthorizationException.code))
            else:
                topics_out.append(_error_topic(name, UnknownTopicOrPartitionException.code))
    if version >= 8 and body.include_topic_authorized_operations:
        topics_out = [
            _with_operations(out, authorized_operations(apis, request, ResourceType.TOPIC, out.name))
            if out.error_code != TopicAuthorizationException.code and out.name is not None
            else out
            for out in topics_out
        ]
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if 8 <= version <= 10 and body.include_cluster_authorized_operations:
        cluster_operations = (
            authorized_operations(apis, request, ResourceType.CLUSTER, CLUSTER_NAME)
            if authorize_cluster(apis, request, Operation.DESCRIBE)
            else 0
        )
    response = MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponseBroker(node_id=b.id, host=b.host, port=b.port, rack=b.rack)
            for b in brokers_for_listener(apis, listener)
        ],
        cluster_id=apis.cluster_id,
        controller_id=controller_id(apis),
        topics=topics_out,
        cluster_authorized_operations=cluster_operations,
    )
    if not to_create:
        return response
    return _auto_create(apis, response, to_create)


def _may_create(apis: KafkaApis, request: Request, name: str) -> bool:
    return authorize_cluster(apis, request, Operation.CREATE, log_denied=False) or authorize(
        apis, request, Operation.CREATE, ResourceType.TOPIC, name
    )


async def _auto_create(apis: KafkaApis, response: MetadataResponse, topics: list[str]) -> MetadataResponse:
    from kafkapy.server.apis.topics import auto_create_topic

    loop = asyncio.get_running_loop()
    for name in topics:
        try:
            await loop.run_in_executor(None, auto_create_topic, apis, name)
            code = LeaderNotAvailableException.code
        except InvalidTopicException as e:
            code = e.code
        except KafkaError as e:
            # TOPIC_ALREADY_EXISTS: another request raced us; the metadata is on its way.
            code = LeaderNotAvailableException.code if e.code == TopicExistsException.code else e.code
        response.topics.append(_error_topic(name, code))
    return response
