"""Producer batches decode as Kafka batches in every codec; the accumulator's bounds."""

from __future__ import annotations

import time

import pytest

from kafkapy.client.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkapy.client.records import decode_record_set
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer.accumulator import BufferExhaustedError, RecordAccumulator
from kafkapy.producer.batch import ProducerBatch
from kafkapy.protocol.record_batch import read_header, validate_records
from kafkapy.protocol.record_codec import decode_records, encode_headers

TP = TopicPartition("t", 0)


def filled_batch(records: list[tuple[bytes | None, bytes | None, int]], codec: int = 0) -> ProducerBatch:
    batch = ProducerBatch(TP, 1 << 20, records[0][2], 0.0, None)
    for key, value, ts in records:
        assert batch.append(ts, key, value, None) >= 0
    batch.base_sequence = 7
    batch.close(codec, 1000, 3)
    return batch


RECORDS = [(b"k%d" % i, b"v" * (i * 37 % 400), 1_700_000_000_000 + i) for i in range(300)] + [
    (None, None, 1_700_000_000_500),
    (b"", b"", 1_699_999_999_000),  # an earlier timestamp: a negative delta
]


def test_uncompressed_batch_is_valid_and_decodes_with_the_protocol_codec() -> None:
    batch = filled_batch(RECORDS)
    ((position, header),) = validate_records(memoryview(batch.buf), None)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1000, 3, 7)
    assert header.records_count == len(RECORDS)
    assert header.max_timestamp == max(ts for _, _, ts in RECORDS)
    decoded = decode_records(batch.buf)
    assert [(r.key, r.value, r.timestamp) for r in decoded] == RECORDS
    assert [r.offset for r in decoded] == list(range(len(RECORDS)))


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_keep_the_header_plain_and_decode(codec: int) -> None:
    batch = filled_batch(RECORDS, codec)
    validate_records(memoryview(batch.buf), None)
    assert read_header(batch.buf).compression == codec
    records, next_offset = decode_record_set("t", 0, batch.buf)
    assert [(r.key, r.value, r.timestamp) for r in records] == RECORDS
    assert next_offset == len(RECORDS)


def test_headers_are_encoded_per_record() -> None:
    batch = ProducerBatch(TP, 1 << 20, 0, 0.0, None)
    batch.append(0, None, b"v", encode_headers([("a", b"1"), ("b", None)]))
    batch.close(0, -1, -1)
    assert decode_records(batch.buf)[0].headers == (("a", b"1"), ("b", None))


def test_a_batch_refuses_records_past_its_size_but_always_takes_the_first() -> None:
    batch = ProducerBatch(TP, 200, 0, 0.0, None)
    assert batch.append(0, None, b"x" * 500, None) == 0
    assert batch.append(0, None, b"x", None) == -1
    capped = ProducerBatch(TP, 10_000, 0, 0.0, max_records=2)
    assert (capped.append(0, None, b"a", None), capped.append(0, None, b"b", None)) == (0, 1)
    assert capped.append(0, None, b"c", None) == -1


def accumulator(**overrides: int) -> RecordAccumulator:
    settings = {"batch_size": 1024, "linger_ms": 0, "buffer_memory": 4096, "max_block_ms": 200,
                "retry_backoff_ms": 100, "delivery_timeout_ms": 120_000}  # fmt: skip
    settings.update(overrides)
    return RecordAccumulator(**settings)  # type: ignore[arg-type]


def test_a_full_buffer_blocks_for_max_block_ms_then_raises_a_clear_error() -> None:
    acc = accumulator()
    for p in range(4):
        acc.append(TopicPartition("t", p), 0, None, b"x", None)
    started = time.monotonic()
    with pytest.raises(BufferExhaustedError, match="max blocking time 200 ms .*buffer.memory=4096"):
        acc.append(TopicPartition("t", 4), 0, None, b"x", None)
    assert 0.19 <= time.monotonic() - started < 2


def test_queue_buffering_max_messages_bounds_queued_records() -> None:
    acc = accumulator(max_queued_records=3, buffer_memory=1 << 20)
    for p in range(3):
        acc.append(TopicPartition("t", p), 0, None, b"x", None)
    with pytest.raises(BufferExhaustedError, match="queue.buffering.max.messages=3"):
        acc.append(TopicPartition("t", 9), 0, None, b"x", None)


def test_ready_waits_for_linger_and_drain_respects_max_request_size() -> None:
    c = ClusterMetadata(
        {0: BrokerNode(0, "h", 1)}, {"t": tuple(PartitionMetadata(p, 0, 0, (0,), (0,)) for p in range(3))}
    )
    acc = accumulator(linger_ms=50, buffer_memory=1 << 20)
    for p in range(3):
        acc.append(TopicPartition("t", p), 0, None, b"x" * 300, None)
    now = time.monotonic()
    nodes, wait, unknown = acc.ready(c, now)
    assert nodes == set() and 0 < wait <= 0.05 and unknown == set()
    nodes, _, _ = acc.ready(c, now + 0.06)
    assert nodes == {0}
    drained = acc.drain(c, nodes, 800, now + 0.06, lambda b: b.close(0, -1, -1))
    assert len(drained[0]) == 2  # a third batch would pass max.request.size
    unknown_topic = acc.append(TopicPartition("other", 0), 0, None, b"x", None)
    assert unknown_topic[0] is not None
    assert acc.ready(c, now + 1)[2] == {"other"}
