"""CreateTopics, DeleteTopics, CreatePartitions: requests written into ZooKeeper.

As in Kafka's ZooKeeper mode these go to the controller broker, which writes the topic's
znodes (or the /admin/delete_topics marker) and then waits, up to the request's timeout, until
its own metadata cache shows the result: the controller's watch on ZooKeeper does the real
work and tells every broker through LeaderAndIsr and UpdateMetadata.

Authorization as Kafka's: CreateTopics needs Create on the cluster or on the topic; DeleteTopics
Delete on the topic (asked by id without Describe, the topic stays unknown: UNKNOWN_TOPIC_ID);
CreatePartitions Alter on the topic. Refused topics are answered TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.errors import (
    InvalidPartitionsException,
    InvalidRequestException,
    KafkaError,
    NotControllerException,
    TimeoutException,
    TopicAuthorizationException,
    TopicDeletionDisabledException,
    UnknownServerException,
    UnknownTopicIdException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.create_partitions_request import CreatePartitionsRequest
from kafkapy.protocol.generated.create_partitions_response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from kafkapy.protocol.generated.create_topics_request import CreateTopicsRequest
from kafkapy.protocol.generated.create_topics_response import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kafkapy.protocol.generated.delete_topics_request import DeleteTopicsRequest
from kafkapy.protocol.generated.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kafkapy.server.apis.auth_helper import authorize, authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.zk.admin_zk_client import check_partition_count
from kafkapy.zk.errors import AdminOperationError, TopicAlreadyMarkedForDeletionError

_POLL_S = 0.02


def topic_id_from_zk(topic_id: str | None) -> uuid.UUID | None:
    """ZooKeeper keeps topic ids as Kafka's Uuid.toString: url-safe base64 without padding."""
    if not topic_id:
        return None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _admin(apis: KafkaApis) -> Any:
    from kafkapy.zk.admin_zk_client import AdminZkClient

    return AdminZkClient(apis.zk, max_partitions=apis.config.kafkapy_topic_max_partitions)


class _PartitionBudget:
    """kafkapy.request.max.partitions over one request's topics: each topic's count (as asked,
    before any assignment is built) is checked against kafkapy.topic.max.partitions and taken
    from the budget; a topic over either is refused with INVALID_PARTITIONS while the other
    topics go on."""

    def __init__(self, limit: int, per_topic: int) -> None:
        self.limit = limit
        self.per_topic = per_topic
        self.used = 0

    def take(self, topic: str, partitions: int, total: int | None = None) -> None:
        """`partitions` new ones, for a topic that will have `total` (default: the same)."""
        check_partition_count(topic, partitions if total is None else total, self.per_topic)
        if partitions > 0 and self.used + partitions > self.limit:
            raise InvalidPartitionsException(
                f"Topic {topic} with {partitions} partitions would take this request past the maximum "
                f"of {self.limit} partitions per request (kafkapy.request.max.partitions)."
            )
        self.used += max(partitions, 0)


def is_controller(apis: KafkaApis) -> bool:
    controller = apis.controller
    return controller is not None and controller.is_active()


async def wait_until(predicate: Callable[[], bool], timeout_ms: int) -> bool:
    deadline = time.monotonic() + max(timeout_ms, 0) / 1000
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


def _topic_ready(apis: KafkaApis, topic: str, partitions: int | None = None) -> bool:
    parts = apis.metadata_cache.partitions.get(topic)
    if not parts or any(p.leader < 0 for p in parts.values()):
        return False
    return partitions is None or len(parts) >= partitions


def auto_create_topic(apis: KafkaApis, topic: str) -> None:
    """Metadata's auto-creation with the broker defaults (blocking: runs off the loop)."""
    from kafkapy.server.apis.metadata import INTERNAL_TOPICS

    if topic in INTERNAL_TOPICS:
        return
    from kafkapy.zk.admin_zk_client import RackAwareMode

    # Kafka's KafkaApis.createTopic auto-creates with RackAwareMode.Safe: a cluster where only
    # some brokers have racks still gets the topic, placed rack-unaware.
    _admin(apis).create_topic(
        topic,
        apis.config.num_partitions,
        apis.config.default_replication_factor,
        {},
        rack_aware_mode=RackAwareMode.SAFE,
    )


