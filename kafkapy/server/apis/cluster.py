"""DescribeCluster: brokers, controller and cluster id as this broker's metadata cache has them.

Its cluster authorized operations are computed when asked for, and only for a principal that
may Describe the cluster (0 otherwise), as Kafka answers."""

from __future__ import annotations

from typing import NamedTuple

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated.describe_cluster_request import DescribeClusterRequest
from kafkapy.protocol.generated.describe_cluster_response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from kafkapy.server.apis.auth_helper import authorize_cluster, authorized_operations
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import CLUSTER_NAME, Operation, ResourceType

# Kafka's "authorized operations not requested" marker.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


class BrokerAddress(NamedTuple):
    """A live broker as clients of one listener reach it (Metadata and DescribeCluster rows)."""

    id: int
    host: str
    port: int
    rack: str | None


def brokers_for_listener(apis: KafkaApis, listener: str) -> list[BrokerAddress]:
    out = []
    for b in apis.metadata_cache.brokers.values():
        if listener in b.endpoints:
            host, port, _ = b.endpoints[listener]
            out.append(BrokerAddress(b.id, host, port, b.rack))
    if not out:
        # No UpdateMetadata yet (start-up gave up waiting for it): at least this broker, which
        # is alive and answering; an empty list leaves clients with nobody to ask.
        out = _this_broker(apis, listener)
    return sorted(out, key=lambda x: x.id)


def _this_broker(apis: KafkaApis, listener: str) -> list[BrokerAddress]:
    registration = apis.registration
    if registration is None:
        return []
    info = registration.broker_info
    return [
        BrokerAddress(info.id, ep.host or "", ep.port, info.rack)
        for ep in info.endpoints
        if ep.listener_name == listener
    ]


def controller_id(apis: KafkaApis) -> int:
    cid = apis.metadata_cache.controller_id
    if cid is not None:
        result: int = cid
        return result
    # Before the first UpdateMetadata: the controller this broker knows from /controller (every
    # broker's KafkaController watches it), rather than -1, which admin clients do not re-ask.
    controller = apis.controller
    return controller.active_controller_id if controller is not None else -1


@handles(ApiKey.DESCRIBE_CLUSTER)
def handle_describe_cluster(
    apis: KafkaApis, request: Request, body: DescribeClusterRequest
) -> DescribeClusterResponse:
    operations = AUTHORIZED_OPERATIONS_OMITTED
    if body.include_cluster_authorized_operations:
        operations = (
            authorized_operations(apis, request, ResourceType.CLUSTER, CLUSTER_NAME)
            if authorize_cluster(apis, request, Operation.DESCRIBE)
            else 0
        )
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=1,
        cluster_id=apis.cluster_id or "",  # set at start-up, before requests are served
        controller_id=controller_id(apis),
        brokers=[
            DescribeClusterBroker(broker_id=b.id, host=b.host, port=b.port, rack=b.rack)
            for b in brokers_for_listener(apis, request.listener_name)
        ],
        cluster_authorized_operations=operations,
    )
