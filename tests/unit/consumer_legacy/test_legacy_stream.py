"""KafkaStream iteration: chunks, consumed offsets, timeouts, shutdown and revoked partitions."""

from __future__ import annotations

import queue
import threading

import pytest

from kafkapy.consumer_legacy.stream import (
    SHUTDOWN_COMMAND,
    ConsumerTimeoutException,
    KafkaStream,
    PartitionTopicInfo,
    clear_queue,
)
from kafkapy.protocol.record_codec import Record


def recs(*offsets: int) -> list[Record]:
    return [Record(o, 1000 + o, b"k%d" % o, b"v%d" % o) for o in offsets]


def setup(timeout_ms: int = 50, offset: int = 0) -> tuple[queue.Queue, KafkaStream, PartitionTopicInfo]:
    q: queue.Queue = queue.Queue(2)
    info = PartitionTopicInfo("t", 3, q, offset, offset, 1024)
    return q, KafkaStream(q, timeout_ms, "c"), info


def test_messages_come_out_in_order_and_advance_the_consumed_offset() -> None:
    _, stream, info = setup()
    stop = threading.Event()
    assert info.enqueue(recs(0, 1), 0, stop) and info.enqueue(recs(2), 2, stop)
    assert info.fetched_offset == 3
    m = next(stream)
    assert (m.topic, m.partition, m.offset, m.key, m.message, m.timestamp) == ("t", 3, 0, b"k0", b"v0", 1000)
    assert info.consumed_offset == 1
    assert [m.offset for m in (next(stream), next(stream))] == [1, 2]
    assert info.consumed_offset == 3


def test_records_before_the_consumed_offset_are_skipped() -> None:
    # A compressed batch fetched from offset 5 still holds offsets 3 and 4.
    _, stream, info = setup(offset=5)
    info.enqueue(recs(3, 4, 5, 6), 5, threading.Event())
    assert [next(stream).offset, next(stream).offset] == [5, 6]


def test_consumer_timeout_raises_and_iteration_can_go_on() -> None:
    _, stream, info = setup(timeout_ms=20)
    with pytest.raises(ConsumerTimeoutException):
        next(stream)
    info.enqueue(recs(0), 0, threading.Event())
    assert next(stream).offset == 0


def test_shutdown_sentinel_ends_iteration_for_every_reader() -> None:
    q, stream, info = setup()
    info.enqueue(recs(0), 0, threading.Event())
    q.put(SHUTDOWN_COMMAND)
    assert [m.offset for m in stream] == [0]
    assert q.get_nowait() is SHUTDOWN_COMMAND  # put back for others


def test_revoked_partitions_deliver_nothing_more() -> None:
    q, stream, info = setup()
    info.enqueue(recs(0, 1, 2), 0, threading.Event())
    assert next(stream).offset == 0
    info.revoked = True
    stream.clear()
    with pytest.raises(ConsumerTimeoutException):
        next(stream)
    assert info.consumed_offset == 1


def test_a_full_queue_blocks_the_fetcher_until_stopped() -> None:
    q, _, info = setup()
    stop = threading.Event()
    info.enqueue(recs(0), 0, stop)
    info.enqueue(recs(1), 1, stop)
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(info.enqueue(recs(2), 2, stop)))
    t.start()
    t.join(0.3)
    assert t.is_alive()  # back-pressure: queued.max.message.chunks = 2
    stop.set()
    t.join(2)
    assert result == [False] and info.fetched_offset == 2
    clear_queue(q)
    assert q.empty()
