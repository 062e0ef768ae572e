"""The transaction APIs (KIP-98): AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27) and TxnOffsetCommit (28); InitProducerId with a transactional id goes
through producer_ids.py, FindCoordinator for transactions through groups.py.

Handlers translate each version's wire shape to the TransactionCoordinator (or, for
WriteTxnMarkers, to the partition leaders' marker writer) and back. PRODUCER_FENCED is
answered as INVALID_PRODUCER_EPOCH to the versions before KIP-588 (Kafka's KafkaApis rule).

Authorization as Kafka's KafkaApis: Write on the transactional id for 24-26 and 28
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Write on each added topic (TOPIC_AUTHORIZATION_FAILED,
the rest OPERATION_NOT_ATTEMPTED), Read on the group for AddOffsetsToTxn / TxnOffsetCommit
(GROUP_AUTHORIZATION_FAILED) and on each committed topic; ClusterAction for WriteTxnMarkers.
"""

from __future__ import annotations

import time

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    CoordinatorNotAvailableException,
    GroupAuthorizationException,
    InvalidProducerEpochException,
    OperationNotAttemptedException,
    ProducerFencedException,
    TopicAuthorizationException,
    TransactionalIdAuthorizationException,
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
from kafkapy.protocol.generated.write_txn_markers_request import WritableTxnMarker, WriteTxnMarkersRequest
from kafkapy.protocol.generated.write_txn_markers_response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from kafkapy.server.apis.auth_helper import authorize, authorize_cluster, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.coordinator.offsets_codec import OffsetAndMetadata
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.server.transaction.transaction_coordinator import TransactionCoordinator
from kafkapy.server.transaction.transaction_markers import TxnMarker, write_txn_markers

_NOT_AVAILABLE = CoordinatorNotAvailableException.code


def txn_coordinator(apis: KafkaApis) -> TransactionCoordinator | None:
    tc = apis.transaction_coordinator
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
    txn_id = body.v3_and_below_transactional_id
    # Partitions answered with their own error; the others then get OPERATION_NOT_ATTEMPTED.
    refused: dict[tuple[str, int], int] = {}
    code = 0
    tc = txn_coordinator(apis)
    if not authorize(apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
        code = TransactionalIdAuthorizationException.code
    else:
        writable = filter_authorized(
            apis, request, Operation.WRITE, ResourceType.TOPIC, (t for t, _ in wanted)
        )
        # Kafka answers unauthorized topics first; only without them the unknown ones.
        refused = dict.fromkeys(
            (tp for tp in wanted if tp[0] not in writable), TopicAuthorizationException.code
        )
        if not refused:
            refused = {
                tp: UnknownTopicOrPartitionException.code
                for tp in wanted
                if apis.metadata_cache.partition_info(*tp) is None
            }
        # With refused partitions the coordinator is not asked (the rest: OPERATION_NOT_ATTEMPTED).
        if not refused and tc is None:
            code = _NOT_AVAILABLE
        elif not refused and tc is not None:
            code = await tc.add_partitions(
                txn_id, body.v3_and_below_producer_id, body.v3_and_below_producer_epoch, wanted
            )
            code = fenced_for_version(code, version, 2)

    def partition_code(tp: tuple[str, int]) -> int:
        if refused and not code:
            return refused.get(tp, OperationNotAttemptedException.code)
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
    if not authorize(apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        return AddOffsetsToTxnResponse(
            throttle_time_ms=0, error_code=TransactionalIdAuthorizationException.code
        )
    if not authorize(apis, request, Operation.READ, ResourceType.GROUP, body.group_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=GroupAuthorizationException.code)
    tc = txn_coordinator(apis)
    if tc is None:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code = await tc.add_offsets(body.transactional_id, body.producer_id, body.producer_epoch, body.group_id)
    return AddOffsetsToTxnResponse(
        throttle_time_ms=0, error_code=fenced_for_version(code, request.header.api_version, 2)
    )


@handles(ApiKey.END_TXN)
async def handle_end_txn(apis: KafkaApis, request: Request, body: EndTxnRequest) -> EndTxnResponse:
    if not authorize(apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        return EndTxnResponse(throttle_time_ms=0, error_code=TransactionalIdAuthorizationException.code)
    tc = txn_coordinator(apis)
    if tc is None:
        return EndTxnResponse(throttle_time_ms=0, error_code=_NOT_AVAILABLE)
    code = await tc.end_txn(body.transactional_id, body.producer_id, body.producer_epoch, body.committed)
    return EndTxnResponse(
        throttle_time_ms=0, error_code=fenced_for_version(code, request.header.api_version, 2)
    )


@handles(ApiKey.WRITE_TXN_MARKERS)
async def handle_write_txn_markers(
    apis: KafkaApis, request: Request, body: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    """A coordinator's markers for partitions this broker leads (errors per partition)."""
    timeout_ms = int(apis.config.request_timeout_ms)
    gc = apis.group_coordinator
    allowed = authorize_cluster(apis, request, Operation.CLUSTER_ACTION)
    results = []
    for m in body.markers:
        if not allowed:
            codes = {
                (t.name, p): ClusterAuthorizationException.code for t in m.topics for p in t.partition_indexes
            }
            results.append(_marker_result(m, codes))
            continue
        marker = TxnMarker(
            m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch,
            tuple((t.name, p) for t in m.topics for p in t.partition_indexes),
        )  # fmt: skip
        codes = await write_txn_markers(apis.replica_manager, gc, marker, timeout_ms)
        results.append(_marker_result(m, codes))
    return WriteTxnMarkersResponse(markers=results)


def _marker_result(m: WritableTxnMarker, codes: dict[tuple[str, int], int]) -> WritableTxnMarkerResult:
    return WritableTxnMarkerResult(
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


@handles(ApiKey.TXN_OFFSET_COMMIT)
async def handle_txn_offset_commit(
    apis: KafkaApis, request: Request, body: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    version = request.header.api_version
    now = time.time_ns() // 1_000_000
    codes: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    if not authorize(apis, request, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        whole = TransactionalIdAuthorizationException.code
    elif not authorize(apis, request, Operation.READ, ResourceType.GROUP, body.group_id):
        whole = GroupAuthorizationException.code
    else:
        whole = 0
    readable = filter_authorized(
        apis, request, Operation.READ, ResourceType.TOPIC, (t.name for t in body.topics)
    )
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if whole:
                codes[tp] = whole
            elif t.name not in readable:
                codes[tp] = TopicAuthorizationException.code
            elif apis.metadata_cache.partition_info(*tp) is None:
                codes[tp] = UnknownTopicOrPartitionException.code
                continue
            offsets[tp] = OffsetAndMetadata(
                p.committed_offset,
                p.committed_leader_epoch if version >= 2 else -1,
                p.committed_metadata or "",
                now,
            )
    gc = apis.group_coordinator
    if offsets:
        if gc is None:
            codes.update(dict.fromkeys(offsets, _NOT_AVAILABLE))
        else:
            stored = await gc.commit_txn_offsets(
                body.group_id, body.producer_id, body.producer_epoch, offsets
            )
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
