"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), KIP-455.

As in Kafka's ZooKeeper-era broker, the request goes to this broker's controller as an event
(KafkaController.alter_partition_reassignments / list_partition_reassignments); a broker that
is not the active controller answers NOT_CONTROLLER and the client asks the new one. The wait
for the controller is bounded by the request's timeout_ms (REQUEST_TIMED_OUT).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from concurrent.futures import Future
from typing import TypeVar

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    KafkaError,
    NotControllerException,
    TimeoutException,
    error_code,
)
from kafkapy.protocol.generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
)
from kafkapy.protocol.generated.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from kafkapy.protocol.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkapy.protocol.generated.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation

T = TypeVar("T")


async def _await_controller(future: Future[T], timeout_ms: int) -> T:
    return await asyncio.wait_for(asyncio.wrap_future(future), max(timeout_ms, 0) / 1000)


def _top_level(e: BaseException) -> tuple[int, str]:
    """(error code, message) of a whole-request failure."""
    message = e.message if isinstance(e, KafkaError) else str(e)
    return error_code(e), message


def _alter_failed(e: BaseException) -> AlterPartitionReassignmentsResponse:
    code, message = _top_level(e)
    return AlterPartitionReassignmentsResponse(error_code=code, error_message=message)


def _list_failed(e: BaseException) -> ListPartitionReassignmentsResponse:
    code, message = _top_level(e)
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message)


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
async def handle_alter_partition_reassignments(
    apis: KafkaApis, request: Request, body: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    if not authorize_cluster(apis, request, Operation.ALTER):
        return _alter_failed(ClusterAuthorizationException())
    controller = apis.controller
    if controller is None:
        return _alter_failed(NotControllerException("This is not the correct controller for this cluster."))
    wanted: dict[TopicPartition, tuple[int, ...] | None] = {
        TopicPartition(t.name, p.partition_index): None if p.replicas is None else tuple(p.replicas)
        for t in body.topics
        for p in t.partitions
    }
    try:
        results = await _await_controller(controller.alter_partition_reassignments(wanted), body.timeout_ms)
    except TimeoutError:
        return _alter_failed(TimeoutException("The request timed out."))
    except Exception as e:  # noqa: BLE001 - NOT_CONTROLLER and friends are whole-request errors
        return _alter_failed(e)
    by_topic: dict[str, list[ReassignablePartitionResponse]] = defaultdict(list)
    for tp, error in sorted(results.items()):
        by_topic[tp.topic].append(ReassignablePartitionResponse(
            partition_index=tp.partition,
            error_code=0 if error is None else error_code(error),
            error_message=None if error is None else _message(error),
        ))  # fmt: skip
    return AlterPartitionReassignmentsResponse(
        error_code=0,
        error_message=None,
        responses=[ReassignableTopicResponse(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS)
async def handle_list_partition_reassignments(
    apis: KafkaApis, request: Request, body: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    if not authorize_cluster(apis, request, Operation.DESCRIBE):
        return _list_failed(ClusterAuthorizationException())
    controller = apis.controller
    if controller is None:
        return _list_failed(NotControllerException("This is not the correct controller for this cluster."))
    partitions = (
        None
        if body.topics is None
        else frozenset(TopicPartition(t.name, p) for t in body.topics for p in t.partition_indexes)
    )
    try:
        ongoing = await _await_controller(
            controller.list_partition_reassignments(partitions), body.timeout_ms
        )
    except TimeoutError:
        return _list_failed(TimeoutException("The request timed out."))
    except Exception as e:  # noqa: BLE001
        return _list_failed(e)
    by_topic: dict[str, list[OngoingPartitionReassignment]] = defaultdict(list)
    for tp, a in sorted(ongoing.items()):
        by_topic[tp.topic].append(OngoingPartitionReassignment(
            partition_index=tp.partition,
            replicas=list(a.replicas),
            adding_replicas=list(a.adding_replicas),
            removing_replicas=list(a.removing_replicas),
        ))  # fmt: skip
    return ListPartitionReassignmentsResponse(
        error_code=0,
        error_message=None,
        topics=[OngoingTopicReassignment(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def _message(error: Exception) -> str:
    return error.message if isinstance(error, KafkaError) else str(error)
