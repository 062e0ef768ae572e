"""The transaction APIs (KIP-98): AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27) and TxnOffsetCommit (28); InitProducerId with a transactional id goes
through producer_ids.py, FindCoordinator for transactions through groups.py.

Handlers translate each version's wire shape to the TransactionCoordinator (or, for
WriteTxnMarkers, to the partition leaders' marker writer) and back. PRODUCER_FENCED is
answered as INVALID_PRODUCER_EPOCH to the versions before KIP-588 (Kafka's KafkaApis rule).
"""

from __future__ import annotations

import time
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    InvalidProducerEpochException,
    OperationNotAttemptedException,
    ProducerFencedException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from kafkapy.protocol.generated.add_offsets_to_txn_response import AddOffsetsToTxnResponse
from kafkapy.protocol.generated.add_partitions_to_txn_request import AddPartitionsToTxnRequest
from kafkapy.protocol.generated.add_partitions_to_txn_response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
)
from kafkapy.protocol.generated.end_txn_request import EndTxnRequest
from kafkapy.protocol.generated.end_txn_response import EndTxnResponse
from kafkapy.protocol.generated.txn_offset_commit_request import TxnOffsetCommitRequest
from kafkapy.protocol.generated.txn_offset_commit_response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kafkapy.protocol.generated.write_txn_markers_request import WriteTxnMarkersRequest
from kafkapy.protocol.generated.write_txn_markers_response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata
from kafkapy.server.network.request_channel import Request
from kafkapy.server.transaction.transaction_markers import TxnMarker, write_txn_markers

_NOT_AVAILABLE = CoordinatorNotAvailableException.code


def txn_coordinator(apis: KafkaApis) -> Any:
    tc = getattr(apis.server, "transaction_coordinator", None)
    return tc if tc is not None and tc.active else None


def fenced_for_version(code: int, version: int, first_version_with_fenced: int) -> int:
    """KIP-588: older clients only know INVALID_PRODUCER_EPOCH."""
    if code == ProducerFencedException.code and version < first_version_with_fenced:
        return InvalidProducerEpochException.code
    return code


@handles(ApiKey.ADD_PARTITIONS_TO_TXN)
async def handle_add_partitions_to_txn(
    apis: KafkaApis, request: Request, body: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    version = request.header.api_version
    topics = body.v3_and_below_topics
    wanted = {(t.name, p) for t in topics for p in t.partitions}
    unknown = {tp for tp in wanted if apis.metadata_cache.partition_info(*tp) is None}
    tc = txn_coordinator(apis)
    if tc is None:
        code = _NOT_AVAILABLE
    elif unknown:
        code = 0  # the others are answered OPERATION_NOT_ATTEMPTED, as Kafka does
    else:
        code = await tc.add_partitions(
            body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch, wanted,
        )  # fmt: skip
        code = fenced_for_version(code, version, 2)

    def partition_code(tp: tuple[str, int]) -> int:
        if unknown:
            return UnknownTopicOrPartitionException.code if tp in unknown else OperationNotAttemptedException.code
        return code

    return AddPartitionsToTxnResponse(
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=partition_code((t.name, p))
                    )
                    for p in t.partitions
                ],
            )
            for t in topics
        ],
    )


@handles(ApiKey.ADD_OFFSETS_TO_TXN)
async def handle_add_offsets_to_txn(
    apis: KafkaApis, request: Request, body: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    tc = txn_coordinator(apis)
    if tc is None:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code = await tc.add_offsets(body.transactional_id, body.producer_id, body.producer_epoch, body.group_id)
    return AddOffsetsToTxnResponse(
        throttle_time_ms=0, error_code=fenced_for_version(code, request.header.api_version, 2)
    )


@handles(ApiKey.END_TXN)
async def handle_end_txn(apis: KafkaApis, request: Request, body: EndTxnRequest) -> EndTxnResponse:
    tc = txn_coordinator(apis)
    if tc is None:
        return EndTxnResponse(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code = await tc.end_txn(body.transactional_id, body.producer_id, body.producer_epoch, body.committed)
    return EndTxnResponse(throttle_time_ms=0, error_code=fenced_for_version(code, request.header.api_version, 2))


@handles(ApiKey.WRITE_TXN_MARKERS)
async def handle_write_txn_markers(
    apis: KafkaApis, request: Request, body: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    """A coordinator's markers for partitions this broker leads (errors per partition)."""
    timeout_ms = int(apis.config.request_timeout_ms)
    gc = getattr(apis.server, "group_coordinator", None)
    results = []
    for m in body.markers:
        marker = TxnMarker(
            m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch,
            tuple((t.name, p) for t in m.topics for p in t.partition_indexes),
        )  # fmt: skip
        codes = await write_txn_markers(apis.replica_manager, gc, marker, timeout_ms)
        results.append(
            WritableTxnMarkerResult(
                producer_id=m.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=p, error_code=codes.get((t.name, p), 0))
                            for p in t.partition_indexes
                        ],
                    )
                    for t in m.topics
                ],
            )
        )
    return WriteTxnMarkersResponse(markers=results)


@handles(ApiKey.TXN_OFFSET_COMMIT)
async def handle_txn_offset_commit(
    apis: KafkaApis, request: Request, body: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    version = request.header.api_version
    now = time.time_ns() // 1_000_000
    codes: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if apis.metadata_cache.partition_info(*tp) is None:
                codes[tp] = UnknownTopicOrPartitionException.code
                continue
            offsets[tp] = OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch if version >= 2 else -1,
                p.committed_metadata or "",
                now,
            )
    gc = getattr(apis.server, "group_coordinator", None)
    if offsets:
        if gc is None:
            codes.update(dict.fromkeys(offsets, _NOT_AVAILABLE))
        else:
            stored = await gc.commit_txn_offsets(body.group_id, body.producer_id, body.producer_epoch, offsets)
            codes.update({tp: fenced_for_version(c, version, 2) for tp, c in stored.items()})
    return TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            TxnOffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)]
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )
