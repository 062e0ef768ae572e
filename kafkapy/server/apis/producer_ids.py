"""InitProducerId for idempotent producers (transactions are not supported yet)."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import TransactionalIdAuthorizationException
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request


@handles(ApiKey.INIT_PRODUCER_ID)
async def handle_init_producer_id(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    if body.transactional_id is not None:
        # Without a transaction coordinator, refusing is the honest answer: the client fails
        # fast with a fatal error instead of believing its writes are transactional.
        return {
            "throttle_time_ms": 0,
            "error_code": TransactionalIdAuthorizationException.code,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    if request.header.api_version >= 3 and body.producer_id >= 0:
        # KIP-360: a producer that lost track of its sequence asks to bump its epoch.
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "producer_id": body.producer_id,
            "producer_epoch": (body.producer_epoch + 1) & 0x7FFF,
        }
    manager = apis.server.producer_id_manager
    pid = await asyncio.get_running_loop().run_in_executor(None, manager.generate_producer_id)
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}
