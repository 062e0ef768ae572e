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

State is rebuilt on load by scanning batch headers (no snapshot files), and after truncation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from kafkapy.protocol.errors import InvalidProducerEpochException, OutOfOrderSequenceException
from kafkapy.protocol.record_batch import NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader, increment_sequence

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


class ProducerStateManager:
    def __init__(self, topic_partition: str) -> None:
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}

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
        """Forget producers whose every batch lies before the log start offset."""
        self.producers = {
            pid: e for pid, e in self.producers.items() if e.last_offset >= log_start_offset or not e.batches
        }

    def truncate(self) -> None:
        self.producers.clear()

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        """Replay the batch headers of the log, oldest first."""
        self.producers.clear()
        for header in headers:
            if header.producer_id >= 0:
                entry = self.producers.get(header.producer_id) or ProducerStateEntry(header.producer_id)
                self.producers[header.producer_id] = entry.with_batch(header, header.base_offset)
