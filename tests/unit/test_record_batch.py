from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkapy.protocol import record_batch as rb
from kafkapy.protocol import record_codec as rc
from kafkapy.protocol.errors import (
    CorruptRecordException,
    InvalidRecordException,
    RecordTooLargeException,
    UnsupportedForMessageFormatException,
)


def batch(n: int = 3, **kwargs: object) -> bytearray:
    return rc.build_batch(
        [(b"k%d" % i, b"value-%d" % i, [("h", b"x")], 1_000 + i) for i in range(n)], **kwargs
    )  # type: ignore[arg-type]


def test_header_struct_is_61_bytes_big_endian() -> None:
    assert rb.HEADER.size == rb.HEADER_SIZE == 61
    assert rb.HEADER.format.startswith(">")


def test_built_batch_matches_kafka_python_bytes_except_leader_epoch() -> None:
    default_records = pytest.importorskip("kafka.record.default_records")
    builder = default_records.DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=7, producer_epoch=1,
        base_sequence=5, batch_size=1 << 20,
    )  # fmt: skip
    builder.append(0, 1000, b"k", b"v", [("h", b"x")])
    builder.append(1, 1005, None, b"vv", [])
    theirs = bytes(builder.build())
    ours = rc.build_batch(
        [(b"k", b"v", [("h", b"x")], 1000), (None, b"vv", [], 1005)],
        producer_id=7, producer_epoch=1, base_sequence=5, partition_leader_epoch=0,
    )  # fmt: skip
    assert bytes(ours) == theirs


record = st.tuples(
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3),
    st.integers(min_value=0, max_value=2**45),
)


@given(records=st.lists(record, min_size=1, max_size=20), base_offset=st.integers(0, 2**40))
def test_build_then_decode_round_trips_every_field(records: list, base_offset: int) -> None:
    data = rc.build_batch(records, base_offset=base_offset)
    header = rb.read_header(data)
    assert header.size == len(data)
    assert header.records_count == len(records)
    assert header.max_timestamp == max(r[3] for r in records)
    decoded = rc.decode_records(data)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in decoded] == [
        (k, v, list(h), ts) for k, v, h, ts in records
    ]
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))
    assert rb.validate_records(memoryview(data), None, from_client=False)[0][1] == header


def test_validate_returns_position_and_header_of_each_batch() -> None:
    data = batch(2) + batch(5)
    found = rb.validate_records(memoryview(data), 10_000)
    assert [(pos, h.records_count) for pos, h in found] == [(0, 2), (len(batch(2)), 5)]


def test_validate_rejects_flipped_byte_under_crc() -> None:
    data = batch()
    data[-3] ^= 0xFF
    with pytest.raises(CorruptRecordException, match="crc"):
        rb.validate_records(memoryview(data), None)


@pytest.mark.parametrize("cut", [1, 30, 61, 70])
def test_validate_rejects_a_truncated_record_set(cut: int) -> None:
    data = batch() + batch()
    with pytest.raises(CorruptRecordException):
        rb.validate_records(memoryview(data[:-cut]), None)


def test_validate_rejects_trailing_garbage() -> None:
    with pytest.raises(CorruptRecordException):
        rb.validate_records(memoryview(batch() + b"\x00" * 5), None)


def test_validate_rejects_batch_larger_than_max_message_bytes() -> None:
    data = batch()
    with pytest.raises(RecordTooLargeException):
        rb.validate_records(memoryview(data), len(data) - 1)
    assert rb.validate_records(memoryview(data), len(data))


def test_validate_rejects_length_below_minimum_overhead() -> None:
    data = batch()
    struct.pack_into(">i", data, rb.LENGTH_OFFSET, 13)
    with pytest.raises(CorruptRecordException, match="minimum record overhead"):
        rb.validate_records(memoryview(data), None)


def test_legacy_magic_is_unsupported_and_unknown_magic_is_corrupt() -> None:
    data = batch()
    data[rb.MAGIC_OFFSET] = 1
    with pytest.raises(UnsupportedForMessageFormatException):
        rb.validate_records(memoryview(data), None)
    data[rb.MAGIC_OFFSET] = 3
    with pytest.raises(CorruptRecordException, match="Invalid magic"):
        rb.validate_records(memoryview(data), None)


def test_client_batches_must_start_at_offset_zero() -> None:
    with pytest.raises(InvalidRecordException, match="baseOffset"):
        rb.validate_records(memoryview(batch(base_offset=5)), None)
    assert rb.validate_records(memoryview(batch(base_offset=5)), None, from_client=False)


def _rewrite(data: bytearray, offset: int, fmt: str, value: int) -> None:
    struct.pack_into(fmt, data, offset, value)
    struct.pack_into(">I", data, rb.CRC_OFFSET, rb.compute_crc(memoryview(data), 0, len(data)))


def test_client_batch_count_must_match_last_offset_delta() -> None:
    data = batch(3)
    _rewrite(data, 57, ">i", 4)
    with pytest.raises(InvalidRecordException, match="Inconsistent"):
        rb.validate_records(memoryview(data), None)


def test_clients_may_not_write_control_batches() -> None:
    data = batch()
    _rewrite(data, rb.ATTRIBUTES_OFFSET, ">h", rb.Attr.CONTROL)
    with pytest.raises(InvalidRecordException, match="control"):
        rb.validate_records(memoryview(data), None)


def test_producer_id_requires_a_sequence() -> None:
    with pytest.raises(InvalidRecordException, match="sequence"):
        rb.validate_records(memoryview(batch(producer_id=3, producer_epoch=0)), None)


def test_iter_batches_stops_quietly_at_a_torn_tail() -> None:
    data = batch(2) + batch(3)
    view = memoryview(data)[:-10]
    assert [h.records_count for _, h in rb.iter_batches(view)] == [2]


def test_patching_base_offset_and_epoch_keeps_crc_valid() -> None:
    data = batch()
    rb.set_base_offset(memoryview(data), 0, 1234, 7)
    [(_, header)] = rb.validate_records(memoryview(data), None, from_client=False)
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (1234, 7, 1236)


def test_log_append_time_sets_flag_max_timestamp_and_a_fresh_crc() -> None:
    data = batch()
    rb.set_log_append_time(memoryview(data), 0, len(data), 99_999)
    [(_, header)] = rb.validate_records(memoryview(data), None)
    assert header.timestamp_type == rb.TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 99_999
    assert {r.timestamp for r in rc.decode_records(data)} == {99_999}


def test_sequence_numbers_wrap_after_int32_max() -> None:
    assert rb.increment_sequence(rb.INT32_MAX, 1) == 0
    assert rb.increment_sequence(rb.INT32_MAX - 1, 3) == 1
    assert rb.increment_sequence(5, 3) == 8
