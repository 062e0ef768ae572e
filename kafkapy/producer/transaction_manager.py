"""The transactional producer's side of KIP-98 (a small TransactionManager).

States, as Kafka's producer TransactionManager names them (one table; anything else raises):

    UNINITIALIZED -> READY (init_transactions) -> IN_TRANSACTION (begin_transaction)
    IN_TRANSACTION -> COMMITTING_TRANSACTION | ABORTING_TRANSACTION -> READY
    any -> FATAL_ERROR (fenced, or a transaction state the coordinator refuses)

Requests go to the transaction coordinator (FindCoordinator key_type=1) over one blocking
connection: InitProducerId, AddPartitionsToTxn (from the sender thread, before the first batch
of a partition is drained), AddOffsetsToTxn, EndTxn; TxnOffsetCommit goes to the group's
coordinator. Retriable answers (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) are retried after a back-off until the timeout.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkapy.client.admin import parse_bootstrap
from kafkapy.client.connection import BrokerConnection
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkapy.protocol.errors import (
    ConcurrentTransactionsException,
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    KafkaError,
    NotCoordinatorException,
    for_code,
)
from kafkapy.protocol.generated.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from kafkapy.protocol.generated.add_partitions_to_txn_request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kafkapy.protocol.generated.end_txn_request import EndTxnRequest
from kafkapy.protocol.generated.find_coordinator_request import FindCoordinatorRequest
from kafkapy.protocol.generated.init_producer_id_request import InitProducerIdRequest
from kafkapy.protocol.generated.txn_offset_commit_request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kafkapy.protocol.message import Message

_RETRY = {
    ConcurrentTransactionsException.code,
    CoordinatorLoadInProgressException.code,
    CoordinatorNotAvailableException.code,
    NotCoordinatorException.code,
}
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    FATAL_ERROR = "FATAL_ERROR"


_T = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _T.UNINITIALIZED: frozenset(),
    _T.READY: frozenset({_T.UNINITIALIZED, _T.COMMITTING_TRANSACTION, _T.ABORTING_TRANSACTION}),
    _T.IN_TRANSACTION: frozenset({_T.READY}),
    _T.COMMITTING_TRANSACTION: frozenset({_T.IN_TRANSACTION}),
    _T.ABORTING_TRANSACTION: frozenset({_T.IN_TRANSACTION}),
    _T.FATAL_ERROR: frozenset(TxnState),
}


class KafkaTransactionStateError(KafkaError):
    """An operation the transactional producer's current state does not allow."""


