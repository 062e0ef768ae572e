"""KafkaProducer: the async producer's public API.

    producer = KafkaProducer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5})
    future = producer.send("events", b"value", key=b"k", callback=lambda md, exc: ...)
    producer.flush()
    producer.close()

`send` serializes, picks the partition, appends to the accumulator and returns at once with a
future; the background sender thread does everything else. Errors that concern one record
(unknown topic after max.block.ms, a record larger than max.request.size) come back through the
future and the callback, as with Java's producer. Waiting longer than max.block.ms, for
metadata or for buffer space, raises from `send` itself (TimeoutException /
BufferExhaustedError, as kafka-python does): back-pressure the caller sees at once. Errors about
the producer itself (closed, bad arguments) are raised too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from kafkapy.client.cluster import ClusterMetadata
from kafkapy.client.network_client import NetworkClient
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer.accumulator import RecordAccumulator
from kafkapy.producer.batch import Callback, FailedFuture, FutureRecordMetadata
from kafkapy.producer.config import ProducerConfig
from kafkapy.producer.partitioner import make_partitioner
from kafkapy.producer.sender import Sender
from kafkapy.producer.transaction_manager import KafkaTransactionStateError, TransactionManager
from kafkapy.protocol.errors import (
    InvalidTopicException,
    KafkaError,
    RecordTooLargeException,
    TimeoutException,
)
from kafkapy.protocol.record_codec import encode_headers


def _to_bytes(data: Any) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"key and value must be bytes or str without a serializer, not {type(data).__name__}")


class KafkaProducer:
    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = c = ProducerConfig.parse(config, **kwargs)
        self.client_id = c.client_id or f"producer-{id(self) & 0xFFFF}"
        self._client = NetworkClient(
            c.bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=c.request_timeout_ms,
            reconnect_backoff_ms=c.reconnect_backoff_ms,
            reconnect_backoff_max_ms=c.reconnect_backoff_max_ms,
            retry_backoff_ms=c.retry_backoff_ms,
            metadata_max_age_ms=c.metadata_max_age_ms,
            max_in_flight=c.max_in_flight_requests_per_connection,
            allow_auto_topic_creation=c.allow_auto_create_topics,
        )
        self._accumulator = RecordAccumulator(
            batch_size=c.batch_size,
            linger_ms=c.linger_ms,
            buffer_memory=c.buffer_memory,
            max_block_ms=c.max_block_ms,
            retry_backoff_ms=c.retry_backoff_ms,
            delivery_timeout_ms=c.delivery_timeout_ms,
            max_records_per_batch=c.batch_num_messages,
            max_queued_records=c.queue_buffering_max_messages,
        )
        self._partitioner = make_partitioner(c.partitioner_class)
        # Partitioners that stick to a partition until its batch is full (KIP-480) say for which keys.
        self._sticky = getattr(self._partitioner, "uses_sticky", None)
        self._sender = Sender(c, self._client, self._accumulator)
        self._txn: TransactionManager | None = None
        if c.transactional_id is not None:
            self._txn = TransactionManager(
                c.bootstrap_servers, c.transactional_id, c.transaction_timeout_ms, c.max_block_ms,
                c.retry_backoff_ms,
            )  # fmt: skip
            self._sender.transaction_manager = self._txn
        self._sender.start()
        self._closed = False
        self._transaction_futures: list[Any] = []  # this transaction's sends, checked at commit

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
        timestamp: int | None = None,
        callback: Callback | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record; the future (and `callback(metadata, exception)`) completes when the
        broker acknowledges it (at once with acks=0). Blocks up to max.block.ms for metadata
        and buffer space, then raises TimeoutException / BufferExhaustedError."""
        if self._closed:
            raise RuntimeError("Cannot perform operation after producer has been closed")
        if not topic:
            raise InvalidTopicException("Topic name must not be empty")
        if self._txn is not None and not self._txn.is_in_transaction():
            raise KafkaTransactionStateError(
                "Cannot send a record outside a transaction (begin_transaction first)"
            )
        c = self.config
        key_bytes = c.key_serializer(key) if c.key_serializer else _to_bytes(key)
        value_bytes = c.value_serializer(value) if c.value_serializer else _to_bytes(value)
        ts = int(time.time() * 1000) if timestamp is None else int(timestamp)
        header_bytes = encode_headers(headers) if headers else None
        try:
            cluster = self._cluster_with(topic, partition)
            size = 70 + (len(key_bytes) if key_bytes else 0) + (len(value_bytes) if value_bytes else 0)
            if size > c.max_request_size:
                raise RecordTooLargeException(
                    f"The message is {size} bytes when serialized which is larger than {c.max_request_size}, "
                    "which is the value of the max.request.size configuration."
                )
            future = self._append(topic, partition, key, key_bytes, value_bytes, header_bytes, ts, cluster)
        except TimeoutException:
            raise  # max.block.ms passed (no metadata, or no buffer space): back-pressure, at once
        except KafkaError as e:
            future = FailedFuture(e, TopicPartition(topic, -1 if partition is None else partition))
        if callback is not None:
            future.add_callback(callback)
        if self._txn is not None:
            self._transaction_futures.append(future)
        if c.sync:
            future.exception()  # the old producer.type=sync: wait for the acknowledgement
        return future

    def _append(
        self, topic: str, partition: int | None, key: Any, key_bytes: bytes | None,
        value_bytes: bytes | None, header_bytes: bytes | None, ts: int, cluster: ClusterMetadata,
    ) -> FutureRecordMetadata:  # fmt: skip
        sticky = partition is None and self._sticky is not None and self._sticky(key_bytes)
        if partition is None:
            partition = self._partitioner.partition(topic, key, key_bytes, cluster)
        tp = TopicPartition(topic, partition)
        future, new_batch = self._accumulator.append(tp, ts, key_bytes, value_bytes, header_bytes, sticky)
        if future is None:
            # KIP-480: a new batch is due; move the sticky partition first, then append there.
            self._partitioner.on_new_batch(topic, cluster, partition)
            partition = self._partitioner.partition(topic, key, key_bytes, cluster)
            tp = TopicPartition(topic, partition)
            future, new_batch = self._accumulator.append(tp, ts, key_bytes, value_bytes, header_bytes)
        assert future is not None
        if new_batch or future._batch.is_full():
            self._sender.wakeup()
        return future

    def _cluster_with(self, topic: str, partition: int | None) -> ClusterMetadata:
        """Metadata naming `topic` (and `partition`), waiting up to max.block.ms for it."""
        client = self._client
        cluster = client.cluster
        count = cluster.partition_count(topic)
        if count is not None and (partition is None or partition < count):
            return cluster
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        with client.metadata_updated:
            client.add_topics([topic])
            while True:
                client.request_metadata_update()
                client.wakeup()
                cluster = client.cluster
                count = cluster.partition_count(topic)
                if count is not None:
                    if partition is None or partition < count:
                        return cluster
                    if cluster.updated_at and partition >= count:
                        raise KafkaError(
                            f"Invalid partition given with record: {partition} is not in the range "
                            f"[0...{count})."
                        )
                error = cluster.topic_errors.get(topic)
                if error is not None and error == InvalidTopicException.code:
                    raise InvalidTopicException(f"Invalid topic: {topic}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutException(
                        f"Topic {topic} not present in metadata after {self.config.max_block_ms} ms."
                    )
                client.metadata_updated.wait(min(left, 0.1))

    # -- lifecycle ----------------------------------------------------------------------------

    # -- transactions (KIP-98), with Kafka's producer semantics ---------------------------------

    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise KafkaTransactionStateError("Transactional method invoked on a non-transactional producer.")
        return self._txn

    def init_transactions(self) -> None:
        """Get the producer id and epoch for transactional.id, fencing any earlier producer with
        it and completing its open transaction (aborted by the coordinator)."""
        txn = self._transactions()
        pid, epoch = txn.init_transactions()
        self._sender.producer_epoch = epoch
        self._sender.producer_id = pid  # last: the sender starts draining once it is set

    def begin_transaction(self) -> None:
        self._transactions().begin_transaction()

    def open_transaction(self) -> tuple[int, int, bool]:
        """(producer id, producer epoch, whether the transaction has anything in it): what a
        coordinator of several writers needs to end this producer's flushed transaction itself
        (`transaction_manager.end_transaction_of`, a two-phase commit)."""
        txn = self._transactions()
        return txn.producer_id, txn.producer_epoch, txn.has_content()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """Commit the consumer group's offsets as part of the transaction (visible on commit)."""
        self._transactions().send_offsets_to_transaction(offsets, group_id)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: every record sent in the transaction becomes visible to
        read_committed consumers. A failed send raises here and the transaction must abort."""
        txn = self._transactions()
        self.flush(timeout)
        failed = next((f.exception() for f in self._transaction_futures if f.exception() is not None), None)
        if failed is not None:
            raise KafkaTransactionStateError(f"Cannot commit: a record of the transaction failed: {failed}")
        txn.end_transaction(commit=True)
        self._transaction_futures.clear()

    def abort_transaction(self, timeout: float | None = None) -> None:
        txn = self._transactions()
        self.flush(timeout)
        txn.end_transaction(commit=False)
        self._transaction_futures.clear()

    def metrics(self) -> dict[str, dict[str, float]]:
        """Kafka's producer metrics by group and name, as kafka-python returns them
        ({"producer-metrics": {"record-send-rate": ..., "batch-size-avg": ..., ...}}); rates and
        averages cover the last 30-60 s, totals everything since the producer started."""
        return self._sender.metrics.snapshot()

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each of those records is acknowledged or
        failed; TimeoutException after `timeout` seconds."""
        batches = self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for batch in batches:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not batch.done.wait(left):
                    raise TimeoutException(f"Failed to flush accumulated records within {timeout} s")
        finally:
            self._accumulator.end_flush()

    def partitions_for(self, topic: str) -> list[int]:
        cluster = self._cluster_with(topic, None)
        return [p.partition for p in cluster.partitions_for(topic) or ()]

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (within `timeout` seconds, forever when None) and stop; records
        still unsent when the timeout passes fail."""
        if self._closed:
            return
        self._closed = True
        self._sender.initiate_close(force=timeout == 0)
        self._sender.join(timeout)
        if self._sender.is_alive():
            self._sender.initiate_close(force=True)
            self._sender.join()
        if self._txn is not None:
            self._txn.close()
        if self._sender.fatal_error is not None and not isinstance(self._sender.fatal_error, KafkaError):
            raise self._sender.fatal_error
