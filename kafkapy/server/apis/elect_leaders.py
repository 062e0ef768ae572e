"""ElectLeaders (43): preferred and unclean leader election on an admin client's request.

As in Kafka's ZooKeeper-era broker the request goes to this broker's controller as an event
(KafkaController.elect_leaders); a broker that is not the active controller answers
NOT_CONTROLLER and the client asks the new one. Like Kafka's DelayedElectLeader, the answer waits
(within timeout_ms) until this broker's metadata shows each new leader, so a client that reads
metadata right after sees the election; a partition still not shown then gets REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    InvalidRequestException,
    KafkaError,
    NotControllerException,
    TimeoutException,
    error_code,
)
from kafkapy.protocol.generated.elect_leaders_request import ElectLeadersRequest
from kafkapy.protocol.generated.elect_leaders_response import (
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.controller.events import ElectionType
from kafkapy.server.metadata_cache import MetadataCache
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation

# How often the answer re-reads the metadata cache while it waits for the controller's
# UpdateMetadata (one round trip to this broker, usually a few milliseconds).
METADATA_POLL_S = 0.02
Outcome = int | Exception


@handles(ApiKey.ELECT_LEADERS)
async def handle_elect_leaders(
    apis: KafkaApis, request: Request, body: ElectLeadersRequest
) -> ElectLeadersResponse:
    requested = (
        None
        if body.topic_partitions is None
        else frozenset(TopicPartition(t.topic, p) for t in body.topic_partitions for p in t.partitions)
    )
    # v0 has no election_type: it only ever elected the preferred replica.
    raw_type = body.election_type if request.header.api_version >= 1 else 0
    if raw_type not in ElectionType.__members__.values():
        return _whole_request(requested, InvalidRequestException(f"Unknown election type {raw_type}"))
    election_type = ElectionType(raw_type)
    if not authorize_cluster(apis, request, Operation.ALTER):
        return _whole_request(requested, ClusterAuthorizationException())
    deadline = time.monotonic() + max(body.timeout_ms, 0) / 1000
    controller = apis.controller
    try:
        if controller is None:
            raise NotControllerException("This is not the correct controller for this cluster.")
        future = controller.elect_leaders(election_type, requested)
        outcomes: dict[TopicPartition, Outcome] = await asyncio.wait_for(
            asyncio.wrap_future(future), max(deadline - time.monotonic(), 0)
        )
    except TimeoutError:
        return _whole_request(requested, TimeoutException("The request timed out."))
    except Exception as e:  # noqa: BLE001 - NOT_CONTROLLER and friends answer every partition
        return _whole_request(requested, e)
    await _await_leaders_in_metadata(apis.metadata_cache, outcomes, deadline)
    return _response(outcomes)


async def _await_leaders_in_metadata(
    cache: MetadataCache, outcomes: dict[TopicPartition, Outcome], deadline: float
) -> None:
    def shown(tp: TopicPartition, leader: int) -> bool:
        info = cache.partition_info(tp.topic, tp.partition)
        return info is not None and info.leader == leader

    waiting = {tp: leader for tp, leader in outcomes.items() if isinstance(leader, int)}
    while True:
        waiting = {tp: leader for tp, leader in waiting.items() if not shown(tp, leader)}
        if not waiting:
            return
        if time.monotonic() >= deadline:
            for tp in waiting:
                outcomes[tp] = TimeoutException("The request timed out.")
            return
        await asyncio.sleep(METADATA_POLL_S)


def _whole_request(requested: frozenset[TopicPartition] | None, e: Exception) -> ElectLeadersResponse:
    response = _response(dict.fromkeys(requested or (), e))
    response.error_code = error_code(e)
    return response


def _response(outcomes: dict[TopicPartition, Outcome]) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = defaultdict(list)
    for tp, outcome in sorted(outcomes.items()):
        error = outcome if isinstance(outcome, Exception) else None
        by_topic[tp.topic].append(PartitionResult(
            partition_id=tp.partition,
            error_code=0 if error is None else error_code(error),
            error_message=None if error is None else _message(error),
        ))  # fmt: skip
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=0,
        replica_election_results=[
            ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()
        ],
    )


def _message(error: Exception) -> str | None:
    # ELECTION_NOT_NEEDED carries no message in Kafka's answer; the client names it from the code.
    message = error.message if isinstance(error, KafkaError) else str(error)
    return None if message == getattr(error, "name", None) else message
