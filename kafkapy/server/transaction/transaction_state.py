"""A transactional id's state machine (Kafka's TransactionState) and its metadata.

    Empty -> Ongoing -> PrepareCommit -> CompleteCommit -> (Ongoing | Empty | Dead)
                     -> PrepareAbort  -> CompleteAbort  -> (Ongoing | Empty | Dead)
    Ongoing -> PrepareEpochFence -> PrepareAbort  (the coordinator fences a producer)

Every state names the states it may be entered from (one table, as Kafka's
TransactionState.validPreviousStates); `transition_to` refuses anything else and leaves the
state unchanged. The byte values are what __transaction_state stores.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Final


class TransactionState(enum.Enum):
    EMPTY = ("Empty", 0)
    ONGOING = ("Ongoing", 1)
    PREPARE_COMMIT = ("PrepareCommit", 2)
    PREPARE_ABORT = ("PrepareAbort", 3)
    COMPLETE_COMMIT = ("CompleteCommit", 4)
    COMPLETE_ABORT = ("CompleteAbort", 5)
    DEAD = ("Dead", 6)
    PREPARE_EPOCH_FENCE = ("PrepareEpochFence", 7)

    @property
    def byte(self) -> int:
        return self.value[1]

    @classmethod
    def from_byte(cls, b: int) -> TransactionState:
        for s in cls:
            if s.value[1] == b:
                return s
        raise ValueError(f"Unknown transaction state byte {b} from the transaction status message")

    def __str__(self) -> str:
        return self.value[0]


_S = TransactionState
VALID_PREVIOUS_STATES: Final[dict[TransactionState, frozenset[TransactionState]]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
COMPLETED_STATES: Final = frozenset({_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
PREPARED_STATES: Final = frozenset({_S.PREPARE_COMMIT, _S.PREPARE_ABORT})


class IllegalTransactionStateTransition(Exception):
    def __init__(self, transactional_id: str, current: TransactionState, target: TransactionState) -> None:
        super().__init__(
            f"TransactionalId {transactional_id} failed transition to state {target} because its "
            f"current state {current} is not one of {sorted(str(s) for s in VALID_PREVIOUS_STATES[target])}"
        )


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id as the coordinator holds it (Kafka's TransactionMetadata).

    `pending` is the state a log write in flight will install: while it is set, other
    requests for this id get CONCURRENT_TRANSACTIONS.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending: TransactionState | None = None

    def transition_to(self, target: TransactionState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransactionStateTransition(self.transactional_id, self.state, target)
        self.state = target

    def check_transition(self, target: TransactionState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransactionStateTransition(self.transactional_id, self.state, target)
