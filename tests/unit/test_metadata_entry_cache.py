"""The Metadata handler's per-topic entries are built once per metadata change (issue 17): an
UpdateMetadata naming a topic, or changing the live brokers, drops what it changes and nothing else."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from kafkapy.protocol.constants import LEADER_DURING_DELETE
from kafkapy.protocol.generated.update_metadata_request import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from kafkapy.server.apis.metadata import topic_metadata
from kafkapy.server.metadata_cache import MetadataCache


def _broker(broker_id: int) -> UpdateMetadataBroker:
    return UpdateMetadataBroker(
        id=broker_id,
        endpoints=[UpdateMetadataEndpoint(port=9092 + broker_id, host="h", listener="PLAINTEXT")],
    )


def _update(
    brokers: list[int], topics: dict[str, dict[int, int]], leader_epoch: int = 1
) -> UpdateMetadataRequest:
    """topics: {topic: {partition: leader}}, every partition on brokers 0, 1, 2."""
    return UpdateMetadataRequest(
        controller_id=0,
        live_brokers=[_broker(b) for b in brokers],
        topic_states=[
            UpdateMetadataTopicState(
                topic_name=topic,
                partition_states=[
                    UpdateMetadataPartitionState(
                        partition_index=p,
                        leader=leader,
                        leader_epoch=leader_epoch,
                        isr=[0, 1, 2],
                        replicas=[0, 1, 2],
                    )
                    for p, leader in parts.items()
                ],
            )
            for topic, parts in topics.items()
        ],
    )


def test_topic_entries_are_reused_until_an_update_names_the_topic_or_changes_brokers() -> None:
    async def run() -> None:
        cache = MetadataCache(0)
        apis = cast(Any, SimpleNamespace(metadata_cache=cache))
        cache.update_metadata(_update([0, 1, 2], {"a": {0: 0, 1: 1}, "b": {0: 2}}))
        a1, b1 = topic_metadata(apis, "a", "PLAINTEXT"), topic_metadata(apis, "b", "PLAINTEXT")
        assert [p.leader_id for p in a1.partitions] == [0, 1]
        assert topic_metadata(apis, "a", "PLAINTEXT") is a1

        # An incremental update of one partition of "a": "a" is rebuilt, "b" stays.
        cache.update_metadata(_update([0, 1, 2], {"a": {1: 2}}, leader_epoch=2))
        a2 = topic_metadata(apis, "a", "PLAINTEXT")
        assert a2 is not a1
        assert [(p.leader_id, p.leader_epoch) for p in a2.partitions] == [(0, 1), (2, 2)]
        assert topic_metadata(apis, "b", "PLAINTEXT") is b1

        # Broker 2 dies: its leaderships and replicas read differently everywhere.
        cache.update_metadata(_update([0, 1], {}))
        b2 = topic_metadata(apis, "b", "PLAINTEXT")
        assert b2 is not b1
        assert b2.partitions[0].leader_id == -1 and b2.partitions[0].offline_replicas == [2]

        # Another listener has entries of its own (the endpoints differ).
        assert topic_metadata(apis, "b", "OTHER").partitions[0].leader_id == -1

        # A deleted topic leaves nothing behind.
        cache.update_metadata(_update([0, 1], {"b": {0: LEADER_DURING_DELETE}}))
        assert topic_metadata(apis, "b", "PLAINTEXT").partitions == []

    asyncio.run(run())