def _budget(apis: KafkaApis) -> _PartitionBudget:
    return _PartitionBudget(
        apis.config.kafkapy_request_max_partitions, apis.config.kafkapy_topic_max_partitions
    )


# -- CreateTopics ------------------------------------------------------------------------------


@handles(ApiKey.CREATE_TOPICS)
async def handle_create_topics(
    apis: KafkaApis, request: Request, body: CreateTopicsRequest
) -> CreateTopicsResponse:
    loop = asyncio.get_running_loop()
    results: list[CreatableTopicResult] = []
    created: list[tuple[CreatableTopicResult, int]] = []
    controller = is_controller(apis)
    seen: set[str] = set()
    budget = _budget(apis)
    may_create_any = authorize_cluster(apis, request, Operation.CREATE, log_denied=False)
    for t in body.topics:
        result = CreatableTopicResult(
            name=t.name,
            error_code=0,
            error_message=None,
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
        results.append(result)
        if not controller:
            result.error_code = NotControllerException.code
            result.error_message = "This is not the correct controller for this cluster."
            continue
        if t.name in seen:
            result.error_code = InvalidRequestException.code
            result.error_message = f"Create topics request from client contains a duplicate topic {t.name}"
            continue
        seen.add(t.name)
        if not may_create_any and not authorize(apis, request, Operation.CREATE, ResourceType.TOPIC, t.name):
            result.error_code = TopicAuthorizationException.code
            result.error_message = "Authorization failed."
            continue
        if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
            # Kafka's ZkAdminManager.createTopics refuses the mix in these words.
            result.error_code = InvalidRequestException.code
            result.error_message = (
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time."
            )
            continue
        partitions = t.num_partitions if t.num_partitions != -1 else apis.config.num_partitions
        rf = t.replication_factor if t.replication_factor != -1 else apis.config.default_replication_factor
        try:
            budget.take(t.name, len(t.assignments) if t.assignments else partitions)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
            continue
        # The decoder bounded these lists by the frame's bytes; the partition count itself is
        # checked against kafkapy.topic.max.partitions by AdminZkClient before placement.
        assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments} or None
        configs = {c.name: c.value for c in t.configs}
        create = functools.partial(
            _admin(apis).create_topic,
            t.name,
            partitions,
            rf,
            configs,
            assignment,
            validate_only=body.validate_only,
        )
        try:
            created_topic = await loop.run_in_executor(None, create)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
            continue
        except AdminOperationError as e:
            # Not an ApiException in Kafka either (ApiError.fromThrowable: UNKNOWN_SERVER_ERROR).
            result.error_code = UnknownServerException.code
            result.error_message = str(e)
            continue
        final_assignment = created_topic.assignment
        result.topic_id = topic_id_from_zk(created_topic.topic_id) or ZERO_UUID
        result.num_partitions = len(final_assignment)
        result.replication_factor = len(next(iter(final_assignment.values()), []))
        if authorize(apis, request, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, t.name, log_denied=False):
            result.configs = [
                CreatableTopicConfigs(name=k, value=v, read_only=False, config_source=1, is_sensitive=False)
                for k, v in sorted(configs.items())
            ]
        else:  # Kafka's answer: created, but its configs are not shown to this principal
            result.topic_config_error_code = TopicAuthorizationException.code
        if not body.validate_only:
            created.append((result, len(final_assignment)))
    for result, n in created:
        if not await wait_until(lambda r=result, n=n: _topic_ready(apis, r.name, n), body.timeout_ms):  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
            result.error_code = TimeoutException.code
            result.error_message = f"Timed out waiting for topic {result.name} to be created"
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


# -- DeleteTopics ------------------------------------------------------------------------------


