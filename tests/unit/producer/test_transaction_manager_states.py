from __future__ import annotations

import pytest

from kafkapy.producer.config import ProducerConfig
from kafkapy.producer.transaction_manager import KafkaTransactionStateError, TransactionManager, TxnState


def manager() -> TransactionManager:
    return TransactionManager("127.0.0.1:1", "tx", 60_000, 100, 10)


def test_begin_needs_init_and_commit_needs_begin() -> None:
    m = manager()
    with pytest.raises(KafkaTransactionStateError, match="UNINITIALIZED to state IN_TRANSACTION"):
        m.begin_transaction()
    m.state = TxnState.READY
    with pytest.raises(KafkaTransactionStateError, match="READY to state COMMITTING_TRANSACTION"):
        m.end_transaction(commit=True)
    m.begin_transaction()
    m.end_transaction(commit=True)  # nothing was added: no EndTxn request, back to READY
    assert m.state == TxnState.READY


def test_transactional_id_turns_on_idempotence_and_acks_all() -> None:
    c = ProducerConfig.parse(
        {"bootstrap.servers": "h:1", "transactional.id": "tx", "transaction.timeout.ms": 5000}
    )
    assert c.enable_idempotence and c.acks == -1 and c.transaction_timeout_ms == 5000
    with pytest.raises(ValueError, match="acks to all"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "transactional.id": "tx", "acks": 0})
