"""Produce: the append hot path.

The request is decoded by hand (kafkapy.protocol.produce) so that each partition's record set
stays a view into the connection's receive buffer; the log validates the batches, patches their
base offsets in place and writes them. No record is decoded here. acks=all waits for the ISR
in the produce purgatory; acks=0 gets no response (and, as in Kafka, a failed acks=0 request
closes the connection, the only way to tell such a client something went wrong).

With an authorizer, as Kafka 3.0's KafkaApis: a request carrying transactional batches needs
Write on its transactional id (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
each topic needs Write (else its partitions TOPIC_AUTHORIZATION_FAILED). One decision per topic;
whether batches are transactional is read from each partition's first batch header only.
(Kafka 3.0 dropped the IdempotentWrite check here, KIP-679: Write on the topic suffices.)
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from collections.abc import Set as AbstractSet
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol import produce as produce_codec
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CorruptRecordException,
    InvalidRequiredAcksException,
    InvalidTopicException,
    TopicAuthorizationException,
    TransactionalIdAuthorizationException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.record_batch import ATTRIBUTES_OFFSET, Attr
from kafkapy.server.apis.auth_helper import authorize, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.replica_manager import ProduceResult
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.zk.topic_name import INTERNAL_TOPICS

log = logging.getLogger("kafkapy.server.KafkaApis")

_ATTRIBUTES_LOW = ATTRIBUTES_OFFSET + 1
_TRANSACTIONAL = int(Attr.TRANSACTIONAL)
_NO_TOPICS: frozenset[str] = frozenset()


@handles(ApiKey.PRODUCE, raw=True)
def handle_produce(apis: KafkaApis, request: Request) -> bytearray | None | Coroutine[None, None, bytearray]:
    header = request.header
    req = produce_codec.decode_produce_request(header.api_version, request.buffer, request.body_offset)
    acks = req.acks
    # In request order; None until the replica manager answers (a dict keeps insertion order
    # through update()). A partition named twice counts once, its last records, as in Kafka's map.
    results: dict[TopicPartition, ProduceResult | None] = {}
    entries: dict[TopicPartition, Any] = {}
    partition_info = apis.metadata_cache.partition_info
    # Request-level refusals answer every partition with the same error.
    unauthorized: AbstractSet[str] = _NO_TOPICS  # shared, not a new set per request
    if acks not in (-1, 0, 1):
        refused = InvalidRequiredAcksException.code
    elif apis.authorizer is not None:
        refused, unauthorized = _authorize(apis, request, req)
    else:
        refused = 0
    for topic, partitions in req.topics:
        # Only the broker's own coordinators write __consumer_offsets (through the replica
        # manager, not here): a client's batch there would be inflated and parsed when a
        # coordinator loads the partition. Kafka's ReplicaManager refuses it so.
        internal = topic in INTERNAL_TOPICS
        for index, records in partitions:
            tp = TopicPartition(topic, index)
            if refused:
                results[tp] = ProduceResult(refused)
            elif topic in unauthorized:
                results[tp] = ProduceResult(TopicAuthorizationException.code)
            elif internal:
                results[tp] = ProduceResult(
                    InvalidTopicException.code, error_message=f"Cannot append to internal topic {topic}"
                )
            elif partition_info(topic, index) is None:
                results[tp] = ProduceResult(UnknownTopicOrPartitionException.code)
            elif records is None or len(records) == 0:
                results[tp] = ProduceResult(CorruptRecordException.code)
                entries.pop(tp, None)
            else:
                results[tp] = None
                entries[tp] = records
    replica_manager = apis.replica_manager
    if entries:
        results.update(replica_manager.append_records(acks, entries.items()))
    if acks == 0:
        if any(r is not None and r.error_code for r in results.values()):
            from kafkapy.protocol.errors import ProtocolError

            raise ProtocolError("acks=0 produce request failed: closing the connection to tell the client")
        if apis.client_quotas.produce.enabled:
            # No response to carry it, but the connection is still muted (no request quota: Kafka's rule).
            apis.throttle(request, _bandwidth_throttle_ms(apis, request))
        return None
    # acks=all waits in purgatory unless the ISR already has it (a single-replica ISR always does).
    if acks == -1 and entries and not replica_manager.try_complete_acks_all(results):
        return _await_isr(apis, request, req, results)  # type: ignore[arg-type]  # every partition is answered by now
    return _respond(apis, request, results)  # type: ignore[arg-type]  # every partition is answered by now


def _authorize(apis: KafkaApis, request: Request, req: Any) -> tuple[int, AbstractSet[str]]:
    """(whole-request error, topics without Write)."""
    transactional = False
    for _, partitions in req.topics:
        for _, records in partitions:
            # The low byte of the first batch's i16 attributes (a plain int mask: IntFlag
            # arithmetic costs microseconds per request).
            if (
                records is not None
                and len(records) > _ATTRIBUTES_LOW
                and records[_ATTRIBUTES_LOW] & _TRANSACTIONAL
            ):
                transactional = True
    if transactional and (
        req.transactional_id is None
        or not authorize(apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)
    ):
        return TransactionalIdAuthorizationException.code, _NO_TOPICS
    topics = {topic for topic, _ in req.topics}
    return 0, topics - filter_authorized(apis, request, Operation.WRITE, ResourceType.TOPIC, topics)


async def _await_isr(
    apis: KafkaApis,
    request: Request,
    req: produce_codec.ProduceRequest,
    results: dict[TopicPartition, ProduceResult],
) -> bytearray:
    await apis.replica_manager.await_isr(results, req.timeout_ms)
    return _respond(apis, request, results)


def _bandwidth_throttle_ms(apis: KafkaApis, request: Request) -> int:
    # Kafka's sizeInBytes: the whole request counts against producer_byte_rate, once.
    return apis.client_quotas.produce.record_and_get_throttle_time_ms(
        apis.quota_user(request), request.header.client_id or "", len(request.buffer)
    )


def _throttle_ms(apis: KafkaApis, request: Request) -> int:
    """Record the request against the producer byte-rate and request quotas that apply; the
    connection is throttled for the longer of the two throttle times (also the one answered)."""
    throttle_ms = _bandwidth_throttle_ms(apis, request) if apis.client_quotas.produce.enabled else 0
    if request.loop_start_ns or request.loop_ns:
        throttle_ms = max(throttle_ms, apis.request_throttle_time_ms(request))
    if throttle_ms:
        apis.throttle(request, throttle_ms)
    return throttle_ms


def _respond(apis: KafkaApis, request: Request, results: dict[TopicPartition, ProduceResult]) -> bytearray:
    header = request.header
    # A few attribute checks when no quota applies: this runs for every produce answer.
    throttle_ms = (
        _throttle_ms(apis, request)
        if request.loop_start_ns or request.loop_ns or apis.client_quotas.produce.enabled
        else 0
    )
    topics: list[tuple[str, list[tuple[Any, ...]]]] = []
    rows: list[tuple[Any, ...]] = []
    current = None
    for (topic, index), r in results.items():
        if topic != current:
            current, rows = topic, []
            topics.append((topic, rows))
        rows.append(
            (index, r.error_code, r.base_offset, r.log_append_time, r.log_start_offset, (), r.error_message)
        )
    return produce_codec.encode_produce_response_frame(
        header.api_version,
        header.correlation_id,
        topics,  # type: ignore[arg-type]  # rows in ProducePartitionResponse's field order
        throttle_ms,
    )
