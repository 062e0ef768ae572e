"""__transaction_state records in Kafka's TransactionLog format, and the state machine table."""

from __future__ import annotations

import struct

import pytest

from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.server.transaction import transaction_log as txn_log
from kafkapy.server.transaction.transaction_state import (
    VALID_PREVIOUS_STATES,
    IllegalTransactionStateTransition,
    TransactionMetadata,
    TransactionState,
)

S = TransactionState


def test_key_is_version_0_and_the_transactional_id() -> None:
    assert txn_log.key_bytes("tx") == struct.pack(">hh", 0, 2) + b"tx"
    assert txn_log.read_key(txn_log.key_bytes("tx-é")) == "tx-é"


def test_value_is_kafkas_version_0_layout_byte_for_byte() -> None:
    value = txn_log.TxnLogValue(7, 3, 60_000, S.ONGOING, (("b", 1), ("a", 2), ("a", 0)), 1_000, 900)
    expected = (
        struct.pack(">hqhib", 0, 7, 3, 60_000, 1)
        + struct.pack(">i", 2)  # two topics, sorted
        + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 1_000, 900)
    )  # fmt: skip
    assert txn_log.value_bytes(value) == expected
    decoded = txn_log.read_value(expected)
    assert decoded.partitions == (("a", 0), ("a", 2), ("b", 1))
    assert (decoded.producer_id, decoded.producer_epoch, decoded.state) == (7, 3, S.ONGOING)


@pytest.mark.parametrize("state", list(TransactionState))
def test_value_round_trips_every_state(state: TransactionState) -> None:
    value = txn_log.TxnLogValue(1, 0, 10, state, (), 5, -1)
    assert txn_log.read_value(txn_log.value_bytes(value)) == value


def test_state_bytes_are_kafkas() -> None:
    assert [s.byte for s in S] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert [str(s) for s in S][:3] == ["Empty", "Ongoing", "PrepareCommit"]


def test_cut_or_unknown_records_are_refused() -> None:
    data = txn_log.value_bytes(txn_log.TxnLogValue(1, 0, 10, S.EMPTY, (), 5, -1))
    with pytest.raises(CorruptRecordException):
        txn_log.read_value(data[:-3])
    with pytest.raises(CorruptRecordException):
        txn_log.read_value(struct.pack(">h", 1) + data[2:])


def test_transitions_follow_the_table_and_a_refused_one_changes_nothing() -> None:
    md = TransactionMetadata("tx", 1, 0, 60_000)
    for target in (S.ONGOING, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING, S.PREPARE_ABORT):
        md.transition_to(target)
    with pytest.raises(IllegalTransactionStateTransition, match="PrepareAbort"):
        md.transition_to(S.COMPLETE_COMMIT)
    assert md.state == S.PREPARE_ABORT
    md.transition_to(S.COMPLETE_ABORT)
    md.transition_to(S.EMPTY)
    with pytest.raises(IllegalTransactionStateTransition):
        md.transition_to(S.PREPARE_COMMIT)  # nothing to commit


def test_every_state_has_valid_previous_states() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(TransactionState)
    assert VALID_PREVIOUS_STATES[S.PREPARE_COMMIT] == {S.ONGOING}
