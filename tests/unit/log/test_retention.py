from __future__ import annotations

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.protocol.errors import OffsetOutOfRangeException
from kafkapy.protocol.record_batch import read_header
from kafkapy.server.log.log import Log

SIZE = read_header(records(1)).size


def filled_log(tmp_path, clock: FakeClock, n: int = 8, **config: object) -> Log:
    """`n` single-record batches, two per segment, timestamps 1000, 1100, ..."""
    log = Log(str(tmp_path / "t-0"), small_config(segment_bytes=2 * SIZE + 10, **config), time_ms=clock)
    for i in range(n):
        log.append_as_leader(records(1, timestamp=1_000 + 100 * i))
    log.high_watermark = log.log_end_offset
    return log


def test_retention_ms_deletes_segments_whose_largest_timestamp_is_too_old(tmp_path, clock: FakeClock) -> None:
    clock.now = 1_100 + 1_001
    log = filled_log(tmp_path, clock, retention_ms=1_000)
    assert log.delete_old_segments() == 1  # [1000, 1100] is more than 1000 ms old; [1200, 1300] is not
    assert log.log_start_offset == 2 and [s.base_offset for s in log.log_segments] == [2, 4, 6]
    log.close()


def test_retention_bytes_deletes_oldest_segments_down_to_the_limit(tmp_path, clock: FakeClock) -> None:
    log = filled_log(tmp_path, clock, retention_bytes=5 * SIZE, retention_ms=-1)
    assert log.delete_old_segments() == 1
    assert log.size == 6 * SIZE and log.log_start_offset == 2
    log.close()


def test_retention_never_passes_the_high_watermark(tmp_path, clock: FakeClock) -> None:
    clock.now = 10**9
    log = filled_log(tmp_path, clock, retention_ms=1)
    log.high_watermark = 3
    assert log.delete_old_segments() == 1  # only [0, 2) lies wholly below the high watermark
    assert log.log_start_offset == 2
    log.close()


def test_retention_of_every_segment_rolls_a_new_empty_active_segment(tmp_path, clock: FakeClock) -> None:
    clock.now = 10**9
    log = filled_log(tmp_path, clock, retention_ms=1)
    assert log.delete_old_segments() == 4
    assert [s.base_offset for s in log.log_segments] == [8]
    assert log.log_start_offset == log.log_end_offset == 8
    assert log.append_as_leader(records(1)).first_offset == 8
    log.close()


def test_compacted_topics_are_not_deleted_by_time_or_size(tmp_path, clock: FakeClock) -> None:
    clock.now = 10**9
    log = filled_log(tmp_path, clock, retention_ms=1, retention_bytes=1, cleanup_policy=("compact",))
    assert log.delete_old_segments() == 0
    log.close()


def test_log_start_offset_deletes_segments_wholly_below_it(tmp_path, clock: FakeClock) -> None:
    log = filled_log(tmp_path, clock, cleanup_policy=("compact",))
    assert log.maybe_increment_log_start_offset(5)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.log_segments] == [4, 6]
    assert log.log_start_offset == 5
    log.close()


def test_log_start_offset_may_not_pass_the_high_watermark(tmp_path, clock: FakeClock) -> None:
    log = filled_log(tmp_path, clock)
    log.high_watermark = 4
    with pytest.raises(OffsetOutOfRangeException):
        log.maybe_increment_log_start_offset(5)
    assert not log.maybe_increment_log_start_offset(0)
    log.close()
