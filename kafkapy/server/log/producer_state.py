"""ProducerStateManager: idempotent and transactional producer bookkeeping of a log.

Per producer id it keeps the current epoch and the metadata of the last five batches
(sequence range and offsets), as Kafka does, so that:

- a retry of one of those five batches is answered with the original offsets and not
  appended again (`find_duplicate`);
- a batch with an epoch lower than the current one is refused with InvalidProducerEpoch;
- a batch of a known producer whose first sequence does not follow the last one is refused
  with OutOfOrderSequence (a new epoch must start at sequence 0);
- a producer the log does not know (new, or its batches removed by retention) is accepted
  at any sequence, like Kafka 2.5+.

Transactions (KIP-98): a producer's first transactional batch opens its transaction at that
offset (`current_txn_first_offset`); a COMMIT/ABORT control batch ends it and records the
coordinator epoch, and a marker with an older coordinator epoch is refused
(TRANSACTION_COORDINATOR_FENCED). Open and just-ended transactions make up the last stable
offset (producer_txns.py). Snapshots carry both fields, so open transactions survive restarts.

With a log directory, the state is also kept in `<offset>.snapshot` files (see
producer_snapshots.py): on load and after truncation it is the newest snapshot at or below
the log end offset plus a scan of the batch headers from that offset on; without one (or
with a corrupt one) the scan starts at the log start offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

from kafkapy.protocol.constants import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP
from kafkapy.protocol.control_records import EndTxnMarker
from kafkapy.protocol.errors import (
    InvalidProducerEpochException,
    InvalidTxnStateException,
    OutOfOrderSequenceException,
    ProducerFencedException,
    TransactionCoordinatorFencedException,
)
from kafkapy.protocol.record_batch import INT32_MAX, BatchHeader, increment_sequence
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.producer_snapshots import ProducerSnapshots
from kafkapy.server.log.producer_state_snapshot import (
    NO_COORDINATOR_EPOCH,
    NO_TXN_FIRST_OFFSET,
    SnapshotEntry,
)
from kafkapy.server.log.producer_txns import CompletedTxn, ProducerTransactions
from kafkapy.server.log.transaction_index import AbortedTxn

NUM_BATCHES_TO_RETAIN = 5


class LastRecord(NamedTuple):
    """A producer's last record the cleaner must keep (Kafka's LastRecord): its last data
    batch, or with none (an epoch bump by a marker dropped it) its marker of this epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: tuple[BatchMetadata, ...] = ()
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_TXN_FIRST_OFFSET  # -1: no open transaction

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_timestamp(self) -> int:
        return self.batches[-1].timestamp if self.batches else NO_TIMESTAMP

    def to_snapshot(self) -> SnapshotEntry:
        last = self.batches[-1] if self.batches else None
        if last is None:
            return SnapshotEntry(
                self.producer_id, self.producer_epoch, NO_SEQUENCE, -1, 0, NO_TIMESTAMP,
                self.coordinator_epoch, self.current_txn_first_offset,
            )  # fmt: skip
        return SnapshotEntry(
            self.producer_id, self.producer_epoch, last.last_seq, last.last_offset,
            last.last_offset - last.first_offset, last.timestamp, self.coordinator_epoch,
            self.current_txn_first_offset,
        )  # fmt: skip

    @classmethod
    def from_snapshot(cls, e: SnapshotEntry) -> ProducerStateEntry:
        """Only the last batch survives a snapshot; its first sequence and offset are derived
        from the offset delta, as Kafka's BatchMetadata does."""
        txn = (e.coordinator_epoch, e.current_txn_first_offset)
        if e.last_offset < 0:
            return cls(e.producer_id, e.producer_epoch, (), *txn)
        first_seq = _decrement_sequence(e.last_sequence, e.offset_delta)
        batch = BatchMetadata(
            first_seq, e.last_sequence, e.last_offset - e.offset_delta, e.last_offset, e.timestamp
        )
        return cls(e.producer_id, e.producer_epoch, (batch,), *txn)

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        last_seq = header.last_sequence
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == last_seq:
                return batch
        return None

    def with_batch(self, header: BatchHeader, first_offset: int) -> ProducerStateEntry:
        """The entry after appending `header`'s batch at `first_offset` (a new epoch drops old batches)."""
        kept = self.batches if header.producer_epoch == self.producer_epoch else ()
        batch = BatchMetadata(
            header.base_sequence,
            header.last_sequence,
            first_offset,
            first_offset + header.last_offset_delta,
            header.max_timestamp,
        )
        txn_first = self.current_txn_first_offset
        if header.is_transactional and txn_first < 0:
            txn_first = first_offset
        return replace(
            self,
            producer_epoch=header.producer_epoch,
            batches=(*kept, batch)[-NUM_BATCHES_TO_RETAIN:],
            current_txn_first_offset=txn_first,
        )

    def with_marker(self, header: BatchHeader, marker: EndTxnMarker, offset: int) -> ProducerStateEntry:
        """The entry after a COMMIT/ABORT marker at `offset`: no open transaction, the marker's
        coordinator epoch; a newer producer epoch (a bump by the coordinator) drops old batches."""
        kept = self.batches if header.producer_epoch == self.producer_epoch else ()
        return replace(
            self,
            producer_epoch=header.producer_epoch,
            batches=kept,
            coordinator_epoch=marker.coordinator_epoch,
            current_txn_first_offset=NO_TXN_FIRST_OFFSET,
        )


