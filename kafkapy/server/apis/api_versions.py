"""ApiVersions: the versions kafkapy serves, for the APIs that have handlers."""

from __future__ import annotations

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated.api_versions_request import ApiVersionsRequest
from kafkapy.protocol.generated.api_versions_response import ApiVersion, ApiVersionsResponse
from kafkapy.server.apis.kafka_apis import KafkaApis, advertised, handles
from kafkapy.server.network.request_channel import Request


@handles(ApiKey.API_VERSIONS)
def handle_api_versions(apis: KafkaApis, request: Request, body: ApiVersionsRequest) -> ApiVersionsResponse:
    keys = [ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in advertised()]
    return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
