"""`kafkapy-transactions abort` (KIP-664): end a hanging transaction on one partition.

As Kafka 3.0's TransactionsCommand does, the transaction is named either by its first offset
(`--start-offset`: the producer id, epoch and latest coordinator epoch come from the
partition leader's DescribeProducers) or by `--producer-id --producer-epoch
--coordinator-epoch` (a coordinator epoch below 0, a producer no coordinator ever wrote a
marker for, becomes 0). The tool then does what the admin client's abortTransaction does: it
sends the leader a WriteTxnMarkers request with one ABORT marker for that partition, finding
the leader again after NOT_LEADER_OR_FOLLOWER-like errors, and prints nothing on success.
Failures go to stderr in Kafka's words, exit code 1.

This module holds the decisions (which producer, what an answer means); transactions.py
owns the wire.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kafkapy.protocol.errors import (
    BrokerNotAvailableException,
    ClusterAuthorizationException,
    InvalidProducerEpochException,
    NotLeaderOrFollowerException,
    ProducerFencedException,
    ReplicaNotAvailableException,
    TransactionCoordinatorFencedException,
    UnknownTopicOrPartitionException,
    error_name,
)

DEBUG_HINT = " Enable debug logging for additional detail."

# Answers after which the leader is looked up again and the marker sent again.
RETRIABLE = frozenset({
    NotLeaderOrFollowerException.code, ReplicaNotAvailableException.code, BrokerNotAvailableException.code,
    UnknownTopicOrPartitionException.code,
})  # fmt: skip


class AbortFailed(Exception):
    """What the tool prints to stderr before exiting 1."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def failure(message: str, cause: str) -> AbortFailed:
    """Kafka's printErrorAndExit(message, cause) wording."""
    return AbortFailed(f"{message}: {cause}.{DEBUG_HINT}")


@dataclass(frozen=True, slots=True)
class AbortTransactionSpec:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (
            f"AbortTransactionSpec(topicPartition={self.topic}-{self.partition}, producerId={self.producer_id}, "
            f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})"
        )


class ProducerState(Protocol):
    """One entry of a DescribeProducers answer (the fields the abort needs)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_start_offset: int


def spec_from_arguments(
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
) -> AbortTransactionSpec | None:
    """The spec the options name outright, or None when `--start-offset` must be resolved."""
    if start_offset is None and producer_id is None:
        raise AbortFailed(
            "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or "
            "above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"
        )
    if start_offset is not None or producer_id is None:
        return None
    if producer_epoch is None:
        raise AbortFailed("Missing required argument --producer-epoch")
    if coordinator_epoch is None:
        raise AbortFailed("Missing required argument --coordinator-epoch")
    # A producer that never had a marker written shows -1; 0 is at most any leader epoch.
    return AbortTransactionSpec(topic, partition, producer_id, producer_epoch, max(coordinator_epoch, 0))


def spec_from_producers(
    topic: str, partition: int, start_offset: int, producers: Iterable[ProducerState]
) -> AbortTransactionSpec:
    """The producer whose open transaction starts at `start_offset`."""
    for p in producers:
        if p.current_txn_start_offset >= 0 and p.current_txn_start_offset == start_offset:
            return AbortTransactionSpec(
                topic, partition, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0)
            )
    raise AbortFailed(
        f"Could not find any open transactions starting at offset {start_offset} on partition {topic}-{partition}"
    )


def marker_outcome(spec: AbortTransactionSpec, error_code: int) -> str | None:
    """None: the marker was written; "retry": find the leader again; else the cause to report
    (Kafka's AbortTransactionHandler wording)."""
    if error_code == 0:
        return None
    if error_code in RETRIABLE:
        return "retry"
    request = f"WriteTxnMarkers request with {spec}"
    if error_code == ClusterAuthorizationException.code:
        return f"{request} failed due to cluster authorization error"
    if error_code in (InvalidProducerEpochException.code, ProducerFencedException.code):
        return f"{request} failed due an invalid producer epoch"
    if error_code == TransactionCoordinatorFencedException.code:
        return (
            f"{request} failed since the provided coordinator epoch {spec.coordinator_epoch} has been fenced by "
            "the active coordinator"
        )
    return f"{request} failed due to unexpected error: {error_name(error_code)}"
