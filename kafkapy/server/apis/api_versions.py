"""ApiVersions: the versions kafkapy serves, for the APIs that have handlers."""

from __future__ import annotations

from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.apis.kafka_apis import KafkaApis, advertised, handles
from kafkapy.server.network.request_channel import Request


@handles(ApiKey.API_VERSIONS)
def handle_api_versions(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    keys = [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in advertised()]
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
