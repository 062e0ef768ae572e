"""ProducerBatch: records for one partition, encoded as they are appended; and the futures.

A batch is a bytearray that starts with 61 blank header bytes; each `try_append` writes one
record in v2 form right after the last (the record layout is in protocol/record_batch.py).
`close` fills the header once the batch leaves the accumulator: compression (of the records
section only), producer id/epoch/sequence, counts, timestamps, one CRC-32C.

Per record, the hot path builds the record's prefix from pre-encoded varints (a table lookup
instead of a loop) and extends the buffer a few times; it allocates only the future. The future
is a slotted object pointing at its batch: one `threading.Event` per batch, not per record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from crc32c import crc32c

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.compression import compress
from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH
from kafkapy.protocol.errors import KafkaError, TimeoutException
from kafkapy.protocol.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
)


def _zigzag_varint(value: int) -> bytes:
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# Varints of 0..VARINT_TABLE-1 (lengths, deltas); -1 (a null) has its own constant.
VARINT_TABLE = 1 << 15
_V = [_zigzag_varint(i) for i in range(VARINT_TABLE)]
_NULL = _zigzag_varint(-1)


def varint(value: int) -> bytes:
    return _V[value] if 0 <= value < VARINT_TABLE else _zigzag_varint(value)


def encoded_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    out = bytearray(varint(len(headers)))
    for hkey, hvalue in headers:
        k = hkey.encode()
        out += varint(len(k))
        out += k
        if hvalue is None:
            out += _NULL
        else:
            out += varint(len(hvalue))
            out += hvalue
    return bytes(out)

TRANSACTIONAL_ATTRIBUTE = 0x10  # record batch attributes bit 4 (Attr.TRANSACTIONAL)


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int  # -1 with acks=0
    timestamp: int  # CreateTime, or the broker's LogAppendTime
    serialized_key_size: int
    serialized_value_size: int


Callback = Callable[[RecordMetadata | None, BaseException | None], Any]


class ProducerBatch:
    __slots__ = (
        "tp", "buf", "count", "base_ts", "max_ts", "limit", "max_records", "created", "attempts",
        "retry_at", "base_sequence", "done", "base_offset", "log_append_time", "error", "callbacks",
        "reserved", "closed_size", "in_retry", "drained_at", "_lock", "key_sizes", "value_sizes",
        "timestamps",
    )  # fmt: skip

    def __init__(self, tp: TopicPartition, limit: int, base_ts: int, created: float, max_records: int | None):
        self.tp = tp
        self.buf = bytearray(HEADER_SIZE)
        self.count = 0
        self.base_ts = base_ts
        self.max_ts = base_ts
        self.limit = limit  # size in bytes after which no further record is accepted
        self.max_records = max_records
        self.created = created
        self.attempts = 0
        self.retry_at = 0.0
        self.base_sequence = -1
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
        # Per-record facts a RecordMetadata reports; kept as parallel lists, filled on demand.
        self.key_sizes: list[int] = []
        self.value_sizes: list[int] = []
        self.timestamps: list[int] = []

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

    def try_append(
        self, ts: int, key: bytes | None, value: bytes | None, headers: bytes | None
    ) -> FutureRecordMetadata | None:
        """Encode one record into the batch; None when it does not fit (a first record always does)."""
        count = self.count
        delta = ts - self.base_ts
        ts_bytes = _V[delta] if 0 <= delta < VARINT_TABLE else _zigzag_varint(delta)
        od_bytes = _V[count] if count < VARINT_TABLE else _zigzag_varint(count)
        if key is None:
            klen, k_bytes = 0, _NULL
        else:
            klen = len(key)
            k_bytes = _V[klen] if klen < VARINT_TABLE else _zigzag_varint(klen)
        if value is None:
            vlen, v_bytes = 0, _NULL
        else:
            vlen = len(value)
            v_bytes = _V[vlen] if vlen < VARINT_TABLE else _zigzag_varint(vlen)
        size = 2 + len(ts_bytes) + len(od_bytes) + len(k_bytes) + klen + len(v_bytes) + vlen
        size += len(headers) - 1 if headers else 0
        buf = self.buf
        if count and (len(buf) + size + 5 > self.limit or count == self.max_records):
            return None
        buf += _V[size] if size < VARINT_TABLE else _zigzag_varint(size)
        buf += b"\x00"  # record attributes: none defined
        buf += ts_bytes
        buf += od_bytes
        buf += k_bytes
        if key:
            buf += key
        buf += v_bytes
        if value:
            buf += value
        buf += headers or b"\x00"
        if ts > self.max_ts:
            self.max_ts = ts
        self.key_sizes.append(klen if key is not None else -1)
        self.value_sizes.append(vlen if value is not None else -1)
        self.timestamps.append(ts)
        self.count = count + 1
        return FutureRecordMetadata(self, count)

    def close(self, compression: int, producer_id: int, producer_epoch: int, transactional: bool = False) -> None:
        """Fill in the header (compressing the records first); called each time the batch is
        drained, so a retry carries the same sequence number and bytes."""
        if self.closed_size:
            return
        if compression:
            records = compress(compression, memoryview(self.buf)[HEADER_SIZE:])
            self.buf = self.buf[:HEADER_SIZE] + records
        buf = self.buf
        HEADER.pack_into(
            buf, 0, 0, len(buf) - LOG_OVERHEAD, NO_PARTITION_LEADER_EPOCH, MAGIC_V2, 0,
            compression | (TRANSACTIONAL_ATTRIBUTE if transactional else 0),
            self.count - 1, self.base_ts, self.max_ts, producer_id, producer_epoch, self.base_sequence,
            self.count,
        )  # fmt: skip
        buf[CRC_OFFSET : CRC_OFFSET + 4] = crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]).to_bytes(4, "big")
        self.closed_size = len(buf)

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
