"""Sender: the producer's background thread, the only one that touches its sockets.

Each round: ask the accumulator which leaders have sendable batches, connect to those not
connected, drain up to max.request.size per ready leader into one Produce request each, fail
batches past delivery.timeout.ms, then poll the NetworkClient (which does the I/O, runs the
response callbacks below and refreshes metadata). Retriable errors put a batch back at the head
of its queue after retry.backoff.ms and ask for fresh metadata when leadership may have moved.

Idempotence: one InitProducerId before the first batch; each batch gets the partition's next
sequence number when first drained and keeps it (and its bytes) across retries, so the broker
can drop duplicates. Without idempotence and with max.in.flight=1, a partition is muted while
its batch is in flight, so retries cannot reorder records.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

from kafkapy.client.client_metrics import ProducerMetrics
from kafkapy.client.network_client import NetworkClient
from kafkapy.producer.accumulator import RecordAccumulator
from kafkapy.producer.batch import ProducerBatch
from kafkapy.producer.config import ProducerConfig
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkapy.protocol.errors import (
    DuplicateSequenceException,
    KafkaError,
    LeaderNotAvailableException,
    NetworkException,
    NotLeaderOrFollowerException,
    OutOfOrderSequenceException,
    TimeoutException,
    UnknownServerException,
    UnknownTopicOrPartitionException,
    for_code,
)
from kafkapy.protocol.generated.init_producer_id_request import InitProducerIdRequest
from kafkapy.protocol.record_batch import increment_sequence

log = logging.getLogger("kafkapy.producer.Sender")

PRODUCE_MAX_VERSION: Final = 8  # the last non-flexible version: encoded by hand below
_ACKS_TIMEOUT_COUNT = struct.Struct(">hhii")  # null transactional id, acks, timeout, topic count
_PART = struct.Struct(">ii")
_INVALID_METADATA: Final = {
    NotLeaderOrFollowerException.code,
    LeaderNotAvailableException.code,
    UnknownTopicOrPartitionException.code,
    NetworkException.code,
}


def encode_produce_request(acks: int, timeout_ms: int, batches: Sequence[ProducerBatch]) -> list[Any]:
    """Produce v3-v8 body as a list of buffers: the batches' bytes are referenced, not copied."""
    by_topic: dict[str, list[ProducerBatch]] = {}
    for b in batches:
        by_topic.setdefault(b.tp.topic, []).append(b)
    head = bytearray(_ACKS_TIMEOUT_COUNT.pack(-1, acks, timeout_ms, len(by_topic)))
    parts: list[Any] = []
    for topic, items in by_topic.items():
        name = topic.encode()
        head += len(name).to_bytes(2, "big")
        head += name
        head += len(items).to_bytes(4, "big")
        for b in items:
            head += _PART.pack(b.tp.partition, b.closed_size)
            parts.append(head)
            parts.append(b.buf)
            head = bytearray()
    return parts


