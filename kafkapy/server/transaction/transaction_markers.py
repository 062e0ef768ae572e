"""Transaction markers: the partition leader's side (WriteTxnMarkers) and the coordinator's
side (Kafka's TransactionMarkerChannelManager).

A leader appends one control batch (COMMIT or ABORT, with the coordinator epoch) per partition
named in a marker, with acks=-1; a marker on a __consumer_offsets partition also makes the group
coordinator apply (commit) or drop (abort) the producer's pending transactional offsets.

The coordinator sends each transaction's markers to the current leaders of its partitions,
grouped by broker: to itself directly, to other brokers as WriteTxnMarkers requests (a blocking
connection on an executor thread). Partitions that fail with a retriable error are retried
after a back-off until they succeed, their topic is gone, or this broker stops coordinating
the transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kafkapy.client.sasl_client import PLAINTEXT, ClientSecurity
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.control_records import ControlRecordType, EndTxnMarker, build_control_batch
from kafkapy.protocol.errors import (
    InvalidProducerEpochException,
    ProducerFencedException,
    TransactionCoordinatorFencedException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkapy.server.transaction.transaction_state import now_ms

log = logging.getLogger("kafkapy.coordinator.transaction.TransactionMarkerChannelManager")

WRITE_TXN_MARKERS_VERSION = 1
RETRY_BACKOFF_S = 0.1
# A marker refused with these will never be accepted: a newer coordinator or producer epoch wrote
# to the partition already (Kafka's completion handler stops sending too).
_FATAL = {
    InvalidProducerEpochException.code,
    ProducerFencedException.code,
    TransactionCoordinatorFencedException.code,
}


@dataclass(frozen=True, slots=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]


PartitionCodes = dict[tuple[str, int], int]


async def write_txn_markers(
    replica_manager: Any, group_coordinator: Any, marker: TxnMarker, timeout_ms: int
) -> PartitionCodes:
    """The leader's side: append the control batches of one marker; an error code per partition."""
    kind = ControlRecordType.COMMIT if marker.committed else ControlRecordType.ABORT
    end = EndTxnMarker(kind, marker.coordinator_epoch)
    now = now_ms()
    entries = [
        (TopicPartition(t, p), build_control_batch(marker.producer_id, marker.producer_epoch, end, now))
        for t, p in marker.partitions
    ]
    results = replica_manager.append_records(-1, entries, from_coordinator=True)
    if any(r.error_code == 0 for r in results.values()):
        await replica_manager.await_isr(results, timeout_ms)
    codes = {(tp.topic, tp.partition): r.error_code for tp, r in results.items()}
    if group_coordinator is not None:
        for (topic, partition), code in codes.items():
            if topic == GROUP_METADATA_TOPIC_NAME and code == 0:
                group_coordinator.complete_txn_offsets(marker.producer_id, partition, marker.committed)
    return codes


LocalWriter = Callable[[TxnMarker], Awaitable[PartitionCodes]]


class TransactionMarkerChannel:
    """The coordinator's side: deliver one transaction's markers to every partition's leader."""

    def __init__(
        self,
        broker_id: int,
        metadata_cache: Any,
        listener_name: str,
        local_writer: LocalWriter,
        request_timeout_ms: int,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.listener_name = listener_name
        self.local_writer = local_writer
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[tuple[str, int], Any] = {}
        # The inter-broker listener's protocol and credentials: the leader authorizes
        # WriteTxnMarkers as this broker's principal (ClusterAction).
        self.security = security

    async def send(self, marker: TxnMarker, still_valid: Callable[[], bool]) -> bool:
        """True once every partition has its marker (or is gone); False if this coordinator
        stopped owning the transaction first."""
        remaining = set(marker.partitions)
        cache = self.metadata_cache
        while remaining:
            if not still_valid():
                return False
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for topic, partition in sorted(remaining):
                if not cache.contains_topic(topic):
                    log.info(
                        "Dropping marker of producer %d for %s-%d: the topic is gone",
                        marker.producer_id,
                        topic,
                        partition,
                    )
                    remaining.discard((topic, partition))
                    continue
                info = cache.partition_info(topic, partition)
                if info is not None and info.leader >= 0:
                    by_leader.setdefault(info.leader, []).append((topic, partition))
            for leader, partitions in by_leader.items():
                one = TxnMarker(
                    marker.producer_id, marker.producer_epoch, marker.committed, marker.coordinator_epoch,
                    tuple(partitions),
                )  # fmt: skip
                try:
                    codes = await self._send_to(leader, one)
                except Exception as e:  # connection refused, timeout: the broker may be restarting
                    log.warning("Sending transaction markers to broker %d failed: %s; will retry", leader, e)
                    continue
                for tp, code in codes.items():
                    if code == 0:
                        remaining.discard(tp)
                    elif code in _FATAL:
                        log.warning(
                            "Marker of producer %d for %s-%d refused with error %d; not retried",
                            marker.producer_id, tp[0], tp[1], code,
                        )  # fmt: skip
                        remaining.discard(tp)
                    elif code != UnknownTopicOrPartitionException.code or cache.contains_topic(tp[0]):
                        log.debug("Marker for %s-%d failed with error %d; retrying", tp[0], tp[1], code)
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S)
        return True

    async def _send_to(self, broker_id: int, marker: TxnMarker) -> PartitionCodes:
        if broker_id == self.broker_id:
            return await self.local_writer(marker)
        endpoint = self.metadata_cache.alive_endpoint(broker_id, self.listener_name)
        if endpoint is None:
            raise ConnectionError(f"broker {broker_id} is not alive")
        return await asyncio.get_running_loop().run_in_executor(None, self._send_remote, endpoint, marker)

    def _send_remote(self, endpoint: tuple[str, int], marker: TxnMarker) -> PartitionCodes:
        from kafkapy.client.connection import BrokerConnection

        conn = self._connections.get(endpoint)
        if conn is None:
            conn = self._connections[endpoint] = BrokerConnection(
                endpoint[0], endpoint[1], client_id=f"broker-{self.broker_id}-txn-marker-sender",
                timeout=self.request_timeout_ms / 1000, security=self.security,
            )  # fmt: skip
        by_topic: dict[str, list[int]] = {}
        for t, p in marker.partitions:
            by_topic.setdefault(t, []).append(p)
        body = {
            "markers": [
                {
                    "producer_id": marker.producer_id,
                    "producer_epoch": marker.producer_epoch,
                    "transaction_result": marker.committed,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
                    "coordinator_epoch": marker.coordinator_epoch,
                }
            ]
        }
        try:
            response = conn.send(ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body)
        except Exception:
            conn.close()
            self._connections.pop(endpoint, None)
            raise
        codes: PartitionCodes = {}
        for m in response.markers:  # type: ignore[union-attr]
            for topic in m.topics:
                for p in topic.partitions:
                    codes[(topic.name, p.partition_index)] = p.error_code
        return codes

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
