"""Produce: the append hot path.

The request is decoded by hand (kafkapy.protocol.produce) so that each partition's record set
stays a view into the connection's receive buffer; the log validates the batches, patches their
base offsets in place and writes them. No record is decoded here. acks=all waits for the ISR
in the produce purgatory; acks=0 gets no response (and, as in Kafka, a failed acks=0 request
closes the connection, the only way to tell such a client something went wrong).
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any

from kafkapy.protocol import produce as produce_codec
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CorruptRecordException,
    InvalidRequiredAcksException,
    InvalidTopicException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.log.topic_partition import TopicPartition
from kafkapy.server.network.request_channel import Request
from kafkapy.server.replica_manager import ProduceResult
from kafkapy.server.zk.topic_name import INTERNAL_TOPICS

log = logging.getLogger("kafkapy.server.KafkaApis")


@handles(ApiKey.PRODUCE, raw=True)
def handle_produce(apis: KafkaApis, request: Request) -> bytearray | None | Coroutine[None, None, bytearray]:
    header = request.header
    req = produce_codec.decode_produce_request(header.api_version, request.buffer, request.body_offset)
    acks = req.acks
    # In request order; None until the replica manager answers (a dict keeps insertion order
    # through update()). A partition named twice counts once, its last records, as in Kafka's map.
    results: dict[TopicPartition, ProduceResult | None] = {}
    entries: dict[TopicPartition, Any] = {}
    partition_info = apis.server.metadata_cache.partition_info  # type: ignore[union-attr]  # set in KafkaServer.startup before requests are served
    # Request-level refusals answer every partition with the same error.
    if acks not in (-1, 0, 1):
        refused = InvalidRequiredAcksException.code
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
    replica_manager = apis.server.replica_manager
    if entries:
        results.update(replica_manager.append_records(acks, entries.items()))  # type: ignore[union-attr]  # set in KafkaServer.startup before requests are served
    if acks == 0:
        if any(r is not None and r.error_code for r in results.values()):
            from kafkapy.protocol.errors import ProtocolError

            raise ProtocolError("acks=0 produce request failed: closing the connection to tell the client")
        return None
    # acks=all waits in purgatory unless the ISR already has it (a single-replica ISR always does).
    if acks == -1 and entries and not replica_manager.try_complete_acks_all(results):  # type: ignore[union-attr]  # set in KafkaServer.startup before requests are served
        return _await_isr(apis, request, req, results)  # type: ignore[arg-type]  # every partition is answered by now
    return _respond(request, results)  # type: ignore[arg-type]  # every partition is answered by now


async def _await_isr(
    apis: KafkaApis,
    request: Request,
    req: produce_codec.ProduceRequest,
    results: dict[TopicPartition, ProduceResult],
) -> bytearray:
    await apis.replica_manager.await_isr(results, req.timeout_ms)
    return _respond(request, results)


def _respond(request: Request, results: dict[TopicPartition, ProduceResult]) -> bytearray:
    header = request.header
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
    return produce_codec.encode_produce_response_frame(header.api_version, header.correlation_id, topics)  # type: ignore[arg-type]  # rows in ProducePartitionResponse's field order
