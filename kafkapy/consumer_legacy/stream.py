"""KafkaStream: the iterable a legacy consumer thread reads, fed by fetchers through a bounded queue.

Fetcher threads put FetchedDataChunks (the records of one partition from one fetch) on a queue of
at most `queued.max.message.chunks` chunks per stream; a full queue blocks the fetcher, which is
the consumer's back-pressure. Iterating a stream yields MessageAndMetadata and advances the
partition's consumed offset (the next offset to read), which is what offset commits write.

As in Kafka's ConsumerIterator: `consumer.timeout.ms` >= 0 makes `next()` raise
ConsumerTimeoutException when nothing arrives in time (iteration may simply continue after it);
shutdown puts a sentinel on every queue, which ends iteration. Chunks of partitions given up in
a rebalance are dropped rather than delivered (their PartitionTopicInfo is revoked), so records
the next owner will read from the committed offset are not handed out twice here.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from kafkapy.protocol.record_codec import Record


class ConsumerTimeoutException(Exception):
    """No message arrived within consumer.timeout.ms."""


@dataclass(frozen=True, slots=True)
class MessageAndMetadata:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    message: bytes | None
    timestamp: int = -1


class PartitionTopicInfo:
    """One owned partition: where its chunks go, and its fetched / consumed offsets."""

    def __init__(
        self,
        topic: str,
        partition: int,
        chunk_queue: queue.Queue[FetchedDataChunk],
        consumed_offset: int,
        fetched_offset: int,
        fetch_size: int,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.queue = chunk_queue
        self.consumed_offset = consumed_offset
        self.fetched_offset = fetched_offset
        self.fetch_size = fetch_size
        self.revoked = False

    def __repr__(self) -> str:
        return (
            f"{self.topic}:{self.partition}: fetched offset = {self.fetched_offset}: "
            f"consumed offset = {self.consumed_offset}"
        )

    def reset_offsets(self, offset: int) -> None:
        """After auto.offset.reset: both offsets jump to `offset`."""
        self.fetched_offset = offset
        self.consumed_offset = offset

    def enqueue(self, records: Sequence[Record], fetch_offset: int, stopped: threading.Event) -> bool:
        """Queue the records (blocking while the stream's queue is full); False if `stopped` was set
        first, in which case the fetched offset does not move."""
        if not records:
            return True
        chunk = FetchedDataChunk(records, self, fetch_offset)
        while not stopped.is_set() and not self.revoked:
            try:
                self.queue.put(chunk, timeout=0.1)
            except queue.Full:
                continue
            self.fetched_offset = records[-1].offset + 1
            return True
        return False


@dataclass(frozen=True, slots=True)
class FetchedDataChunk:
    records: Sequence[Record]
    info: PartitionTopicInfo | None  # None only for the shutdown sentinel
    fetch_offset: int


SHUTDOWN_COMMAND = FetchedDataChunk((), None, -1)


def clear_queue(q: queue.Queue[FetchedDataChunk]) -> None:
    with q.mutex:
        q.queue.clear()
        q.not_full.notify_all()


class KafkaStream:
    """An iterator of MessageAndMetadata over one chunk queue (Kafka's KafkaStream + ConsumerIterator)."""

    def __init__(
        self, chunk_queue: queue.Queue[FetchedDataChunk], consumer_timeout_ms: int, client_id: str
    ) -> None:
        self.queue = chunk_queue
        self.consumer_timeout_ms = consumer_timeout_ms
        self.client_id = client_id
        self._lock = threading.Lock()
        self._current: FetchedDataChunk | None = None
        self._pos = 0
        self._done = False

    def __iter__(self) -> KafkaStream:
        return self

    def __repr__(self) -> str:
        return f"KafkaStream(client_id={self.client_id!r}, queued chunks={self.queue.qsize()})"

    def clear(self) -> None:
        """Drop the chunk being iterated (a rebalance is taking its partition away)."""
        with self._lock:
            self._current = None

    def __next__(self) -> MessageAndMetadata:
        while True:
            with self._lock:
                if self._done:
                    raise StopIteration
                item = self._next_from_current()
            if item is not None:
                return item
            chunk = self._take_chunk()
            if chunk is SHUTDOWN_COMMAND:
                # Leave it there for anyone else iterating, as Kafka's iterator does.
                self.queue.put(chunk)
                with self._lock:
                    self._done = True
                raise StopIteration
            info = chunk.info
            if info is None or info.revoked:
                continue
            with self._lock:
                if info.consumed_offset < chunk.fetch_offset:
                    # Kafka logs "consumed offset ... doesn't match fetch offset" and jumps ahead.
                    info.consumed_offset = chunk.fetch_offset
                self._current, self._pos = chunk, 0

    def _next_from_current(self) -> MessageAndMetadata | None:
        chunk = self._current
        if chunk is None:
            return None
        info = chunk.info
        assert info is not None
        records = chunk.records
        while self._pos < len(records) and not info.revoked:
            rec = records[self._pos]
            self._pos += 1
            # A compressed batch starts before the fetch offset: skip what was already consumed.
            if rec.offset < info.consumed_offset:
                continue
            info.consumed_offset = rec.offset + 1
            return MessageAndMetadata(
                info.topic, info.partition, rec.offset, rec.key, rec.value, rec.timestamp
            )
        self._current = None
        return None

    def _take_chunk(self) -> FetchedDataChunk:
        try:
            if self.consumer_timeout_ms < 0:
                # Wake up now and then so Ctrl-C reaches a blocked main thread.
                while True:
                    try:
                        return self.queue.get(timeout=1.0)
                    except queue.Empty:
                        continue
            return self.queue.get(timeout=self.consumer_timeout_ms / 1000)
        except queue.Empty:
            raise ConsumerTimeoutException() from None
