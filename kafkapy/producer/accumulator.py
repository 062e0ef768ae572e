"""RecordAccumulator: per-partition queues of batches between `send` and the sender thread.

Bounded, never unbounded: every open batch reserves max(batch.size, its first record) bytes of
buffer.memory until the broker acknowledges it (the old producer's queue.buffering.max.messages
adds a record-count bound). A `send` that finds the buffer full waits up to max.block.ms for
the sender to free space, then raises BufferExhaustedError naming the limit.

One lock guards the queues: under the GIL, finer locks (Java keeps one per deque) only add
acquisitions to the hot path. The sender asks `ready` which brokers have sendable batches
(full, lingered long enough, being flushed or closed, or waited on for memory), then `drain`s
at most max.request.size per broker.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Container, Iterable
from typing import Final

from kafkapy.client.cluster import ClusterMetadata
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer.batch import FutureRecordMetadata, ProducerBatch
from kafkapy.protocol.errors import RecordTooLargeException, TimeoutException

_NO_WAIT: Final = float("inf")


class BufferExhaustedError(TimeoutException):
    """No room in buffer.memory (or queue.buffering.max.messages) within max.block.ms."""


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        buffer_memory: int,
        max_block_ms: int,
        retry_backoff_ms: int,
        delivery_timeout_ms: int,
        max_records_per_batch: int | None = None,
        max_queued_records: int | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.max_block = max_block_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.max_records_per_batch = max_records_per_batch
        self.max_queued_records = max_queued_records
        self.batches: dict[TopicPartition, collections.deque[ProducerBatch]] = {}
        self.incomplete: set[ProducerBatch] = set()  # created and not yet acknowledged or failed
        self.muted: set[TopicPartition] = set()  # one batch in flight: ordering without idempotence
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self._used = 0
        self._queued_records = 0
        self._waiters = 0
        self._flushing = 0
        self.closed = False

    # -- the user's side ----------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        ts: int,
        key: bytes | None,
        value: bytes | None,
        headers: bytes | None,
        abort_on_new_batch: bool = False,
    ) -> tuple[FutureRecordMetadata | None, bool]:
        """Append to the partition's open batch or a new one: (future, new batch started).

        With `abort_on_new_batch`, returns (None, True) instead of starting a batch, so the
        sticky partitioner can move on to another partition first.
        """
        with self._lock:
            if self.closed:
                raise RuntimeError("Cannot send after the producer is closed.")
            dq = self.batches.get(tp)
            if dq is None:
                dq = self.batches[tp] = collections.deque()
            if dq:
                last = dq[-1]
                if not last.closed_size and (index := last.append(ts, key, value, headers)) >= 0:
                    self._queued_records += 1
                    return FutureRecordMetadata(last, index), False
            if abort_on_new_batch:
                return None, True
            size = (
                70
                + (len(key) if key else 0)
                + (len(value) if value else 0)
                + (len(headers) if headers else 0)
            )
            reserve = max(self.batch_size, size)
            self._reserve(reserve, tp)
            batch = ProducerBatch(tp, reserve, ts, time.monotonic(), self.max_records_per_batch)
            batch.reserved = reserve
            batch.append(ts, key, value, headers)  # a first record always fits
            dq.append(batch)
            self.incomplete.add(batch)
            self._queued_records += 1
            return FutureRecordMetadata(batch, 0), True

    def _reserve(self, size: int, tp: TopicPartition) -> None:
        """Wait (lock held, released while waiting) for `size` bytes of buffer.memory."""
        if size > self.buffer_memory:
            raise RecordTooLargeException(
                f"The message is {size} bytes when serialized which is larger than the total memory "
                f"buffer you have configured with the buffer.memory configuration."
            )
        if self._has_room(size):
            self._used += size
            return
        deadline = time.monotonic() + self.max_block
        self._waiters += 1
        try:
            while not self._has_room(size):
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise BufferExhaustedError(self._exhausted_message(tp))
                self._space.wait(left)
        finally:
            self._waiters -= 1
        self._used += size

    def _has_room(self, size: int) -> bool:
        if self.max_queued_records is not None and self._queued_records >= self.max_queued_records:
            return False
        return self._used + size <= self.buffer_memory

    def _exhausted_message(self, tp: TopicPartition) -> str:
        ms = int(self.max_block * 1000)
        if self.max_queued_records is not None and self._queued_records >= self.max_queued_records:
            return (
                f"Failed to enqueue a record for {tp.topic}-{tp.partition} within the configured max "
                f"blocking time {ms} ms: {self._queued_records} records queued "
                f"(queue.buffering.max.messages={self.max_queued_records})."
            )
        return (
            f"Failed to allocate memory within the configured max blocking time {ms} ms "
            f"(buffer.memory={self.buffer_memory} bytes in use by unsent and unacknowledged batches)."
        )

    # -- the sender's side ----------------------------------------------------------------------

    def deallocate(self, batch: ProducerBatch) -> None:
        with self._lock:
            self.incomplete.discard(batch)
            self._used -= batch.reserved
            self._queued_records -= batch.count
            batch.reserved = 0
            self._space.notify_all()

    def ready(self, cluster: ClusterMetadata, now: float) -> tuple[set[int], float, set[str]]:
        """(leaders with sendable batches, seconds until the next batch may become sendable,
        topics whose leader is unknown)."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_check = _NO_WAIT
        with self._lock:
            urgent = self._waiters > 0 or self._flushing > 0 or self.closed
            for tp, dq in self.batches.items():
                if not dq or tp in self.muted:
                    continue
                leader = cluster.leader_for(tp.topic, tp.partition)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                first = dq[0]
                if first.in_retry and first.retry_at > now:
                    next_check = min(next_check, first.retry_at - now)
                    continue
                waited = now - first.created
                if urgent or len(dq) > 1 or first.is_full() or waited >= self.linger:
                    nodes.add(leader)
                else:
                    next_check = min(next_check, self.linger - waited)
        return nodes, next_check, unknown

    def drain(
        self,
        cluster: ClusterMetadata,
        nodes: Iterable[int],
        max_request_size: int,
        now: float,
        close_batch: Callable[[ProducerBatch], None],
        allowed: Container[TopicPartition] | None = None,
    ) -> dict[int, list[ProducerBatch]]:
        """Take the first batch of each partition led by one of `nodes`, up to max_request_size
        per node (one batch at least). `close_batch(batch)` seals each one taken. `allowed`:
        only those partitions (a transaction's, once added to it)."""
        wanted = set(nodes)
        out: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        with self._lock:
            for tp, dq in self.batches.items():
                if not dq or tp in self.muted or (allowed is not None and tp not in allowed):
                    continue
                leader = cluster.leader_for(tp.topic, tp.partition)
                if leader not in wanted:
                    continue
                first = dq[0]
                if first.in_retry and first.retry_at > now:
                    continue
                used = sizes.get(leader, 0)
                if used and used + first.size > max_request_size:
                    continue
                dq.popleft()
                close_batch(first)
                first.drained_at = now
                sizes[leader] = used + first.closed_size
                out.setdefault(leader, []).append(first)
        return out

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        """Put a batch to retry back at the head of its queue, in sequence order."""
        batch.attempts += 1
        batch.in_retry = True
        batch.retry_at = now + self.retry_backoff
        with self._lock:
            dq = self.batches.setdefault(batch.tp, collections.deque())
            # Idempotent retries must go out in sequence order; others keep arrival order.
            i = 0
            while i < len(dq) and dq[i].in_retry and 0 <= dq[i].base_sequence < batch.base_sequence:
                i += 1
            dq.insert(i, batch)

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Batches waiting longer than delivery.timeout.ms since creation: removed, for the
        sender to fail."""
        expired: list[ProducerBatch] = []
        with self._lock:
            for dq in self.batches.values():
                while dq and now - dq[0].created >= self.delivery_timeout:
                    expired.append(dq.popleft())
        return expired

    def has_undrained(self) -> bool:
        with self._lock:
            return any(self.batches.values())

    def abort_all(self, error: BaseException) -> list[ProducerBatch]:
        with self._lock:
            batches = [b for dq in self.batches.values() for b in dq]
            self.batches.clear()
        for batch in batches:
            batch.complete(-1, -1, error)
            self.deallocate(batch)
        return batches

    def begin_flush(self) -> list[ProducerBatch]:
        with self._lock:
            self._flushing += 1
            return list(self.incomplete)

    def end_flush(self) -> None:
        with self._lock:
            self._flushing -= 1

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._space.notify_all()
