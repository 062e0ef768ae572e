"""GroupOffsets: a group's committed offsets through its coordinator (FindCoordinator,
OffsetFetch, OffsetCommit), for consumers that assign partitions themselves.

Commits go in as a "simple" consumer would send them (generation -1, no member id): Kafka's
coordinator accepts those for a group with no active members. NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE / LOAD_IN_PROGRESS mean: find the coordinator again and retry.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kafkapy.client.network_client import NetworkClient
from kafkapy.client.network_client_utils import await_metadata, send_and_receive
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    NotCoordinatorException,
    TimeoutException,
    for_code,
)
from kafkapy.protocol.generated.find_coordinator_request import FindCoordinatorRequest
from kafkapy.protocol.generated.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kafkapy.protocol.generated.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestTopic

FIND_COORDINATOR_MAX_VERSION: Final = 3  # v4 batches keys
OFFSET_FETCH_MAX_VERSION: Final = 7  # v8 batches groups
OFFSET_COMMIT_MAX_VERSION: Final = 8
_RETRY: Final = {
    NotCoordinatorException.code,
    CoordinatorNotAvailableException.code,
    CoordinatorLoadInProgressException.code,
}


class _Retry(Exception):
    pass


class GroupOffsets:
    def __init__(self, client: NetworkClient, group_id: str, timeout: float) -> None:
        self.client = client
        self.group_id = group_id
        self.timeout = timeout
        self._coordinator: int | None = None

    def coordinator(self) -> int:
        if self._coordinator is None:
            await_metadata(self.client, [], self.timeout)
            node = self.client.least_loaded_node()
            if node is None:
                raise CoordinatorNotAvailableException("no broker available to find the coordinator")
            resp = send_and_receive(
                self.client, node, ApiKey.FIND_COORDINATOR, FindCoordinatorRequest(key=self.group_id, key_type=0),
                max_version=FIND_COORDINATOR_MAX_VERSION,
            )  # fmt: skip
            if resp.error_code:
                if resp.error_code in _RETRY:
                    raise _Retry()
                raise for_code(resp.error_code, resp.error_message or "FindCoordinator")
            self._coordinator = resp.node_id
        return self._coordinator

    def _with_retries(self, what: str, call: Any) -> Any:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return call(self.coordinator())
            except _Retry:
                self._coordinator = None
            if time.monotonic() > deadline:
                raise TimeoutException(f"{what} for group {self.group_id} timed out: no coordinator")
            time.sleep(0.1)

    def fetch(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Committed offsets (None where the group has none)."""
        if not tps:
            return {}
        topics: dict[str, list[int]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = OffsetFetchRequest(
            group_id=self.group_id,
            topics=[OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()],
            require_stable=False,
        )

        def call(node: int) -> dict[TopicPartition, int | None]:
            resp = send_and_receive(
                self.client, node, ApiKey.OFFSET_FETCH, body, max_version=OFFSET_FETCH_MAX_VERSION
            )
            if resp.error_code in _RETRY:
                raise _Retry()
            if resp.error_code:
                raise for_code(resp.error_code, f"OffsetFetch for group {self.group_id}")
            out: dict[TopicPartition, int | None] = {}
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code in _RETRY:
                        raise _Retry()
                    if p.error_code:
                        raise for_code(p.error_code, f"OffsetFetch {t.name}-{p.partition_index}")
                    offset = p.committed_offset
                    out[TopicPartition(t.name, p.partition_index)] = offset if offset >= 0 else None
            return out

        return self._with_retries("OffsetFetch", call)

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset,
                    committed_leader_epoch=-1, committed_metadata="",
                )
            )  # fmt: skip
        body = OffsetCommitRequest(
            group_id=self.group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )

        def call(node: int) -> None:
            resp = send_and_receive(
                self.client, node, ApiKey.OFFSET_COMMIT, body, max_version=OFFSET_COMMIT_MAX_VERSION
            )
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code in _RETRY:
                        raise _Retry()
                    if p.error_code:
                        raise for_code(p.error_code, f"OffsetCommit {t.name}-{p.partition_index}")

        self._with_retries("OffsetCommit", call)
