"""A starting broker answers the controller at once and clients only after start-up (issue 12),
and its Metadata never says "no controller, no brokers" while it knows better."""

from __future__ import annotations

import asyncio
import inspect
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.apis.kafka_apis import ApiCollaborators, KafkaApis
from kafkapy.server.metadata_cache import MetadataCache
from kafkapy.server.network.request_channel import Request
from kafkapy.server.quota.client_quota_manager import QuotaWindow
from kafkapy.server.quota.quota_managers import ClientQuotas, QuotaSettings
from kafkapy.zk.cluster_znodes import BrokerInfo, EndPoint


def _apis(controller_id: int = -1) -> KafkaApis:
    """A KafkaApis wired as KafkaServer.startup wires it, with stand-ins for what Metadata
    and ApiVersions do not touch."""
    info = BrokerInfo(7, (EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),))
    unused: Any = None
    apis = KafkaApis(
        ApiCollaborators(
            config=cast(
                Any,
                SimpleNamespace(
                    auto_create_topics_enable=False,
                    kafkapy_request_max_elements=2_000_000,
                    max_incremental_fetch_session_cache_slots=1000,
                ),
            ),
            broker_id=7,
            cluster_id="cluster",
            zk=unused,
            replica_manager=cast(Any, SimpleNamespace(fetch_session_watch=None)),
            metadata_cache=MetadataCache(7),
            log_manager=unused,
            log_config_for=unused,
            dynamic_broker_config=unused,
            producer_id_manager=unused,
            group_coordinator=unused,
            transaction_coordinator=unused,
            client_quotas=ClientQuotas(QuotaSettings(QuotaWindow(11, 1.0))),
            token_manager=unused,
        )
    )
    apis.bind_controller(
        cast(Any, SimpleNamespace(broker_info=info)),
        cast(Any, SimpleNamespace(active_controller_id=controller_id)),
    )
    return apis


def _request(api_key: int, version: int, body: dict[str, Any]) -> Request:
    frame = framing.encode_request_header(api_key, version, 1, "test") + messages.encode_request(
        api_key, version, body
    )
    header = framing.parse_request_header(frame)
    return Request(header, memoryview(frame), header.body_offset, "c1", "127.0.0.1", "PLAINTEXT")


def _metadata(frame: bytes) -> Any:
    _, offset = framing.parse_response_header(frame[4:], framing.response_header_version(3, 1))
    return messages.decode_response(3, 1, frame[4:], offset)


@pytest.mark.timeout(10)
def test_clients_wait_for_start_up_and_the_controller_does_not() -> None:
    async def run() -> None:
        apis = _apis(controller_id=7)
        metadata = apis.handle(_request(ApiKey.METADATA, 1, {"topics": []}))
        assert inspect.isawaitable(metadata)  # parked until start_processing()
        versions = apis.handle(_request(ApiKey.API_VERSIONS, 0, {}))
        assert isinstance(versions, bytes)
        task = asyncio.ensure_future(metadata)
        await asyncio.sleep(0.05)
        assert not task.done()
        apis.start_processing()
        answer = _metadata(await asyncio.wait_for(task, 1))
        # No UpdateMetadata yet: the controller from /controller and this broker, not -1 and [].
        assert answer.controller_id == 7
        assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [(7, "127.0.0.1", 9092)]
        assert isinstance(apis.handle(_request(ApiKey.METADATA, 1, {"topics": []})), bytes)

    asyncio.run(run())