class TransactionManager:
    def __init__(
        self, bootstrap_servers: str, transactional_id: str, transaction_timeout_ms: int,
        request_timeout_ms: int, retry_backoff_ms: int,
    ) -> None:  # fmt: skip
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.timeout_s = request_timeout_ms / 1000
        self.backoff_s = retry_backoff_ms / 1000
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.state = TxnState.UNINITIALIZED
        self.producer_id, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        self.partitions: set[TopicPartition] = set()  # added to the current transaction
        self.error: KafkaError | None = None  # a failure the sender thread met (AddPartitionsToTxn)
        self._lock = threading.RLock()
        self._coordinator: BrokerConnection | None = None
        self._offsets_added = False  # AddOffsetsToTxn in the current transaction

    # -- state ----------------------------------------------------------------------------------

    def _transition(self, target: TxnState) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise KafkaTransactionStateError(f"TransactionalId {self.transactional_id}: Invalid transition "
                                             f"attempted from state {self.state.value} to state {target.value}")  # fmt: skip
        self.state = target

    def _fatal(self, error: KafkaError) -> KafkaError:
        self.state = TxnState.FATAL_ERROR
        self.error = error
        return error

    # -- connections ----------------------------------------------------------------------------

    def _any_broker(self, call: Callable[[BrokerConnection], Any]) -> Any:
        last: Exception | None = None
        for host, port in self.bootstrap:
            conn = BrokerConnection(host, port, client_id="kafkapy-txn", timeout=self.timeout_s)
            try:
                conn.api_versions()
                return call(conn)
            except Exception as e:
                last = e
            finally:
                conn.close()
        raise KafkaError(f"No broker reachable: {last}")

    def _find(self, key: str, key_type: int) -> tuple[str, int]:
        def ask(conn: BrokerConnection) -> Any:
            version = conn.pick_version(ApiKey.FIND_COORDINATOR)
            body = (FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]) if version >= 4
                    else FindCoordinatorRequest(key_type=key_type, key=key))  # fmt: skip
            resp = conn.send(ApiKey.FIND_COORDINATOR, version, body)
            return resp.coordinators[0] if version >= 4 else resp  # type: ignore[union-attr]

        found = self._any_broker(ask)
        if found.error_code:
            raise for_code(found.error_code)
        return found.host, found.port

    def _call(self, target: Callable[[], tuple[str, int]], api_key: ApiKey, body: Message,
              error_of: Callable[[Any], int], conn_cache: bool = True) -> Any:  # fmt: skip
        """Send to the coordinator `target` finds, retrying retriable errors until the timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            code: int
            try:
                conn = self._coordinator if conn_cache else None
                if conn is None:
                    host, port = target()
                    conn = BrokerConnection(host, port, client_id="kafkapy-txn", timeout=self.timeout_s)
                    conn.api_versions()
                    if conn_cache:
                        self._coordinator = conn
                resp = conn.send(api_key, conn.pick_version(api_key), body)
                code = error_of(resp)
                if not conn_cache:
                    conn.close()
            except KafkaError as e:
                code, resp = e.code, None
                if e.code not in _RETRY:
                    raise
            except OSError:
                code, resp = NotCoordinatorException.code, None
            if code == 0:
                return resp
            if code in (NotCoordinatorException.code, CoordinatorNotAvailableException.code) and conn_cache:
                if self._coordinator is not None:
                    self._coordinator.close()
                self._coordinator = None
            if code not in _RETRY or time.monotonic() > deadline:
                error = for_code(code)
                raise error if code in _RETRY else self._fatal(error)
            time.sleep(self.backoff_s)

    def _txn_coordinator(self) -> tuple[str, int]:
        return self._find(self.transactional_id, TRANSACTION_KEY_TYPE)

    # -- operations -----------------------------------------------------------------------------

    def init_transactions(self) -> tuple[int, int]:
        with self._lock:
            if self.state != TxnState.UNINITIALIZED:
                raise KafkaTransactionStateError("init_transactions was called already")
            resp = self._call(self._txn_coordinator, ApiKey.INIT_PRODUCER_ID, InitProducerIdRequest(
                transactional_id=self.transactional_id, transaction_timeout_ms=self.transaction_timeout_ms,
                producer_id=-1, producer_epoch=-1,
            ), lambda r: r.error_code)  # fmt: skip
            self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
            self._transition(TxnState.READY)
            return self.producer_id, self.producer_epoch

    def begin_transaction(self) -> None:
        with self._lock:
            self._raise_if_failed()
            self._transition(TxnState.IN_TRANSACTION)
            self.partitions.clear()
            self._offsets_added = False

    def added_partitions(self) -> frozenset[TopicPartition]:
        """The partitions whose batches may be sent now (the sender thread asks every round)."""
        with self._lock:
            return frozenset(self.partitions)

    def has_content(self) -> bool:
        """Partitions or group offsets were added: EndTxn has something to end."""
        return bool(self.partitions) or self._offsets_added

    def is_in_transaction(self) -> bool:
        return self.state == TxnState.IN_TRANSACTION

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for partitions about to be written (the sender thread, before draining)."""
        with self._lock:
            new = sorted(set(partitions) - self.partitions)
            if not new or self.state == TxnState.FATAL_ERROR:
                return
            by_topic: dict[str, list[int]] = {}
            for tp in new:
                by_topic.setdefault(tp.topic, []).append(tp.partition)

            def first_error(r: Any) -> int:
                return next((p.partition_error_code for t in r.results_by_topic_v3_and_below
                             for p in t.results_by_partition if p.partition_error_code), 0)  # fmt: skip

            try:
                self._call(self._txn_coordinator, ApiKey.ADD_PARTITIONS_TO_TXN, AddPartitionsToTxnRequest(
                    v3_and_below_transactional_id=self.transactional_id,
                    v3_and_below_producer_id=self.producer_id,
                    v3_and_below_producer_epoch=self.producer_epoch,
                    v3_and_below_topics=[AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
                ), first_error)  # fmt: skip
            except KafkaError as e:
                self.error = e
                return
            self.partitions.update(new)

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        with self._lock:
            self._raise_if_failed()
            if self.state != TxnState.IN_TRANSACTION:
                raise KafkaTransactionStateError("Cannot send offsets outside a transaction")
            self._call(self._txn_coordinator, ApiKey.ADD_OFFSETS_TO_TXN, AddOffsetsToTxnRequest(
                transactional_id=self.transactional_id, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, group_id=group_id,
            ), lambda r: r.error_code)  # fmt: skip
            self._offsets_added = True
            by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
            for tp, offset in sorted(offsets.items()):
                by_topic.setdefault(tp.topic, []).append(
                    TxnOffsetCommitRequestPartition(
                        partition_index=tp.partition, committed_offset=offset, committed_metadata=""
                    )
                )
            self._call(lambda: self._find(group_id, GROUP_KEY_TYPE), ApiKey.TXN_OFFSET_COMMIT, TxnOffsetCommitRequest(
                transactional_id=self.transactional_id, group_id=group_id, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                topics=[TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            ), lambda r: next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0),
                conn_cache=False)  # fmt: skip

    def end_transaction(self, commit: bool) -> None:
        """EndTxn once the transaction's records are acknowledged (the caller flushed)."""
        with self._lock:
            if commit:
                self._raise_if_failed()
            elif self.state == TxnState.FATAL_ERROR:
                raise self.error or KafkaTransactionStateError("fatal error")
            self._transition(TxnState.COMMITTING_TRANSACTION if commit else TxnState.ABORTING_TRANSACTION)
            if self.has_content():  # nothing was written: nothing to end (as Kafka's producer skips it)
                self._call(self._txn_coordinator, ApiKey.END_TXN, EndTxnRequest(
                    transactional_id=self.transactional_id, producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch, committed=commit,
                ), lambda r: r.error_code)  # fmt: skip
            self.partitions.clear()
            self._offsets_added = False
            self.error = None
            self._transition(TxnState.READY)

    def _raise_if_failed(self) -> None:
        if self.state == TxnState.FATAL_ERROR:
            raise self.error or KafkaTransactionStateError("The producer is in a fatal error state")
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        with self._lock:
            if self._coordinator is not None:
                self._coordinator.close()
                self._coordinator = None


def end_transaction_of(
    bootstrap_servers: str,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    request_timeout_ms: int = 30_000,
    retry_backoff_ms: int = 100,
) -> None:
    """End a transaction that another producer began and left open, its records flushed, by
    sending EndTxn with that producer's id and epoch (Flink's two-phase Kafka sink resumes
    transactions the same way). Used by a coordinator of writers, e.g. the Spark driver
    committing what its tasks wrote. A newer producer of the same id (a retried writer) has
    bumped the epoch: the coordinator then refuses with PRODUCER_FENCED, raised here."""
    manager = TransactionManager(bootstrap_servers, transactional_id, 0, request_timeout_ms, retry_backoff_ms)
    try:
        manager._call(manager._txn_coordinator, ApiKey.END_TXN, EndTxnRequest(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            committed=commit,
        ), lambda r: r.error_code)  # fmt: skip
    finally:
        manager.close()
