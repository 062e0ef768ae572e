"""DescribeCluster: brokers, controller and cluster id as this broker's metadata cache has them."""

from __future__ import annotations

from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request

# Kafka's "authorized operations not requested" marker.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def brokers_for_listener(apis: KafkaApis, listener: str) -> list[dict[str, Any]]:
    out = []
    for b in apis.metadata_cache.brokers.values():
        if listener in b.endpoints:
            host, port, _ = b.endpoints[listener]
            out.append({"node_id": b.id, "broker_id": b.id, "host": host, "port": port, "rack": b.rack})
    if not out:
        # No UpdateMetadata yet (start-up gave up waiting for it): at least this broker, which
        # is alive and answering; an empty list leaves clients with nobody to ask.
        out = _this_broker(apis, listener)
    return sorted(out, key=lambda x: x["node_id"])


def _this_broker(apis: KafkaApis, listener: str) -> list[dict[str, Any]]:
    registration = apis.server.registration
    if registration is None:
        return []
    info = registration.broker_info
    return [
        {"node_id": info.id, "broker_id": info.id, "host": ep.host or "", "port": ep.port, "rack": info.rack}
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
    controller = apis.server.controller
    return controller.active_controller_id if controller is not None else -1


@handles(ApiKey.DESCRIBE_CLUSTER)
def handle_describe_cluster(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": 1,
        "cluster_id": apis.server.cluster_id,
        "controller_id": controller_id(apis),
        "brokers": brokers_for_listener(apis, request.listener_name),
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
