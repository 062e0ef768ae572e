from __future__ import annotations

import os

import pytest
from log_helpers import FakeClock, fetched_offsets, records, small_config

from kafkapy.protocol.record_batch import read_header, set_base_offset
from kafkapy.server.log.log_segment import LogSegment, RollParams


def append(
    segment: LogSegment, base_offset: int, n: int = 2, timestamp: int = 1_000, size: int = 20
) -> bytearray:
    data = records(n, timestamp=timestamp, size=size)
    set_base_offset(data, 0, base_offset, 0)
    segment.append(base_offset + n - 1, timestamp, base_offset + n - 1, memoryview(data))
    return data


@pytest.fixture
def segment(tmp_path, clock: FakeClock) -> LogSegment:
    seg = LogSegment.open(str(tmp_path), 50, small_config(index_interval_bytes=100), clock)
    yield seg
    seg.close()


def test_files_are_named_by_twenty_digit_base_offset(segment: LogSegment, tmp_path) -> None:
    assert sorted(os.listdir(tmp_path)) == [
        "00000000000000000050.index",
        "00000000000000000050.log",
        "00000000000000000050.timeindex",
    ]


def test_append_then_read_returns_the_batch_holding_the_offset(segment: LogSegment) -> None:
    for i in range(10):
        append(segment, 50 + 2 * i, timestamp=1_000 + i)
    info = segment.read(57, 10_000)
    assert info is not None
    assert fetched_offsets(info)[0] == 56
    assert info.fetch_offset_metadata.segment_base_offset == 50
    assert segment.read(70, 100) is None


def test_index_gets_an_entry_once_index_interval_bytes_have_passed(tmp_path, clock: FakeClock) -> None:
    segment = LogSegment.open(str(tmp_path), 50, small_config(index_interval_bytes=300), clock)
    sizes = [read_header(append(segment, 50 + 2 * i)).size for i in range(11)]
    assert sizes[0] == 121  # so an entry lands on appends 4, 7 and 10
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == [
        (57, 363),
        (63, 726),
        (69, 1089),
    ]
    for offset in range(50, 72):
        found = segment.translate_offset(offset)
        assert found is not None and found.offset >= offset > found.offset - 2
    segment.close()


def test_read_respects_max_size_and_min_one_message(segment: LogSegment) -> None:
    size = read_header(append(segment, 50)).size
    append(segment, 52)
    info = segment.read(50, size + 10)
    assert info is not None and info.size == size + 10  # cut inside the second batch: clients skip it
    small = segment.read(50, 10, min_one_message=True)
    assert small is not None and small.size == size and not small.first_entry_incomplete
    none = segment.read(50, 10, min_one_message=False)
    assert none is not None and none.size == 10 and none.first_entry_incomplete


def test_read_stops_at_max_position(segment: LogSegment) -> None:
    size = read_header(append(segment, 50)).size
    append(segment, 52)
    info = segment.read(50, 10_000, max_position=size)
    assert info is not None and info.size == size


def test_read_next_offset_follows_the_last_batch(segment: LogSegment) -> None:
    assert segment.read_next_offset() == 50
    append(segment, 50, n=3)
    assert segment.read_next_offset() == 53


def test_recover_rebuilds_indexes_and_truncates_a_torn_tail(segment: LogSegment) -> None:
    for i in range(10):
        append(segment, 50 + 2 * i, timestamp=1_000 + i)
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    good_size = segment.size
    segment.log.append(memoryview(records(2))[:40])  # a batch cut short by a crash
    assert segment.recover() == 40
    assert segment.size == good_size
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == entries
    assert segment.time_index.last_entry == (1_009, 69)


def test_recover_truncates_at_a_crc_mismatch(segment: LogSegment) -> None:
    sizes = [read_header(append(segment, 50 + 2 * i)).size for i in range(5)]
    os.pwrite(segment.log.fd, b"\xff", sum(sizes[:2]) + 70)  # inside the third batch's records
    truncated = segment.recover()
    assert truncated == sum(sizes[2:])
    assert segment.read_next_offset() == 54


def test_truncate_to_drops_the_batch_holding_the_offset_and_after(segment: LogSegment) -> None:
    for i in range(5):
        append(segment, 50 + 2 * i, timestamp=1_000 + i)
    size = read_header(segment.log.read(0, 61)).size
    assert segment.truncate_to(54) == 3 * size
    assert segment.read_next_offset() == 54
    assert segment.max_timestamp_so_far == 1_001


def test_find_offset_by_timestamp_returns_first_record_at_or_after(segment: LogSegment) -> None:
    for i in range(5):
        append(segment, 50 + 2 * i, timestamp=1_000 + 10 * i)
    found = segment.find_offset_by_timestamp(1_015, 0)
    assert found is not None and (found.timestamp, found.offset) == (1_020, 54)
    assert segment.find_offset_by_timestamp(5_000, 0) is None


def test_becoming_inactive_indexes_the_largest_timestamp_and_trims(segment: LogSegment) -> None:
    append(segment, 50, timestamp=7_000)
    segment.on_become_inactive_segment()
    assert segment.time_index.last_entry.timestamp == 7_000
    assert os.path.getsize(segment.offset_index.path) == segment.offset_index.size_in_bytes
    assert os.path.getsize(segment.time_index.path) == segment.time_index.size_in_bytes


def test_should_roll_by_size_time_and_offset_overflow(segment: LogSegment, clock: FakeClock) -> None:
    def params(**kw: int) -> RollParams:
        base = {"max_segment_ms": 1000, "max_segment_bytes": 1024, "max_timestamp_in_messages": 1_000,
                "max_offset_in_messages": 60, "messages_size": 100, "now": clock.now}  # fmt: skip
        base.update(kw)
        return RollParams(**base)

    assert not segment.should_roll(params())
    append(segment, 50, timestamp=1_000)
    assert segment.should_roll(params(messages_size=1024))
    assert segment.should_roll(params(max_timestamp_in_messages=2_001))
    assert segment.should_roll(params(max_offset_in_messages=50 + 2**31))
    assert not segment.should_roll(params(max_timestamp_in_messages=1_999))
