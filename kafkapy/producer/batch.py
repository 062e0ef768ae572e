"""ProducerBatch: records for one partition, encoded as they are appended; and the futures.

A ProducerBatch is the protocol's RecordBatchBuilder (protocol/record_codec.py, the one record
encoder): each `append` writes one record in v2 form right after the last (the accumulator then
hands out `FutureRecordMetadata(batch, index)`: no call of ours in between, it is the send path)
and `close` fills the header once the batch leaves the accumulator (compression of the records
section only, producer id/epoch/sequence, counts, timestamps, one CRC-32C). What it adds is the
producer's: the retry and completion state, the futures and their callbacks. A future is a
slotted object pointing at its batch: one `threading.Event` per batch, not per record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH, NO_SEQUENCE
from kafkapy.protocol.errors import KafkaError, TimeoutException
from kafkapy.protocol.record_codec import RecordBatchBuilder


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int  # -1 with acks=0
    timestamp: int  # CreateTime, or the broker's LogAppendTime
    serialized_key_size: int
    serialized_value_size: int


Callback = Callable[[RecordMetadata | None, BaseException | None], Any]


class ProducerBatch(RecordBatchBuilder):
    __slots__ = (
        "tp", "created", "attempts", "retry_at", "base_sequence", "done", "base_offset", "log_append_time",
        "error", "callbacks", "reserved", "closed_size", "in_retry", "drained_at", "_lock",
    )  # fmt: skip

    def __init__(self, tp: TopicPartition, limit: int, base_ts: int, created: float, max_records: int | None):
        # `limit`: the size in bytes after which no further record is accepted.
        RecordBatchBuilder.__init__(self, base_ts, limit, max_records)
        self.tp = tp
        self.created = created
        self.attempts = 0
        self.retry_at = 0.0
        self.base_sequence = NO_SEQUENCE
        self.done = threading.Event()
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.callbacks: list[tuple[int, Callback]] | None = None
        self.reserved = 0  # bytes of buffer.memory this batch holds
        self.closed_size = 0
        self.in_retry = False
        self.drained_at = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"ProducerBatch({self.tp.topic}-{self.tp.partition}, {self.count} records, {len(self.buf)} bytes)"
        )

    @property
    def size(self) -> int:
        return len(self.buf)

    def is_full(self) -> bool:
        return len(self.buf) >= self.limit or (
            self.max_records is not None and self.count >= self.max_records
        )

    def close(
        self, compression: int, producer_id: int, producer_epoch: int, transactional: bool = False
    ) -> None:
        """Fill in the header (compressing the records first); called each time the batch is
        drained, so a retry carries the same sequence number and bytes."""
        if self.closed_size:
            return
        self.build(
            compression,
            0,
            NO_PARTITION_LEADER_EPOCH,
            producer_id,
            producer_epoch,
            self.base_sequence,
            transactional,
        )
        self.closed_size = len(self.buf)

    # -- completion (sender thread) -------------------------------------------------------------

    def complete(self, base_offset: int, log_append_time: int, error: BaseException | None) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self.done.set()
            callbacks, self.callbacks = self.callbacks, None
        for index, callback in callbacks or ():
            _run_callback(callback, self, index)

    def add_callback(self, index: int, callback: Callback) -> None:
        with self._lock:
            if not self.done.is_set():
                if self.callbacks is None:
                    self.callbacks = []
                self.callbacks.append((index, callback))
                return
        _run_callback(callback, self, index)

    def metadata(self, index: int) -> RecordMetadata:
        offset = -1 if self.base_offset < 0 else self.base_offset + index
        ts = self.log_append_time if self.log_append_time >= 0 else self.timestamps[index]
        return RecordMetadata(
            self.tp.topic, self.tp.partition, offset, ts, self.key_sizes[index], self.value_sizes[index]
        )


def _run_callback(callback: Callback, batch: ProducerBatch, index: int) -> None:
    try:
        if batch.error is not None:
            callback(None, batch.error)
        else:
            callback(batch.metadata(index), None)
    except Exception:  # a user's callback must not break the sender
        import logging

        logging.getLogger("kafkapy.producer").exception("Error executing user-provided callback")


class FutureRecordMetadata:
    """The result of one `send`: get() waits for the broker's acknowledgement of its batch."""

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: ProducerBatch, index: int) -> None:
        self._batch = batch
        self._index = index

    def done(self) -> bool:
        return self._batch.done.is_set()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata; raises the send's error, or TimeoutException after `timeout` s."""
        if not self._batch.done.wait(timeout):
            raise TimeoutException(f"Timeout after waiting for {timeout} s for the record to be acknowledged")
        if self._batch.error is not None:
            raise self._batch.error
        return self._batch.metadata(self._index)

    result = get  # concurrent.futures spelling

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._batch.done.wait(timeout):
            raise TimeoutException(f"Timeout after waiting for {timeout} s")
        return self._batch.error

    def add_callback(self, callback: Callback) -> FutureRecordMetadata:
        """`callback(metadata, exception)` once acknowledged (at once if already done)."""
        self._batch.add_callback(self._index, callback)
        return self


class FailedFuture(FutureRecordMetadata):
    """A future failed before the record reached a batch (kafka-python's FutureFailure)."""

    __slots__ = ()

    def __init__(self, error: KafkaError | BaseException, tp: TopicPartition | None = None) -> None:
        batch = ProducerBatch(tp or TopicPartition("", -1), 0, 0, 0.0, None)
        batch.complete(-1, -1, error)
        super().__init__(batch, 0)
