from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from log_helpers import FakeClock, fetched_offsets, records, region_bytes, small_config

from kafkapy.protocol.errors import (
    CorruptRecordException,
    InvalidTimestampException,
    OffsetOutOfRangeException,
    RecordTooLargeException,
)
from kafkapy.protocol.record_batch import TimestampType, iter_batches, read_header
from kafkapy.protocol.record_codec import decode_records
from kafkapy.server.log.fetch_data_info import TimestampAndOffset
from kafkapy.server.log.log import Log, OffsetsOutOfOrderException, UnexpectedAppendOffsetException
from kafkapy.server.log.log_config import LogConfig


@pytest.fixture
def make_log(tmp_path, clock: FakeClock):
    opened: list[Log] = []

    def make(config: LogConfig | None = None, **kwargs: object) -> Log:
        log = Log(str(tmp_path / "topic-0"), config or small_config(), time_ms=clock, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def test_leader_append_assigns_consecutive_offsets(make_log) -> None:
    log = make_log()
    first = log.append_as_leader(records(3), leader_epoch=4)
    second = log.append_as_leader(records(2))
    assert (first.first_offset, first.last_offset, first.num_messages) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    header = read_header(region_bytes(log.read(0, 10_000).records))
    assert (header.base_offset, header.partition_leader_epoch) == (0, 4)


def test_writable_buffer_is_patched_in_place(make_log) -> None:
    log = make_log()
    log.append_as_leader(records(1))
    buf = records(2)
    log.append_as_leader(memoryview(buf))
    assert read_header(buf).base_offset == 1


def test_read_only_input_is_left_untouched(make_log) -> None:
    log = make_log()
    log.append_as_leader(records(1))
    data = bytes(records(2))
    log.append_as_leader(data)
    assert read_header(data).base_offset == 0
    assert fetched_offsets(log.read(0, 10_000)) == [0, 1]


def test_log_append_time_stamps_every_batch(make_log, clock: FakeClock) -> None:
    log = make_log(small_config(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(records(2, timestamp=5))
    assert info.log_append_time == clock.now == info.max_timestamp
    data = region_bytes(log.read(0, 10_000).records)
    assert read_header(data).timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in decode_records(data)} == {clock.now}


def test_create_time_outside_allowed_difference_is_refused(make_log, clock: FakeClock) -> None:
    log = make_log(small_config(message_timestamp_difference_max_ms=1_000))
    with pytest.raises(InvalidTimestampException):
        log.append_as_leader(records(1, timestamp=clock.now - 5_000))
    log.append_as_leader(records(1, timestamp=clock.now - 500))
    assert log.log_end_offset == 1


def test_batch_over_max_message_bytes_is_refused(make_log) -> None:
    log = make_log(small_config(max_message_bytes=100))
    with pytest.raises(RecordTooLargeException):
        log.append_as_leader(records(1, size=200))
    assert log.log_end_offset == 0


def test_corrupt_batch_is_refused_and_nothing_is_written(make_log) -> None:
    log = make_log()
    data = records(1) + records(1)
    data[-1] ^= 1
    with pytest.raises(CorruptRecordException):
        log.append_as_leader(data)
    assert log.log_end_offset == 0 and log.size == 0


def test_log_rolls_when_segment_bytes_would_be_exceeded(make_log) -> None:
    log = make_log(small_config(segment_bytes=500))
    size = read_header(records(1)).size
    for _ in range(10):
        log.append_as_leader(records(1))
    per_segment = 500 // size
    assert [s.base_offset for s in log.log_segments] == list(range(0, 10, per_segment))
    assert all(s.size <= 500 for s in log.log_segments)


def test_log_rolls_when_segment_ms_passes(make_log, clock: FakeClock) -> None:
    log = make_log(small_config(segment_ms=1_000))
    log.append_as_leader(records(1, timestamp=clock.now))
    clock.advance(999)
    log.append_as_leader(records(1, timestamp=clock.now))
    assert log.number_of_segments == 1
    clock.advance(2)
    log.append_as_leader(records(1, timestamp=clock.now))
    assert [s.base_offset for s in log.log_segments] == [0, 2]


def test_log_rolls_when_the_offset_index_is_full(make_log) -> None:
    log = make_log(small_config(segment_bytes=1 << 20, segment_index_bytes=8 * 3, index_interval_bytes=1))
    for _ in range(8):
        log.append_as_leader(records(1))
    assert log.number_of_segments > 1
    assert all(s.offset_index.entries <= 3 for s in log.log_segments)


def test_read_continues_across_segments_within_max_length(make_log) -> None:
    size = read_header(records(1)).size
    log = make_log(small_config(segment_bytes=2 * size + 10))
    for _ in range(9):
        log.append_as_leader(records(1))
    assert log.number_of_segments == 5
    info = log.read(1, 3 * size)
    assert fetched_offsets(info) == [1, 2, 3]
    assert info.size == 3 * size and len(info.records) == 2
    assert fetched_offsets(log.read(0, 1 << 20)) == list(range(9))


def test_read_returns_one_whole_batch_larger_than_max_length_with_min_one_message(make_log) -> None:
    log = make_log()
    log.append_as_leader(records(3, size=200))
    assert fetched_offsets(log.read(0, 10, min_one_message=True)) == [0]
    assert log.read(0, 10, min_one_message=False).size == 10


def test_read_stops_before_max_offset(make_log) -> None:
    log = make_log()
    for _ in range(5):
        log.append_as_leader(records(2))
    assert fetched_offsets(log.read(0, 1 << 20, max_offset=6)) == [0, 2, 4]
    assert log.read(6, 1 << 20, max_offset=6).size == 0


def test_read_at_log_end_is_empty_and_outside_the_log_is_out_of_range(make_log) -> None:
    log = make_log()
    log.append_as_leader(records(2))
    assert log.read(2, 1000).size == 0
    with pytest.raises(OffsetOutOfRangeException):
        log.read(3, 1000)
    log.high_watermark = 2
    log.maybe_increment_log_start_offset(1)
    with pytest.raises(OffsetOutOfRangeException):
        log.read(0, 1000)


def test_truncate_to_removes_later_segments_and_batches(make_log) -> None:
    log = make_log(small_config(segment_bytes=300))
    for _ in range(9):
        log.append_as_leader(records(1))
    log.high_watermark = 9
    assert log.truncate_to(3)
    assert log.log_end_offset == 3 and log.high_watermark == 3
    assert fetched_offsets(log.read(0, 1 << 20)) == [0, 1, 2]
    assert log.append_as_leader(records(1)).first_offset == 3
    assert not log.truncate_to(10)


def test_only_a_truncation_below_the_active_segment_pauses_the_cleaner(make_log) -> None:
    """Kafka's LogManager.truncateTo: the cleaner works below the active segment only."""
    log = make_log(small_config(segment_bytes=300))
    for _ in range(9):
        log.append_as_leader(records(1))
    active_base = log.active_segment.base_offset
    assert 0 < active_base < 8
    pauses: list[int] = []

    @contextlib.contextmanager
    def pause(offset: int) -> Iterator[None]:
        pauses.append(offset)
        yield

    log.cleaning_pause = pause
    assert not log.truncate_to(9)  # at the end: nothing to do, nothing paused
    assert log.truncate_to(8)  # within the active segment
    assert pauses == []
    assert log.truncate_to(active_base - 1)  # into an older segment: the cleaner pauses first
    assert pauses == [active_base - 1]
    assert log.log_end_offset == active_base - 1


def test_truncate_fully_and_start_at_empties_the_log(make_log, tmp_path) -> None:
    log = make_log()
    log.append_as_leader(records(5))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.number_of_segments) == (100, 100, 1)
    assert log.append_as_leader(records(1)).first_offset == 100


def test_fetch_offset_by_timestamp_and_special_targets(make_log) -> None:
    log = make_log(small_config(segment_bytes=300))
    for i in range(6):
        log.append_as_leader(records(1, timestamp=1_000 + 100 * i))
    assert log.fetch_offset_by_timestamp(1_250) == TimestampAndOffset(1_300, 3, 0)
    assert log.fetch_offset_by_timestamp(1_000).offset == 0
    assert log.fetch_offset_by_timestamp(9_999) is None
    assert log.fetch_offset_by_timestamp(-2).offset == 0
    assert log.fetch_offset_by_timestamp(-1).offset == 6
    assert (log.fetch_offset_by_timestamp(-3).timestamp, log.fetch_offset_by_timestamp(-3).offset) == (
        1_500,
        5,
    )


def test_flush_moves_the_recovery_point(make_log) -> None:
    log = make_log(small_config(segment_bytes=300))
    for _ in range(4):
        log.append_as_leader(records(1))
    log.flush()
    assert log.recovery_point == 4 and log.unflushed_messages == 0


def test_flush_messages_flushes_during_append(make_log) -> None:
    log = make_log(small_config(flush_messages=3))
    log.append_as_leader(records(2))
    assert log.recovery_point == 0
    log.append_as_leader(records(1))
    assert log.recovery_point == 3


def test_follower_append_keeps_the_leaders_offsets(make_log, tmp_path, clock: FakeClock) -> None:
    leader = Log(str(tmp_path / "leader-0"), small_config(), time_ms=clock)
    for _ in range(3):
        leader.append_as_leader(records(2), leader_epoch=7)
    data = region_bytes(leader.read(2, 1 << 20).records)
    follower = make_log()
    follower.truncate_fully_and_start_at(2)
    info = follower.append_as_follower(data)
    assert (info.first_offset, info.last_offset) == (2, 5)
    assert region_bytes(follower.read(2, 1 << 20).records) == data
    with pytest.raises(UnexpectedAppendOffsetException):
        follower.append_as_follower(data)
    leader.close()


def test_follower_append_refuses_offsets_going_backwards(make_log) -> None:
    from kafkapy.protocol.record_batch import set_base_offset

    a, b = records(2), records(2)
    set_base_offset(a, 0, 10, 0)
    set_base_offset(b, 0, 5, 0)
    with pytest.raises(OffsetsOutOfOrderException):
        make_log().append_as_follower(a + b)


def test_reopened_log_keeps_offsets_and_data(make_log, tmp_path, clock: FakeClock) -> None:
    log = make_log(small_config(segment_bytes=300))
    for _ in range(7):
        log.append_as_leader(records(1))
    log.flush()
    log.close()
    again = Log(
        str(tmp_path / "topic-0"), small_config(segment_bytes=300), 7, time_ms=clock, had_clean_shutdown=True
    )
    assert again.log_end_offset == 7 and again.number_of_segments == 3
    assert [
        h.base_offset for _, h in iter_batches(memoryview(region_bytes(again.read(0, 1 << 20).records)))
    ] == list(range(7))
    assert again.append_as_leader(records(1)).first_offset == 7
    again.close()
