"""Seeing transactions (KIP-664, Kafka 3.0's admin APIs): DescribeProducers (61) answers a
partition leader's producer state, DescribeTransactions (65) and ListTransactions (66) the
transaction coordinator's metadata for the ids this broker coordinates.

Authorization as Kafka 3.0's: Read on the topic for DescribeProducers, Describe on each
transactional id for DescribeTransactions; ListTransactions lists only the ids Describe allows."""

from __future__ import annotations

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    KafkaError,
    TopicAuthorizationException,
    TransactionalIdAuthorizationException,
    TransactionalIdNotFoundException,
)
from kafkapy.protocol.generated.describe_producers_request import DescribeProducersRequest
from kafkapy.protocol.generated.describe_producers_response import (
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from kafkapy.protocol.generated.describe_transactions_request import DescribeTransactionsRequest
from kafkapy.protocol.generated.describe_transactions_response import DescribeTransactionsResponse, TopicData
from kafkapy.protocol.generated.describe_transactions_response import TransactionState as DescribedTransaction
from kafkapy.protocol.generated.list_transactions_request import ListTransactionsRequest
from kafkapy.protocol.generated.list_transactions_response import ListTransactionsResponse
from kafkapy.protocol.generated.list_transactions_response import TransactionState as ListedTransaction
from kafkapy.server.apis.auth_helper import authorize, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.apis.transactions import txn_coordinator
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType
from kafkapy.server.transaction.transaction_state import TransactionMetadata, TransactionState, now_ms


@handles(ApiKey.DESCRIBE_PRODUCERS)
def handle_describe_producers(
    apis: KafkaApis, request: Request, body: DescribeProducersRequest
) -> DescribeProducersResponse:
    topics = []
    readable = filter_authorized(
        apis, request, Operation.READ, ResourceType.TOPIC, (t.name for t in body.topics)
    )
    for t in body.topics:
        partitions = []
        for index in t.partition_indexes:
            out = PartitionResponse(
                partition_index=index, error_code=0, error_message=None, active_producers=[]
            )
            if t.name not in readable:
                out.error_code = TopicAuthorizationException.code
                partitions.append(out)
                continue
            try:
                log = apis.replica_manager.leader_partition(TopicPartition(t.name, index)).log
                out.active_producers = [
                    ProducerState(
                        producer_id=e.producer_id,
                        producer_epoch=e.producer_epoch,
                        last_sequence=e.last_seq,
                        last_timestamp=e.last_timestamp,
                        coordinator_epoch=e.coordinator_epoch,
                        current_txn_start_offset=e.current_txn_first_offset,
                    )
                    for e in list(log.producer_state.producers.values())
                ]
            except KafkaError as e:
                out.error_code, out.error_message = e.code, e.message
            partitions.append(out)
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


def _by_topic(md: TransactionMetadata) -> list[TopicData]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(md.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]


@handles(ApiKey.DESCRIBE_TRANSACTIONS)
def handle_describe_transactions(
    apis: KafkaApis, request: Request, body: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    tc = txn_coordinator(apis)
    states = []
    for txn_id in body.transactional_ids:
        out = DescribedTransaction(
            error_code=0, transactional_id=txn_id, transaction_state="", transaction_timeout_ms=0,
            transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[],
        )  # fmt: skip
        if not authorize(apis, request, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            out.error_code = TransactionalIdAuthorizationException.code
        elif tc is None:
            out.error_code = CoordinatorNotAvailableException.code
        else:
            code, md, _ = tc.manager.lookup(txn_id)
            if code or md is None:
                out.error_code = code or TransactionalIdNotFoundException.code
            else:
                out.transaction_state = str(md.state)
                out.transaction_timeout_ms = md.txn_timeout_ms
                out.transaction_start_time_ms = md.txn_start_timestamp
                out.producer_id, out.producer_epoch = md.producer_id, md.producer_epoch
                out.topics = _by_topic(md)
        states.append(out)
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


@handles(ApiKey.LIST_TRANSACTIONS)
def handle_list_transactions(
    apis: KafkaApis, request: Request, body: ListTransactionsRequest
) -> ListTransactionsResponse:
    tc = txn_coordinator(apis)
    if tc is None:
        return ListTransactionsResponse(throttle_time_ms=0, error_code=CoordinatorNotAvailableException.code,
                                        unknown_state_filters=[], transaction_states=[])  # fmt: skip
    known = {str(s) for s in TransactionState}
    wanted = set(body.state_filters)
    pids = set(body.producer_id_filters)
    min_duration = body.duration_filter if request.header.api_version >= 1 else -1
    now = now_ms()
    states = []
    for md, _ in tc.manager.all_transactions():
        if wanted and str(md.state) not in wanted:
            continue
        if pids and md.producer_id not in pids:
            continue
        if not authorize(
            apis, request, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, md.transactional_id
        ):
            continue
        if min_duration >= 0 and (md.txn_start_timestamp < 0 or now - md.txn_start_timestamp < min_duration):
            continue
        states.append(
            ListedTransaction(
                transactional_id=md.transactional_id,
                producer_id=md.producer_id,
                transaction_state=str(md.state),
            )
        )
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=0,
        unknown_state_filters=sorted(wanted - known),
        transaction_states=sorted(states, key=lambda s: s.transactional_id),
    )
