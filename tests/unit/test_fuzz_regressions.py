"""Handler crashes the request fuzzer (tests/faults/test_request_fuzz.py) found, each pinned
with the smallest request that reached it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kafkapy.common.config_def import LONG_MAX
from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.apis import topics
from kafkapy.server.apis.offsets import _expire_timestamp
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata, offset_value
from kafkapy.zk.errors import TopicAlreadyMarkedForDeletionError


@pytest.mark.timeout(10)
def test_offset_commit_retention_near_long_max_saturates_instead_of_overflowing() -> None:
    """OffsetCommit v2 with retention_time_ms = 2^63-1: now + retention did not fit the int64
    of the offset value record, and the handler died with struct.error."""
    frame_body = messages.encode_request(
        ApiKey.OFFSET_COMMIT,
        2,
        {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": LONG_MAX,
         "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5}]}]},
    )  # fmt: skip
    body = messages.decode_request(ApiKey.OFFSET_COMMIT, 2, frame_body)
    now = 1_700_000_000_000
    expire = _expire_timestamp(now, body.retention_time_ms)
    assert expire == LONG_MAX
    assert _expire_timestamp(now, -1) is None
    assert _expire_timestamp(now, 1000) == now + 1000
    offset_value(OffsetAndMetadata(5, -1, "", now, expire))  # encodes


@pytest.mark.timeout(10)
def test_delete_topics_of_a_topic_already_marked_for_deletion_is_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second DeleteTopics while the first deletion is under way: Kafka's ZkAdminManager
    answers NONE and waits for the same deletion; the handler let AdminZkClient's
    TopicAlreadyMarkedForDeletionError escape and the connection was closed."""

    class _Admin:
        def delete_topic(self, topic: str) -> None:
            raise TopicAlreadyMarkedForDeletionError(f"Topic {topic} is already marked for deletion")

    present = {"gone": True}
    cache = SimpleNamespace(
        topic_id=lambda name: None,
        topic_name=lambda topic_id: None,
        contains_topic=lambda name: present.pop(name, False),  # deleted once looked at
    )
    apis: Any = SimpleNamespace(
        metadata_cache=cache,
        config=SimpleNamespace(delete_topic_enable=True),
        controller=SimpleNamespace(is_active=lambda: True),
        authorizer=None,
    )
    monkeypatch.setattr(topics, "_admin", lambda apis: _Admin())
    request: Any = SimpleNamespace(header=SimpleNamespace(api_version=4))
    body = SimpleNamespace(topic_names=["gone"], timeout_ms=1000)
    response = asyncio.run(topics.handle_delete_topics(apis, request, body))
    assert [(r.name, r.error_code) for r in response.responses] == [("gone", 0)]
