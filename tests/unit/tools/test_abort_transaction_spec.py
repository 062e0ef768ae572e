"""kafkapy-transactions abort's decisions (KIP-664): which producer a start offset names, the
options' rules and the answers' meaning, in Kafka 3.0 TransactionsCommand's words."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kafkapy.protocol.errors import (
    InvalidProducerEpochException,
    NotLeaderOrFollowerException,
    ProducerFencedException,
    TransactionCoordinatorFencedException,
)
from kafkapy.tools.transactions_abort import (
    AbortFailed,
    AbortTransactionSpec,
    failure,
    marker_outcome,
    spec_from_arguments,
    spec_from_producers,
)


@dataclass
class Producer:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_start_offset: int


SPEC = AbortTransactionSpec("t", 0, 5, 2, 1)


def test_spec_prints_as_kafkas_abort_transaction_spec() -> None:
    assert (
        str(SPEC)
        == "AbortTransactionSpec(topicPartition=t-0, producerId=5, producerEpoch=2, coordinatorEpoch=1)"
    )


def test_start_offset_finds_the_producer_whose_open_transaction_starts_there() -> None:
    producers = [Producer(1, 0, 3, -1), Producer(2, 4, -1, 17), Producer(3, 1, 2, 20)]
    assert spec_from_producers("t", 0, 17, producers) == AbortTransactionSpec("t", 0, 2, 4, 0)
    assert spec_from_producers("t", 0, 20, producers) == AbortTransactionSpec("t", 0, 3, 1, 2)
    with pytest.raises(AbortFailed) as e:
        spec_from_producers("t", 0, 18, producers)
    assert e.value.message == "Could not find any open transactions starting at offset 18 on partition t-0"


def test_options_name_the_transaction_one_way_or_the_other() -> None:
    assert spec_from_arguments("t", 1, 42, None, None, None) is None  # resolved through DescribeProducers
    assert spec_from_arguments("t", 1, None, 7, 3, -1) == AbortTransactionSpec("t", 1, 7, 3, 0)
    with pytest.raises(AbortFailed, match="must be identified either with --start-offset"):
        spec_from_arguments("t", 1, None, None, None, None)
    with pytest.raises(AbortFailed, match="^Missing required argument --producer-epoch$"):
        spec_from_arguments("t", 1, None, 7, None, 0)
    with pytest.raises(AbortFailed, match="^Missing required argument --coordinator-epoch$"):
        spec_from_arguments("t", 1, None, 7, 3, None)


def test_marker_answers_success_retry_or_kafkas_failure_cause() -> None:
    assert marker_outcome(SPEC, 0) is None
    assert marker_outcome(SPEC, NotLeaderOrFollowerException.code) == "retry"
    for code in (InvalidProducerEpochException.code, ProducerFencedException.code):
        assert (
            marker_outcome(SPEC, code)
            == f"WriteTxnMarkers request with {SPEC} failed due an invalid producer epoch"
        )
    assert marker_outcome(SPEC, TransactionCoordinatorFencedException.code) == (
        f"WriteTxnMarkers request with {SPEC} failed since the provided coordinator epoch 1 has been fenced by "
        "the active coordinator"
    )
    assert failure("Failed to abort transaction x", "boom").message == (
        "Failed to abort transaction x: boom. Enable debug logging for additional detail."
    )
