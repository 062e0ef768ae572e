"""InitProducerId: idempotent producers get a new id here; a transactional id goes to the
TransactionCoordinator (epoch bump, fencing of the previous producer).

Authorization: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without
one, IdempotentWrite on the cluster or, since Kafka 3.0 (KIP-679, idempotence on by default in
clients), Write on any topic (CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import asyncio

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    CoordinatorNotAvailableException,
    TransactionalIdAuthorizationException,
)
from kafkapy.protocol.generated.init_producer_id_request import InitProducerIdRequest
from kafkapy.protocol.generated.init_producer_id_response import InitProducerIdResponse
from kafkapy.server.apis.auth_helper import authorize, authorize_by_resource_type, authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.apis.transactions import fenced_for_version, txn_coordinator
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType


@handles(ApiKey.INIT_PRODUCER_ID)
async def handle_init_producer_id(
    apis: KafkaApis, request: Request, body: InitProducerIdRequest
) -> InitProducerIdResponse:
    version = request.header.api_version
    if body.transactional_id is not None:
        tc = txn_coordinator(apis)
        if not authorize(
            apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
        ):
            code, pid, epoch = TransactionalIdAuthorizationException.code, -1, -1
        elif tc is None:
            code, pid, epoch = CoordinatorNotAvailableException.code, -1, -1
        else:
            code, pid, epoch = await tc.init_producer_id(
                body.transactional_id,
                body.transaction_timeout_ms,
                body.producer_id if version >= 3 else -1,
                body.producer_epoch if version >= 3 else -1,
            )
        code = fenced_for_version(code, version, 4)
        return InitProducerIdResponse(
            throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=epoch
        )
    if not (
        authorize_cluster(apis, request, Operation.IDEMPOTENT_WRITE)
        or authorize_by_resource_type(apis, request, Operation.WRITE, ResourceType.TOPIC)
    ):
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=ClusterAuthorizationException.code,
            producer_id=-1,
            producer_epoch=-1,
        )
    if version >= 3 and body.producer_id >= 0:
        # KIP-360: a producer that lost track of its sequence asks to bump its epoch.
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=0,
            producer_id=body.producer_id,
            producer_epoch=(body.producer_epoch + 1) & 0x7FFF,
        )
    manager = apis.producer_id_manager
    pid = await asyncio.get_running_loop().run_in_executor(None, manager.generate_producer_id)
    return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
