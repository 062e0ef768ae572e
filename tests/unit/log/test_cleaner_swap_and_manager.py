"""Crash safety of the swap (a `.swap` file completed at load), the cleaner threads under a
LogManager (cleaner-offset-checkpoint, log-cleaner summary) and aborts on truncation/deletion."""

from __future__ import annotations

import logging
import os
import shutil
import time

import pytest
from cleaner_helpers import all_records, keyed, latest_by_key, make_cleaner
from log_helpers import small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.cleaner.cleaner import LogToClean
from kafkapy.server.log.cleaner.cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from kafkapy.server.log.cleaner.log_cleaner import CleanerConfig
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager
from kafkapy.server.log.offset_checkpoint import OffsetCheckpointFile
from kafkapy.server.log.segment_swap import CLEANED_SUFFIX, SWAP_SUFFIX, change_file_suffixes


def compact_config(**overrides: object) -> LogConfig:
    return small_config(cleanup_policy=("compact",), **overrides)


def fill(log: Log, rounds: int, keys: int = 10) -> None:
    for r in range(rounds):
        for k in range(keys):
            log.append_as_leader(keyed([(b"k%d" % k, b"v%d-%d" % (k, r))]))


class _CrashAfterSwapRename(Exception):
    pass


@pytest.mark.timeout(30)
@pytest.mark.parametrize("crash_point", ["after .swap rename", "after old segments deleted", "before .swap"])
def test_an_interrupted_swap_is_completed_or_undone_at_load(tmp_path, crash_point: str) -> None:
    log = Log(str(tmp_path / "t-0"), compact_config())
    crashed_dir = str(tmp_path / "crashed" / "t-0")
    fill(log, 20)
    log.roll()
    expected_latest = latest_by_key(all_records(log))
    offsets_all = [r.offset for r in all_records(log)]

    def crashing_replace(new, old, sizes) -> None:  # noqa: ANN001 - Log.replace_segments' signature
        # What replace_segments does, stopped where a kill -9 could stop it.
        if crash_point != "before .swap":
            change_file_suffixes(new, CLEANED_SUFFIX, SWAP_SUFFIX)
        if crash_point == "after old segments deleted":
            for s in old:
                for f in (s.log, s.offset_index, s.time_index):
                    f.rename_to(f.path + ".deleted")
            for s in old[1:]:
                os.unlink(s.log.path)
        new.flush()
        shutil.copytree(log.dir, crashed_dir)  # what a kill -9 here leaves on disk
        raise _CrashAfterSwapRename

    log.replace_segments = crashing_replace  # type: ignore[method-assign]
    log.high_watermark = log.log_end_offset
    cleanable = LogToClean(log, 0, log.active_segment.base_offset, 0, log.size)
    with pytest.raises(_CrashAfterSwapRename):
        make_cleaner().clean(cleanable)
    log.close()
    names = os.listdir(crashed_dir)
    assert any(n.endswith(SWAP_SUFFIX if crash_point != "before .swap" else CLEANED_SUFFIX) for n in names)
    reopened = Log(crashed_dir, compact_config(), had_clean_shutdown=False)
    try:
        names = os.listdir(reopened.dir)
        assert not any(n.endswith((SWAP_SUFFIX, CLEANED_SUFFIX, ".deleted")) for n in names)
        records = all_records(reopened)
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets))  # nothing duplicated
        assert latest_by_key(records) == expected_latest  # nothing lost
        if crash_point == "before .swap":
            assert offsets == offsets_all  # undone: the old segments are intact
        else:
            assert len(offsets) < len(offsets_all)  # completed: the cleaned segment is in place
        assert reopened.log_end_offset == offsets_all[-1] + 1
    finally:
        reopened.close()


def _wait_for(predicate, timeout_s: float = 20.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def manager(tmp_path):
    lm = LogManager(
        [str(tmp_path / "logs")], compact_config(min_cleanable_dirty_ratio=0.01),
        cleaner_config=CleanerConfig(backoff_ms=50, dedupe_buffer_size=1 << 20),
    )  # fmt: skip
    lm.startup()
    yield lm
    lm.shutdown()


@pytest.mark.timeout(60)
def test_cleaner_threads_clean_compacted_logs_and_checkpoint_progress(manager: LogManager, caplog) -> None:
    caplog.set_level(logging.INFO, logger="kafkapy.log.LogCleaner")
    tp = TopicPartition("t", 0)
    log = manager.get_or_create_log(tp)
    other = manager.get_or_create_log(TopicPartition("d", 0), small_config())  # delete policy: never cleaned
    fill(log, 20)
    fill(other, 20)
    other_size = other.size
    log.high_watermark = log.log_end_offset
    other.high_watermark = other.log_end_offset
    expected = latest_by_key(all_records(log))
    cleaner = manager.cleaner
    assert cleaner is not None
    cleaner.wake()
    assert _wait_for(lambda: cleaner.cleanings >= 1)
    checkpoint = OffsetCheckpointFile(os.path.join(manager.log_dirs[0], CLEANER_OFFSET_CHECKPOINT)).read()
    assert checkpoint == {tp: log.active_segment.base_offset}
    assert latest_by_key(all_records(log)) == expected
    assert other.size == other_size
    summary = [
        r.getMessage() for r in caplog.records if "Log cleaner thread 0 cleaned log t-0" in r.getMessage()
    ]
    assert summary and "dirty section = [0, " in summary[0] and "size reduction" in summary[0]
    assert any(r.getMessage() == "Cleaner 0: Beginning cleaning of log t-0." for r in caplog.records)


@pytest.mark.timeout(60)
def test_truncation_aborts_cleaning_and_moves_the_checkpoint_back(manager: LogManager) -> None:
    tp = TopicPartition("t", 0)
    log = manager.get_or_create_log(tp)
    fill(log, 20)
    log.high_watermark = log.log_end_offset
    cleaner = manager.cleaner
    assert cleaner is not None
    cleaner.wake()
    assert _wait_for(lambda: cleaner.cleanings >= 1)
    path = os.path.join(manager.log_dirs[0], CLEANER_OFFSET_CHECKPOINT)
    log.truncate_to(50)
    assert OffsetCheckpointFile(path).read()[tp] <= 50
    offsets = [r.offset for r in all_records(log)]
    assert offsets == sorted(set(offsets)) and log.log_end_offset == 50
    # Cleaning resumes after the truncation.
    assert cleaner.manager._states.get(tp) is None or cleaner.manager._states[tp].name != "LogCleaningPaused"


@pytest.mark.timeout(60)
def test_deleting_a_log_aborts_its_cleaning_and_forgets_its_checkpoint(manager: LogManager) -> None:
    tp = TopicPartition("t", 0)
    log = manager.get_or_create_log(tp)
    fill(log, 20)
    log.high_watermark = log.log_end_offset
    cleaner = manager.cleaner
    assert cleaner is not None
    cleaner.wake()
    assert _wait_for(lambda: cleaner.cleanings >= 1)
    manager.delete_log(tp)
    path = os.path.join(manager.log_dirs[0], CLEANER_OFFSET_CHECKPOINT)
    assert tp not in OffsetCheckpointFile(path).read()
    assert tp not in cleaner.manager._states
