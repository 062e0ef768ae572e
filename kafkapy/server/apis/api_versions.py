"""ApiVersions: the versions kafkapy serves, straight from the SUPPORTED_VERSIONS table."""

from __future__ import annotations

from typing import Any

from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.errors import UnsupportedVersionException
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request


def _api_keys() -> list[dict[str, int]]:
    return [
        {"api_key": int(key), "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    ]


def unsupported_version_response() -> dict[str, Any]:
    return {"error_code": UnsupportedVersionException.code, "api_keys": _api_keys(), "throttle_time_ms": 0}


@handles(ApiKey.API_VERSIONS)
def handle_api_versions(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    return {"error_code": 0, "api_keys": _api_keys(), "throttle_time_ms": 0}