@handles(ApiKey.DELETE_TOPICS)
async def handle_delete_topics(
    apis: KafkaApis, request: Request, body: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    loop = asyncio.get_running_loop()
    cache = apis.metadata_cache
    if request.header.api_version >= 6:
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    responses: list[DeletableTopicResult] = []
    pending: list[DeletableTopicResult] = []
    for name, topic_id in wanted:
        if name is None:  # v6+ names the topic by id
            topic_id = topic_id or ZERO_UUID
            name = cache.topic_name(topic_id)
            if name is None:
                responses.append(
                    DeletableTopicResult(
                        name=None,
                        topic_id=topic_id,
                        error_code=UnknownTopicIdException.code,
                        error_message=None,
                    )
                )
                continue
            if not authorize(apis, request, Operation.DESCRIBE, ResourceType.TOPIC, name):
                responses.append(
                    DeletableTopicResult(
                        name=None,
                        topic_id=topic_id,
                        error_code=UnknownTopicIdException.code,
                        error_message=None,
                    )
                )
                continue
        response = DeletableTopicResult(
            name=name, topic_id=cache.topic_id(name), error_code=0, error_message=None
        )
        responses.append(response)
        if not is_controller(apis):
            response.error_code = NotControllerException.code
        elif not authorize(apis, request, Operation.DELETE, ResourceType.TOPIC, name):
            response.error_code = TopicAuthorizationException.code
            response.error_message = "Authorization failed."
        elif not apis.config.delete_topic_enable:
            response.error_code = TopicDeletionDisabledException.code
            response.error_message = "Topic deletion is disabled."
        elif not cache.contains_topic(name):
            response.error_code = UnknownTopicOrPartitionException.code
            response.error_message = "This server does not host this topic-partition."
        else:
            try:
                await loop.run_in_executor(None, _admin(apis).delete_topic, name)
                pending.append(response)
            except TopicAlreadyMarkedForDeletionError:
                # Kafka's ZkAdminManager swallows it: the deletion under way is this one too.
                pending.append(response)
            except KafkaError as e:
                response.error_code = e.code
                response.error_message = e.message
    for response in pending:
        if not await wait_until(lambda n=response.name: not cache.contains_topic(n), body.timeout_ms):  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
            response.error_code = TimeoutException.code
    return DeleteTopicsResponse(throttle_time_ms=0, responses=responses)


# -- CreatePartitions --------------------------------------------------------------------------


@handles(ApiKey.CREATE_PARTITIONS)
async def handle_create_partitions(
    apis: KafkaApis, request: Request, body: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    loop = asyncio.get_running_loop()
    results: list[CreatePartitionsTopicResult] = []
    pending: list[tuple[CreatePartitionsTopicResult, int]] = []
    budget = _budget(apis)
    seen: set[str] = set()
    for t in body.topics:
        result = CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        results.append(result)
        if not is_controller(apis):
            result.error_code = NotControllerException.code
            continue
        if t.name in seen:
            result.error_code = InvalidRequestException.code
            result.error_message = "Duplicate topic in request."
            continue
        seen.add(t.name)
        if not authorize(apis, request, Operation.ALTER, ResourceType.TOPIC, t.name):
            result.error_code = TopicAuthorizationException.code
            result.error_message = "Authorization failed."
            continue
        existing = len(apis.metadata_cache.partitions.get(t.name, {}))
        try:
            budget.take(t.name, t.count - existing, t.count)
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
            continue
        assignments = (
            {existing + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
            if t.assignments is not None
            else None
        )
        add = functools.partial(
            _admin(apis).add_partitions, t.name, t.count, assignments, validate_only=body.validate_only
        )
        try:
            await loop.run_in_executor(None, add)
            if not body.validate_only:
                pending.append((result, t.count))
        except KafkaError as e:
            result.error_code = e.code
            result.error_message = e.message
        except AdminOperationError as e:
            result.error_code = UnknownServerException.code
            result.error_message = str(e)
    for result, count in pending:
        if not await wait_until(lambda r=result, c=count: _topic_ready(apis, r.name, c), body.timeout_ms):  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
            result.error_code = TimeoutException.code
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)
