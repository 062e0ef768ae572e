"""The cleaner's rules on a real Log: latest value kept, offsets preserved, tombstones after
delete.retention.ms, the active segment untouched, producer state intact, compressed batches."""

from __future__ import annotations

import os

import pytest
from cleaner_helpers import all_records, clean_once, keyed, latest_by_key, make_cleaner, set_mtime
from log_helpers import FakeClock, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import InvalidRecordException
from kafkapy.protocol.record_batch import CompressionType
from kafkapy.protocol.record_codec import compress_batch
from kafkapy.server.log.cleaner.cleaner import CleanerStats
from kafkapy.server.log.cleaner.cleaner_manager import LogCleanerManager
from kafkapy.server.log.cleaner.segment_groups import group_segments_by_size
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.segment_swap import SegmentsChangedError


def compact_config(**overrides: object) -> LogConfig:
    return small_config(**{"cleanup_policy": ("compact",), **overrides})


@pytest.fixture
def make_log(tmp_path, clock: FakeClock):
    opened: list[Log] = []

    def make(config: LogConfig | None = None, **kwargs: object) -> Log:
        log = Log(str(tmp_path / "t-0"), config or compact_config(), time_ms=clock, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def fill(log: Log, rounds: int, keys: int = 10) -> None:
    for r in range(rounds):
        for k in range(keys):
            log.append_as_leader(keyed([(b"k%d" % k, b"v%d-%d" % (k, r))]))


@pytest.mark.timeout(30)
def test_cleaning_keeps_each_keys_latest_value_at_its_offset(make_log) -> None:
    log = make_log()
    fill(log, 20)
    before = latest_by_key(all_records(log))
    active_base, active_size = log.active_segment.base_offset, log.active_segment.size
    segments_before, size_before = log.number_of_segments, log.size
    end, stats = clean_once(log)
    assert end == active_base
    after = all_records(log)
    offsets = [r.offset for r in after]
    assert offsets == sorted(set(offsets))  # strictly increasing: nothing duplicated
    assert latest_by_key(after) == before  # same latest value at the same offset
    cleaned_part = [r for r in after if r.offset < active_base]
    assert len({r.key for r in cleaned_part}) == len(cleaned_part)  # one record per key left
    assert log.active_segment.base_offset == active_base and log.active_segment.size == active_size
    assert log.size < size_before
    assert stats.messages_read == active_base and stats.messages_written == len(cleaned_part)
    # Full segments are rewritten one by one; the next cleaning merges the small cleaned ones.
    fill(log, 2)
    log.roll()
    clean_once(log, first_dirty=end)
    assert log.number_of_segments < segments_before
    offsets = [r.offset for r in all_records(log)]
    # Reads and a reload see the same log.
    log.close()
    reopened = Log(log.dir, compact_config())
    try:
        assert [r.offset for r in all_records(reopened)] == offsets
        assert reopened.log_end_offset == log.log_end_offset
    finally:
        reopened.close()


@pytest.mark.timeout(30)
def test_tombstones_stay_until_delete_retention_then_go(make_log) -> None:
    log = make_log(compact_config(delete_retention_ms=1000))
    fill(log, 5)
    log.append_as_leader(keyed([(b"k3", None)]))  # a tombstone
    fill(log, 10, keys=2)  # later data, so the tombstone leaves the active segment
    log.roll()
    clean_once(log)
    assert latest_by_key(all_records(log))[b"k3"][1] is None  # kept: the horizon has not passed
    # The tombstone's segment gets older than the last cleaned segment by more than
    # delete.retention.ms: the next cleaning drops it, and k3 is gone.
    segments = log.log_segments
    for s in segments[:-1]:
        set_mtime(s, 1_000_000)
    set_mtime(segments[-2], 1_000_000 + 5000)
    fill(log, 2, keys=2)
    log.roll()
    clean_once(log, first_dirty=segments[-1].base_offset)
    keys = {r.key for r in all_records(log)}
    assert b"k3" not in keys and b"k4" in keys


@pytest.mark.timeout(30)
def test_min_compaction_lag_keeps_recent_segments_dirty(make_log, clock: FakeClock) -> None:
    log = make_log(compact_config(min_compaction_lag_ms=60_000))
    for r in range(10):
        for k in range(10):
            log.append_as_leader(
                keyed([(b"k%d" % k, b"v")], timestamp=clock.now - 120_000 if r < 5 else clock.now)
            )
    log.high_watermark = log.log_end_offset
    manager = LogCleanerManager([], lambda: {}, clock)
    first_dirty, uncleanable, _ = manager.cleanable_offsets(log, None, clock.now)
    recent = next(s for s in log.log_segments if s.largest_timestamp > clock.now - 60_000)
    assert first_dirty == 0 and uncleanable == recent.base_offset < log.active_segment.base_offset


@pytest.mark.timeout(30)
def test_high_watermark_bounds_the_dirty_section(make_log, clock: FakeClock) -> None:
    log = make_log()
    fill(log, 20)
    log.high_watermark = 37
    _, uncleanable, _ = LogCleanerManager([], lambda: {}, clock).cleanable_offsets(log, None, clock.now)
    assert uncleanable == 37


@pytest.mark.timeout(30)
def test_last_batch_of_a_producer_survives_as_an_empty_batch(make_log) -> None:
    log = make_log()
    log.append_as_leader(keyed([(b"a", b"1")], producer_id=7, producer_epoch=2, base_sequence=0))
    fill(log, 10, keys=3)
    log.append_as_leader(keyed([(b"a", b"2")]))  # supersedes the producer's only record
    fill(log, 10, keys=3)
    log.roll()
    entry_before = log.producer_state.last_entry(7)
    clean_once(log)
    assert b"1" not in {r.value for r in all_records(log)}
    headers = [h for s in log.log_segments for _, h in s.log.batches_from(0) if h.producer_id == 7]
    assert [(h.base_offset, h.records_count, h.producer_epoch, h.base_sequence) for h in headers] == [
        (0, 0, 2, 0)
    ]
    log.close()
    reopened = Log(log.dir, compact_config())  # producer state rebuilt from the cleaned log
    try:
        entry = reopened.producer_state.last_entry(7)
        assert entry is not None and entry_before is not None
        assert (entry.producer_epoch, entry.last_seq, entry.last_offset) == (
            entry_before.producer_epoch, entry_before.last_seq, entry_before.last_offset,
        )  # fmt: skip
    finally:
        reopened.close()


@pytest.mark.timeout(30)
def test_compressed_batches_are_filtered_and_recompressed(make_log) -> None:
    log = make_log(compact_config(segment_bytes=4096))
    for r in range(6):
        batch = keyed([(b"k%d" % k, b"value-%d-%d" % (k, r)) for k in range(5)])
        log.append_as_leader(compress_batch(batch, CompressionType.GZIP))
    log.append_as_leader(compress_batch(keyed([(b"k1", b"last"), (b"k9", b"x")]), CompressionType.GZIP))
    log.roll()
    before = latest_by_key(all_records(log))
    clean_once(log)
    after = all_records(log)
    assert latest_by_key(after) == before and len(after) == 6
    codecs = {h.compression for s in log.log_segments for _, h in s.log.batches_from(0)}
    assert codecs == {CompressionType.GZIP}


@pytest.mark.timeout(30)
def test_compacted_topic_refuses_records_without_key(make_log) -> None:
    log = make_log()
    with pytest.raises(InvalidRecordException, match="Compacted topic cannot accept message without key"):
        log.append_as_leader(keyed([(None, b"v")]))


@pytest.mark.timeout(30)
def test_segments_are_grouped_to_fit_one_segment_and_its_index(make_log) -> None:
    log = make_log()
    fill(log, 30)
    segments = log.log_segments[:-1]
    groups = group_segments_by_size(segments, 2048, 10_000_000, log.active_segment.base_offset)
    assert [s for g in groups for s in g] == segments
    assert all(sum(s.size for s in g) <= 2048 or len(g) == 1 for g in groups)
    assert len(groups) < len(segments)
    by_index = group_segments_by_size(segments, 1 << 30, segments[0].offset_index.size_in_bytes, 1 << 40)
    assert all(len(g) == 1 for g in by_index)
    by_offset = group_segments_by_size(segments, 1 << 30, 1 << 30, segments[0].base_offset + (1 << 31) + 10)
    assert len(by_offset) == 1 or len(by_offset[-1]) >= 1


@pytest.mark.timeout(30)
def test_a_full_offset_map_cleans_what_it_covers_and_reports_where_it_stopped(make_log) -> None:
    log = make_log()
    for k in range(60):
        log.append_as_leader(keyed([(b"k%d" % k, b"v")]))
    fill(log, 3)
    log.roll()
    cleaner = make_cleaner(memory=40 * 24)  # 36 keys at load factor 0.9
    end, _ = clean_once(log, cleaner=cleaner)
    assert 0 < end < log.active_segment.base_offset
    assert latest_by_key(all_records(log))[b"k0"][1] == b"v0-2"


@pytest.mark.timeout(30)
def test_an_empty_producer_batch_goes_once_the_producer_wrote_again(make_log) -> None:
    log = make_log()
    log.append_as_leader(keyed([(b"a", b"1")], producer_id=7, producer_epoch=2, base_sequence=0))
    fill(log, 10, keys=3)
    log.append_as_leader(keyed([(b"a", b"2")]))
    fill(log, 10, keys=3)
    log.roll()
    end, _ = clean_once(log)
    log.append_as_leader(keyed([(b"b", b"1")], producer_id=7, producer_epoch=2, base_sequence=1))
    fill(log, 10, keys=3)
    log.roll()
    clean_once(log, first_dirty=end)
    headers = [h for s in log.log_segments for _, h in s.log.batches_from(0) if h.producer_id == 7]
    assert [(h.records_count, h.base_sequence) for h in headers] == [(1, 1)]


@pytest.mark.timeout(30)
def test_a_swap_is_refused_when_retention_or_truncation_changed_the_segments(make_log) -> None:
    log = make_log(compact_config(cleanup_policy=("compact", "delete"), retention_ms=-1))
    fill(log, 20)
    log.high_watermark = log.log_end_offset
    cleaner = make_cleaner()
    stats = CleanerStats()
    end = cleaner.build_offset_map(log, 0, log.active_segment.base_offset, stats)
    group = log.segments_in_range(0, end)[:2]
    log.maybe_increment_log_start_offset(group[1].base_offset)
    log.delete_old_segments()  # retention removes the first segment meanwhile
    with pytest.raises(SegmentsChangedError):
        cleaner.clean_segments(log, group, 0, stats)
    assert not [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap"))]
    offsets = [r.offset for r in all_records(log)]
    assert offsets == sorted(set(offsets)) and offsets[0] == group[1].base_offset


@pytest.mark.timeout(30)
def test_compact_delete_logs_are_chosen_and_delete_logs_are_not(make_log, clock: FakeClock) -> None:
    log = make_log(compact_config(cleanup_policy=("compact", "delete"), min_cleanable_dirty_ratio=0.1))
    fill(log, 20)
    log.high_watermark = log.log_end_offset
    tp = TopicPartition("t", 0)
    manager = LogCleanerManager([os.path.dirname(log.dir)], lambda: {tp: log}, clock)
    chosen = manager.grab_filthiest_compacted_log()
    assert chosen is not None and chosen.log is log and chosen.cleanable_ratio == 1.0
    assert manager.grab_filthiest_compacted_log() is None  # in progress: not chosen twice
    manager.done_cleaning(tp, os.path.dirname(log.dir), None)
    log.update_config(small_config())
    assert manager.grab_filthiest_compacted_log() is None