class Sender(threading.Thread):
    def __init__(self, config: ProducerConfig, client: NetworkClient, accumulator: RecordAccumulator) -> None:
        super().__init__(name=f"kafka-producer-network-thread | {config.client_id}", daemon=True)
        self.config = config
        self.client = client
        self.accumulator = accumulator
        # Kafka's producer-metrics, recorded per batch and per request (KafkaProducer.metrics()).
        self.metrics = ProducerMetrics()
        self.running = True
        self.force_close = False
        self.fatal_error: BaseException | None = None
        self.idempotent = config.enable_idempotence
        self.guarantee_order = config.max_in_flight_requests_per_connection == 1 and not self.idempotent
        self.producer_id = NO_PRODUCER_ID
        # A transactional producer's TransactionManager: it gets the producer id
        # (init_transactions) and adds partitions to the transaction before their first batch.
        self.transaction_manager: Any = None
        self.producer_epoch = NO_PRODUCER_EPOCH
        self._pid_in_flight = False
        self._pid_retry_at = 0.0
        self._next_sequence: dict[Any, int] = {}

    def run(self) -> None:
        try:
            while self.running:
                self.run_once()
            # Graceful close: send what is queued and wait for what is in flight.
            while not self.force_close and (
                self.accumulator.has_undrained() or self.client.in_flight_count() > 0
            ):
                self.run_once()
        except BaseException as e:  # noqa: BLE001 - report, then fail every waiting send
            log.exception("Uncaught error in the producer's network thread")
            self.fatal_error = e
        finally:
            error = self.fatal_error or KafkaError("Producer is closed forcefully.")
            self.accumulator.abort_all(error)
            for batch in list(self.accumulator.incomplete):
                batch.complete(-1, -1, error)
                self.accumulator.deallocate(batch)
            self.client.close()

    def wakeup(self) -> None:
        self.client.wakeup()

    def initiate_close(self, force: bool = False) -> None:
        self.force_close = force
        self.running = False
        self.accumulator.close()
        self.wakeup()

    # -- one round --------------------------------------------------------------------------

    def run_once(self) -> None:
        now = time.monotonic()
        poll_timeout = 1.0
        txn = self.transaction_manager
        if self.idempotent and self.producer_id < 0:
            if txn is None:
                self._maybe_init_producer_id(now)
            self.client.poll(0.05)
            return
        if txn is not None:
            with self.accumulator._lock:
                waiting = [tp for tp, dq in self.accumulator.batches.items() if dq]
            if waiting:
                txn.add_partitions(waiting)
        cluster = self.client.cluster
        nodes, next_check, unknown = self.accumulator.ready(cluster, now)
        if unknown:
            self.client.add_topics(unknown)
            self.client.request_metadata_update()
        not_ready = {n for n in nodes if not self.client.ready(n)}
        if not_ready:
            # Connecting, backing off or at max in flight: poll wakes on I/O; backoff needs a timer.
            poll_timeout = self.config.reconnect_backoff_ms / 1000
        drained = self.accumulator.drain(
            cluster, nodes - not_ready, self.config.max_request_size, now, self._close_batch,
            None if txn is None else txn.added_partitions(),
        )  # fmt: skip
        for batch in self.accumulator.expired_batches(now):
            self._fail(batch, TimeoutException(self._expiry_message(batch, now)))
        for node, batches in drained.items():
            self._send_produce(node, batches)
        if drained:
            poll_timeout = 0.0 if self.accumulator.has_undrained() and not not_ready else poll_timeout
        poll_timeout = min(poll_timeout, next_check)
        self.client.poll(poll_timeout)

    def _expiry_message(self, batch: ProducerBatch, now: float) -> str:
        return (
            f"Expiring {batch.count} record(s) for {batch.tp.topic}-{batch.tp.partition}:"
            f"{int((now - batch.created) * 1000)} ms has passed since batch creation"
        )

    def _close_batch(self, batch: ProducerBatch) -> None:
        if self.guarantee_order:
            self.accumulator.muted.add(batch.tp)
        if self.idempotent and batch.base_sequence < 0:
            seq = self._next_sequence.get(batch.tp, 0)
            batch.base_sequence = seq
            self._next_sequence[batch.tp] = increment_sequence(seq, batch.count)
        batch.close(
            self.config.compression_type,
            self.producer_id,
            self.producer_epoch,
            self.transaction_manager is not None,
        )

    def _send_produce(self, node: int, batches: list[ProducerBatch]) -> None:
        acks = self.config.acks
        body = encode_produce_request(acks, self.config.request_timeout_ms, batches)
        metrics = self.metrics
        sent = time.monotonic()
        records = 0
        for batch in batches:
            metrics.batch_size.record(batch.size)
            metrics.outgoing_bytes.record(batch.size)
            records += batch.count
        metrics.records_per_request.record(records)

        def on_response(resp: Any, exc: BaseException | None) -> None:
            if exc is None:
                metrics.request_latency_ms.record((time.monotonic() - sent) * 1000)
            self._handle_produce_response(batches, resp, exc)

        try:
            self.client.send(
                node, ApiKey.PRODUCE, body, on_response, max_version=PRODUCE_MAX_VERSION,
                expect_response=acks != 0, raw_body=True,
            )  # fmt: skip
        except KafkaError as e:
            on_response(None, e)

    # -- responses ----------------------------------------------------------------------------

    def _handle_produce_response(
        self, batches: list[ProducerBatch], resp: Any, exc: BaseException | None
    ) -> None:
        now = time.monotonic()
        if exc is not None:
            self.client.request_metadata_update()
            for batch in batches:
                self._retry_or_fail(batch, exc, now)
            return
        if resp is None:  # acks=0: the broker never answers
            for batch in batches:
                self._done(batch, -1, -1)
            return
        results = {(t.name, p.index): p for t in resp.responses for p in t.partition_responses}
        for batch in batches:
            p = results.get((batch.tp.topic, batch.tp.partition))
            if p is None:
                self._fail(batch, KafkaError(f"no result for {batch.tp} in the Produce response"))
                continue
            code = p.error_code
            if code == 0 or code == DuplicateSequenceException.code:
                self._done(batch, p.base_offset, p.log_append_time_ms)
                continue
            error = for_code(code, p.error_message or "")
            if code in _INVALID_METADATA:
                self.client.request_metadata_update()
            self._retry_or_fail(batch, error, now)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, now: float) -> None:
        retriable = getattr(error, "retriable", False) or (
            self.idempotent and isinstance(error, OutOfOrderSequenceException)
        )  # an earlier batch of the partition is being retried: this one follows it
        if (
            retriable
            and batch.attempts < self.config.retries
            and now - batch.created < self.config.delivery_timeout_ms / 1000
            and not self.force_close
        ):
            log.debug("retrying %s (attempt %d): %s", batch, batch.attempts + 1, error)
            self.metrics.record_retry.record(batch.count)
            self.accumulator.muted.discard(batch.tp)
            self.accumulator.reenqueue(batch, now)
            return
        self._fail(batch, error)

    def _done(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        self.accumulator.muted.discard(batch.tp)
        self.metrics.record_send.record(batch.count)
        batch.complete(base_offset, log_append_time, None)
        self.accumulator.deallocate(batch)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self.accumulator.muted.discard(batch.tp)
        self.metrics.record_error.record(batch.count)
        batch.complete(-1, -1, error)
        self.accumulator.deallocate(batch)

    # -- idempotence ------------------------------------------------------------------------

    def _maybe_init_producer_id(self, now: float) -> None:
        if self._pid_in_flight or now < self._pid_retry_at:
            return
        node = self.client.least_loaded_node()
        if node is None or not self.client.ready(node):
            return
        self._pid_in_flight = True

        def on_response(resp: Any, exc: BaseException | None) -> None:
            self._pid_in_flight = False
            code = resp.error_code if resp is not None else UnknownServerException.code
            if exc is None and code == 0:
                self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
                self._next_sequence.clear()
                return
            error = exc or for_code(code)
            if getattr(error, "retriable", False) or exc is not None:
                self._pid_retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000
                return
            self.fatal_error = error
            self.force_close = True
            self.running = False

        body = InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout_ms=60_000,
            producer_id=-1,
            producer_epoch=-1,
        )
        self.client.send(node, ApiKey.INIT_PRODUCER_ID, body, on_response)
