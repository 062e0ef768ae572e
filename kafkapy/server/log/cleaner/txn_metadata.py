"""What one cleaning knows about transactions (Kafka's CleanedTransactionMetadata).

The cleaner walks a log in offset order, once to build the offset map and once per group
of segments to rewrite it, with one of these per walk. The aborted transactions overlapping
the walked range come from the `.txnindex` files (`add_aborted_transactions`) and are
consumed in first-offset order as the walk reaches them:

- a transactional data batch of an aborted transaction is discardable, and the walk notes
  that it saw data of that transaction;
- an ABORT marker is kept (and its entry written to the cleaned segment's `.txnindex`) when
  this walk saw data of its transaction; otherwise that data is already gone and the marker
  is discardable;
- a COMMIT marker is discardable when this walk saw no data batch of its transaction.

"Discardable" markers still stay until their segment is older than the delete horizon
(`delete.retention.ms`, the rule tombstones follow): Kafka's two passes, the first removes
the aborted data, a later one the marker, so a consumer that read the data before the first
pass still gets the marker.
"""

from __future__ import annotations

import heapq

from kafkapy.protocol.control_records import ControlRecordType
from kafkapy.protocol.record_batch import BatchHeader
from kafkapy.server.log.transaction_index import AbortedTxn, TransactionIndex


class _OngoingAbortedTxn:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _OngoingAbortedTxn] = {}
        # Min-heap by first offset; (first offset, last offset) identifies an entry, so the same
        # transaction collected for two ranges is queued once.
        self._aborted: list[tuple[int, int, AbortedTxn]] = []
        self._queued: set[tuple[int, int]] = set()
        # Where the retained ABORT markers' entries go: the cleaned segment's `.txnindex`.
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            ident = (txn.first_offset, txn.last_offset)
            if ident not in self._queued:
                self._queued.add(ident)
                heapq.heappush(self._aborted, (txn.first_offset, txn.last_offset, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _OngoingAbortedTxn(txn))

    def on_control_batch_read(self, header: BatchHeader, control_type: ControlRecordType | None) -> bool:
        """Account for a marker; True when it may be discarded (past the delete horizon).
        `control_type` None: a control batch without records, already cleaned."""
        self._consume_aborted_up_to(header.last_offset)
        if control_type is None:
            return True
        producer_id = header.producer_id
        if control_type == ControlRecordType.ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing.last_observed_batch_offset is not None:
                # Data of the transaction was seen (and is removed by this walk): the marker
                # and its index entry stay for this round.
                if self.cleaned_index is not None:
                    self.cleaned_index.append_if_new(ongoing.txn)
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, header: BatchHeader) -> bool:
        """Account for a data batch; True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(header.producer_id)
        if ongoing is not None:
            ongoing.last_observed_batch_offset = header.last_offset
            return True
        self._ongoing_committed.add(header.producer_id)
        return False