# One batch to account for: its header, its first offset, and its marker if it is a control batch.
ProducerBatch = tuple[BatchHeader, int, EndTxnMarker | None]
# The log's batches from an offset on, as (header, marker or None): the replay after a snapshot.
BatchesFrom = Callable[[int], Iterable[tuple[BatchHeader, EndTxnMarker | None]]]


@dataclass(slots=True)
class PreparedAppend:
    """What an append changes, applied by `commit` once the data is written."""

    updates: dict[int, ProducerStateEntry]
    started: list[tuple[int, int]]  # (producer id, first offset) of transactions the append opens
    completed: list[CompletedTxn]  # transactions its markers end


class ProducerStateManager:
    def __init__(self, topic_partition: str, dir_: str | None = None) -> None:
        """Without `dir_` the state lives in memory only (no snapshot files)."""
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}
        self.txns = ProducerTransactions()
        # Aborted transactions met by the last replay (truncate_and_reload / rebuild), for the
        # log to put back in its `.txnindex` files where they are missing.
        self.replayed_aborted: list[AbortedTxn] = []
        self.snapshots = ProducerSnapshots(dir_, topic_partition) if dir_ is not None else None

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(header.producer_id)
        return entry.find_duplicate(header) if entry else None

    def prepare(
        self, batches: Iterable[ProducerBatch], verify: bool = True, check_sequence: bool = True
    ) -> PreparedAppend:
        """Validate (header, assigned first offset, marker) triples; returns what to `commit`.

        Nothing changes until `commit`, so a refused or failed append leaves the state as is.
        `verify=False` takes the batches as facts (follower appends, rebuild from the log);
        `check_sequence=False` checks epochs only: a coordinator's writes (transactional
        offset commits) carry no sequence, as Kafka checks sequences for client appends only.
        """
        updates: dict[int, ProducerStateEntry] = {}
        started: list[tuple[int, int]] = []
        completed: list[CompletedTxn] = []
        for header, first_offset, marker in batches:
            pid = header.producer_id
            if pid < 0:
                continue
            current = updates.get(pid) or self.producers.get(pid) or ProducerStateEntry(pid)
            if marker is not None:
                if verify:
                    self._check_marker(current, header, marker, first_offset)
                if current.current_txn_first_offset >= 0:
                    completed.append(
                        CompletedTxn(pid, current.current_txn_first_offset, first_offset, marker.is_abort)
                    )
                updates[pid] = current.with_marker(header, marker, first_offset)
                continue
            if verify:
                self._check(current, header, first_offset, check_sequence)
            updated = updates[pid] = current.with_batch(header, first_offset)
            if updated.current_txn_first_offset != current.current_txn_first_offset:
                started.append((pid, first_offset))
        return PreparedAppend(updates, started, completed)

    def commit(self, prepared: PreparedAppend) -> None:
        self.producers.update(prepared.updates)
        for pid, first_offset in prepared.started:
            self.txns.begin(pid, first_offset)
        for txn in prepared.completed:
            self.txns.complete(txn)

    def aborted_txn_entry(self, txn: CompletedTxn) -> AbortedTxn:
        """The `.txnindex` entry of an aborted transaction just committed to the state."""
        return AbortedTxn(
            txn.producer_id, txn.first_offset, txn.last_offset, self.txns.last_stable_offset_after(txn)
        )

    @property
    def first_unstable_offset(self) -> int | None:
        return self.txns.first_unstable_offset

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        if self.txns.unreplicated:
            self.txns.on_high_watermark_updated(high_watermark)

    def _check_marker(
        self, current: ProducerStateEntry, header: BatchHeader, marker: EndTxnMarker, offset: int
    ) -> None:
        if header.producer_epoch < current.producer_epoch:
            raise ProducerFencedException(
                f"Producer's epoch at offset {offset} in {self.topic_partition} is {header.producer_epoch}, "
                f"which is smaller than the last seen epoch {current.producer_epoch}"
            )
        if current.coordinator_epoch > marker.coordinator_epoch:
            raise TransactionCoordinatorFencedException(
                f"Invalid coordinator epoch for producer {header.producer_id} at offset {offset} in partition "
                f"{self.topic_partition}: {marker.coordinator_epoch} (zombie), {current.coordinator_epoch} (current)"
            )

    def _check(
        self, current: ProducerStateEntry, header: BatchHeader, offset: int, check_sequence: bool = True
    ) -> None:
        epoch, seq = header.producer_epoch, header.base_sequence
        if not header.is_transactional and current.current_txn_first_offset >= 0:
            raise InvalidTxnStateException(
                f"Expected transactional write from producer {header.producer_id} at offset {offset} in "
                f"partition {self.topic_partition}"
            )
        if epoch < current.producer_epoch:
            raise InvalidProducerEpochException(
                f"Epoch of producer {header.producer_id} at offset {offset} in {self.topic_partition} is "
                f"{epoch}, which is smaller than the last seen epoch {current.producer_epoch}"
            )
        if current.producer_epoch == NO_PRODUCER_EPOCH or not check_sequence:
            return  # unknown producer: any sequence starts it
        if epoch != current.producer_epoch:
            if seq != 0:
                raise OutOfOrderSequenceException(
                    f"Invalid sequence number for new epoch of producer {header.producer_id} at offset {offset} "
                    f"in partition {self.topic_partition}: {epoch} (request epoch), {seq} (seq. number), "
                    f"{current.producer_epoch} (current producer epoch)"
                )
            return
        last_seq = current.last_seq
        if last_seq != NO_SEQUENCE and seq != increment_sequence(last_seq, 1):
            raise OutOfOrderSequenceException(
                f"Out of order sequence number for producer {header.producer_id} at offset {offset} in "
                f"partition {self.topic_partition}: {seq} (incoming seq. number), {last_seq} (current end "
                "sequence number)"
            )

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose every batch lies before the log start offset, and their snapshots."""
        kept = {
            pid: e
            for pid, e in self.producers.items()
            if e.last_offset >= log_start_offset
            or not e.batches
            or e.current_txn_first_offset >= log_start_offset
        }
        if self.txns and len(kept) != len(self.producers):
            self.txns.remove_producers(set(self.producers) - set(kept))
        self.producers = kept
        self.txns.truncate_head(log_start_offset)
        if self.snapshots is not None:
            self.snapshots.delete_below(log_start_offset)

    def truncate(self) -> None:
        """Full truncation: no state and no snapshot survives."""
        self.producers.clear()
        self.txns.clear()
        if self.snapshots is not None:
            self.snapshots.delete_all()

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` (producer.id.expiration.ms) with no open
        transaction, as Kafka's isProducerExpired; returns how many."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if now_ms - e.last_timestamp >= expiration_ms and e.current_txn_first_offset < 0
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot_entries(self) -> list[SnapshotEntry]:
        return [e.to_snapshot() for e in self.producers.values()]

    def prepare_snapshot(self, offset: int, syncer: Syncer = FSYNC_EACH) -> Callable[[], None] | None:
        """A job writing the current state as the snapshot at `offset` (the log end offset, or
        the base offset of the segment just rolled); None if there is nothing to write."""
        if self.snapshots is None:
            return None
        return self.snapshots.prepare_write(offset, self.snapshot_entries(), syncer)

    def delete_snapshots_below(self, offset: int) -> None:
        if self.snapshots is not None:
            self.snapshots.delete_below(offset)

    def update_dir(self, dir_: str) -> None:
        if self.snapshots is not None:
            self.snapshots.update_dir(dir_)

    def take_snapshot(self, offset: int, syncer: Syncer = FSYNC_EACH) -> None:
        job = self.prepare_snapshot(offset, syncer)
        if job is not None:
            job()

    def truncate_and_reload(
        self,
        log_start_offset: int,
        log_end_offset: int,
        batches_from: BatchesFrom,
        use_snapshots: bool = True,
    ) -> int:
        """Rebuild the state of the log [start, end): the newest snapshot in range plus the batches after it.

        Snapshots beyond the end (left by an unclean shutdown or a truncation) or below the
        start are deleted first. Returns the offset the scan of batch headers started at.
        `use_snapshots=False` scans the whole log (a `.txnindex` had to be rebuilt).
        """
        self.producers.clear()
        self.txns.clear()
        scan_from = log_start_offset
        if self.snapshots is not None and use_snapshots:
            self.snapshots.delete_above(log_end_offset)
            self.snapshots.delete_below(log_start_offset)
            loaded = self.snapshots.load_latest(log_end_offset)
            if loaded is not None:
                scan_from, entries = loaded
                for entry in entries:
                    self.producers[entry.producer_id] = ProducerStateEntry.from_snapshot(entry)
                    if entry.current_txn_first_offset >= 0:
                        self.txns.begin(entry.producer_id, entry.current_txn_first_offset)
        self._replay(batches_from(scan_from))
        self.truncate_head(log_start_offset)
        return scan_from

    def rebuild(self, batches: Iterable[tuple[BatchHeader, EndTxnMarker | None]]) -> None:
        """Replay the batches of the whole log, oldest first (no snapshot)."""
        self.producers.clear()
        self.txns.clear()
        self._replay(batches)

    def _replay(self, batches: Iterable[tuple[BatchHeader, EndTxnMarker | None]]) -> None:
        self.replayed_aborted = []
        producers = self.producers
        for header, marker in batches:
            pid = header.producer_id
            if pid < 0:
                continue
            entry = producers.get(pid)
            if (
                marker is None
                and not header.is_transactional
                and (entry is None or entry.current_txn_first_offset < 0)
            ):
                # The common idempotent case, without the transactional bookkeeping's allocations.
                producers[pid] = (entry or ProducerStateEntry(pid)).with_batch(header, header.base_offset)
            else:
                prepared = self.prepare(((header, header.base_offset, marker),), verify=False)
                self.commit(prepared)
                for txn in prepared.completed:
                    if txn.is_aborted:
                        self.replayed_aborted.append(self.aborted_txn_entry(txn))


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """The inverse of increment_sequence: sequences wrap from 0 back to INT32_MAX."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement
