"""The transactions a log has open or has just ended: what the last stable offset is made of.

Kafka's ProducerStateManager keeps two maps keyed by a transaction's first offset:
- ongoing: transactions with data in the log and no COMMIT/ABORT marker yet;
- unreplicated: transactions whose marker is written but not yet below the high watermark
  (a new leader could still lose the marker, so they stay unstable until it is replicated).

The first unstable offset is the smallest first offset in either map; the last stable offset
(LSO) a read_committed fetch may read up to is min(first unstable offset, high watermark).
"""

from __future__ import annotations

from dataclasses import dataclass

from sortedcontainers import SortedDict


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerTransactions:
    def __init__(self) -> None:
        self.ongoing: SortedDict = SortedDict()  # first offset -> producer id
        self.unreplicated: SortedDict = SortedDict()  # first offset -> CompletedTxn

    def __bool__(self) -> bool:
        return bool(self.ongoing) or bool(self.unreplicated)

    def clear(self) -> None:
        self.ongoing.clear()
        self.unreplicated.clear()

    def begin(self, producer_id: int, first_offset: int) -> None:
        self.ongoing[first_offset] = producer_id

    def complete(self, txn: CompletedTxn) -> None:
        self.ongoing.pop(txn.first_offset, None)
        self.unreplicated[txn.first_offset] = txn

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """The LSO the aborted transaction index records for `txn` (Kafka's lastStableOffset(completedTxn)):
        the first offset of another open transaction, else the offset after its marker."""
        for first_offset, producer_id in self.ongoing.items():
            if producer_id != txn.producer_id:
                result: int = first_offset
                return result
        return txn.last_offset + 1

    @property
    def first_unstable_offset(self) -> int | None:
        firsts = [d.peekitem(0)[0] for d in (self.ongoing, self.unreplicated) if d]
        return min(firsts) if firsts else None

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Markers now below the high watermark are replicated: their transactions are stable."""
        unreplicated = self.unreplicated
        for first_offset in [f for f, t in unreplicated.items() if t.last_offset < high_watermark]:
            del unreplicated[first_offset]

    def remove_producers(self, producer_ids: set[int]) -> None:
        for first_offset in [f for f, pid in self.ongoing.items() if pid in producer_ids]:
            del self.ongoing[first_offset]

    def truncate_head(self, log_start_offset: int) -> None:
        self.on_high_watermark_updated(log_start_offset)
