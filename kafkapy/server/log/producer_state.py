"""ProducerStateManager: idempotent-producer bookkeeping of a log (no transactions).

Per producer id it keeps the current epoch and the metadata of the last five batches
(sequence range and offsets), as Kafka does, so that:

- a retry of one of those five batches is answered with the original offsets and not
  appended again (`find_duplicate`);
- a batch with an epoch lower than the current one is refused with InvalidProducerEpoch;
- a batch of a known producer whose first sequence does not follow the last one is refused
  with OutOfOrderSequence (a new epoch must start at sequence 0);
- a producer the log does not know (new, or its batches removed by retention) is accepted
  at any sequence, like Kafka 2.5+.

With a log directory, the state is also kept in `<offset>.snapshot` files (see
producer_snapshots.py): on load and after truncation it is the newest snapshot at or below
the log end offset plus a scan of the batch headers from that offset on; without one (or
with a corrupt one) the scan starts at the log start offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kafkapy.protocol.errors import InvalidProducerEpochException, OutOfOrderSequenceException
from kafkapy.protocol.record_batch import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    increment_sequence,
)
from kafkapy.server.log.producer_snapshots import ProducerSnapshots
from kafkapy.server.log.producer_state_snapshot import SnapshotEntry

NUM_BATCHES_TO_RETAIN = 5


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
            return SnapshotEntry(self.producer_id, self.producer_epoch, NO_SEQUENCE, -1, 0, NO_TIMESTAMP)
        return SnapshotEntry(
            self.producer_id, self.producer_epoch, last.last_seq, last.last_offset,
            last.last_offset - last.first_offset, last.timestamp,
        )  # fmt: skip

    @classmethod
    def from_snapshot(cls, e: SnapshotEntry) -> ProducerStateEntry:
        """Only the last batch survives a snapshot; its first sequence and offset are derived
        from the offset delta, as Kafka's BatchMetadata does."""
        if e.last_offset < 0:
            return cls(e.producer_id, e.producer_epoch)
        first_seq = _decrement_sequence(e.last_sequence, e.offset_delta)
        batch = BatchMetadata(
            first_seq, e.last_sequence, e.last_offset - e.offset_delta, e.last_offset, e.timestamp
        )
        return cls(e.producer_id, e.producer_epoch, (batch,))

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
        return replace(
            self, producer_epoch=header.producer_epoch, batches=(*kept, batch)[-NUM_BATCHES_TO_RETAIN:]
        )


HeadersFrom = Callable[[int], Iterable[BatchHeader]]  # batch headers of the log from an offset on


class ProducerStateManager:
    def __init__(self, topic_partition: str, dir_: str | None = None) -> None:
        """Without `dir_` the state lives in memory only (no snapshot files)."""
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}
        self.snapshots = ProducerSnapshots(dir_, topic_partition) if dir_ is not None else None

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(header.producer_id)
        return entry.find_duplicate(header) if entry else None

    def prepare(
        self, batches: Iterable[tuple[BatchHeader, int]], verify: bool = True
    ) -> dict[int, ProducerStateEntry]:
        """Validate (header, assigned first offset) pairs; returns the entries to `commit`.

        Nothing changes until `commit`, so a refused or failed append leaves the state as is.
        `verify=False` takes the batches as facts (follower appends, rebuild from the log).
        """
        updates: dict[int, ProducerStateEntry] = {}
        for header, first_offset in batches:
            pid = header.producer_id
            if pid < 0:
                continue
            current = updates.get(pid) or self.producers.get(pid) or ProducerStateEntry(pid)
            if verify:
                self._check(current, header, first_offset)
            updates[pid] = current.with_batch(header, first_offset)
        return updates

    def commit(self, updates: dict[int, ProducerStateEntry]) -> None:
        self.producers.update(updates)

    def _check(self, current: ProducerStateEntry, header: BatchHeader, offset: int) -> None:
        epoch, seq = header.producer_epoch, header.base_sequence
        if epoch < current.producer_epoch:
            raise InvalidProducerEpochException(
                f"Epoch of producer {header.producer_id} at offset {offset} in {self.topic_partition} is "
                f"{epoch}, which is smaller than the last seen epoch {current.producer_epoch}"
            )
        if current.producer_epoch == NO_PRODUCER_EPOCH:
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
        self.producers = {
            pid: e for pid, e in self.producers.items() if e.last_offset >= log_start_offset or not e.batches
        }
        if self.snapshots is not None:
            self.snapshots.delete_below(log_start_offset)

    def truncate(self) -> None:
        """Full truncation: no state and no snapshot survives."""
        self.producers.clear()
        if self.snapshots is not None:
            self.snapshots.delete_all()

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` (producer.id.expiration.ms); returns how many."""
        expired = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot_entries(self) -> list[SnapshotEntry]:
        return [e.to_snapshot() for e in self.producers.values()]

    def prepare_snapshot(self, offset: int) -> Callable[[], None] | None:
        """A job writing the current state as the snapshot at `offset` (the log end offset, or
        the base offset of the segment just rolled); None if there is nothing to write."""
        if self.snapshots is None:
            return None
        return self.snapshots.prepare_write(offset, self.snapshot_entries())

    def delete_snapshots_below(self, offset: int) -> None:
        if self.snapshots is not None:
            self.snapshots.delete_below(offset)

    def update_dir(self, dir_: str) -> None:
        if self.snapshots is not None:
            self.snapshots.update_dir(dir_)

    def take_snapshot(self, offset: int) -> None:
        job = self.prepare_snapshot(offset)
        if job is not None:
            job()

    def truncate_and_reload(
        self, log_start_offset: int, log_end_offset: int, headers_from: HeadersFrom
    ) -> int:
        """Rebuild the state of the log [start, end): the newest snapshot in range plus the batches after it.

        Snapshots beyond the end (left by an unclean shutdown or a truncation) or below the
        start are deleted first. Returns the offset the scan of batch headers started at.
        """
        self.producers.clear()
        scan_from = log_start_offset
        if self.snapshots is not None:
            self.snapshots.delete_above(log_end_offset)
            self.snapshots.delete_below(log_start_offset)
            loaded = self.snapshots.load_latest(log_end_offset)
            if loaded is not None:
                scan_from, entries = loaded
                for entry in entries:
                    self.producers[entry.producer_id] = ProducerStateEntry.from_snapshot(entry)
        self._replay(headers_from(scan_from))
        self.truncate_head(log_start_offset)
        return scan_from

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        """Replay the batch headers of the whole log, oldest first (no snapshot)."""
        self.producers.clear()
        self._replay(headers)

    def _replay(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            if header.producer_id >= 0:
                entry = self.producers.get(header.producer_id) or ProducerStateEntry(header.producer_id)
                self.producers[header.producer_id] = entry.with_batch(header, header.base_offset)


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """The inverse of increment_sequence: sequences wrap from 0 back to INT32_MAX."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement
