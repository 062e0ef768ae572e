from __future__ import annotations

import gc
import logging
import os
import threading

import pytest
from log_helpers import FakeClock, fetched_offsets, records, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_batch import read_header
from kafkapy.server.log.log_manager import CLEAN_SHUTDOWN_FILE, LogDirLockedException, LogManager
from kafkapy.server.log.offset_checkpoint import CheckpointFormatError, OffsetCheckpointFile

TP = TopicPartition("my-topic", 0)
SIZE = read_header(records(1)).size
CONFIG = small_config(segment_bytes=2 * SIZE + 10, retention_ms=-1)


def start(dirs: list[str], clock: FakeClock) -> LogManager:
    manager = LogManager(dirs, CONFIG, time_ms=clock)
    manager.startup()
    return manager


def crash(manager: LogManager) -> None:
    """What a kill -9 leaves: no flush, no checkpoints, no clean shutdown marker, locks gone."""
    manager._release_locks()


@pytest.fixture
def log_dir(tmp_path) -> str:
    return str(tmp_path / "logs")


def test_checkpoint_file_uses_kafkas_text_format(tmp_path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(str(path)).write({TopicPartition("b", 1): 7, TopicPartition("a-x", 0): 42})
    assert path.read_text() == "0\n2\na-x 0 42\nb 1 7\n"
    assert OffsetCheckpointFile(str(path)).read() == {TopicPartition("a-x", 0): 42, TopicPartition("b", 1): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\na 0 1\n", "0\n1\na zero 1\n", ""])
def test_malformed_checkpoint_is_an_error_naming_the_file(tmp_path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointFormatError, match=str(path)):
        OffsetCheckpointFile(str(path)).read()


def test_a_locked_log_dir_refuses_a_second_manager(log_dir: str, clock: FakeClock) -> None:
    first = start([log_dir], clock)
    with pytest.raises(LogDirLockedException, match="Failed to acquire lock"):
        LogManager([log_dir], CONFIG)
    first.shutdown()
    start([log_dir], clock).shutdown()


def test_clean_shutdown_writes_checkpoints_and_marker_and_restart_skips_recovery(
    log_dir: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    manager = start([log_dir], clock)
    log = manager.get_or_create_log(TP)
    for _ in range(5):
        log.append_as_leader(records(1))
    log.high_watermark = 5
    manager.shutdown()
    assert os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
    assert open(os.path.join(log_dir, "recovery-point-offset-checkpoint")).read() == "0\n1\nmy-topic 0 5\n"
    assert open(os.path.join(log_dir, "replication-offset-checkpoint")).read() == "0\n1\nmy-topic 0 5\n"
    caplog.set_level(logging.INFO)
    again = start([log_dir], clock)
    assert "Skipping recovery" in caplog.text and "Recovering unflushed" not in caplog.text
    assert "Completed load of log my-topic-0" in caplog.text
    assert not os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
    log = again.get_log(TP)
    assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (5, 5, 5)
    again.shutdown()


def _filled(log_dir: str, clock: FakeClock, n: int = 6) -> LogManager:
    manager = start([log_dir], clock)
    log = manager.get_or_create_log(TP)
    for i in range(n):
        log.append_as_leader(records(1, timestamp=1_000 + i))
    return manager


def test_recovery_truncates_a_torn_final_batch(log_dir: str, clock: FakeClock, caplog) -> None:
    manager = _filled(log_dir, clock)
    active = manager.get_log(TP).active_segment
    active.log.append(memoryview(records(3))[:50])  # the crash hit mid-write
    crash(manager)
    caplog.set_level(logging.INFO)
    again = start([log_dir], clock)
    log = again.get_log(TP)
    assert "Attempting recovery" in caplog.text
    assert "Truncated 50 invalid bytes" in caplog.text
    assert log.log_end_offset == 6
    assert fetched_offsets(log.read(0, 1 << 20)) == list(range(6))
    assert log.append_as_leader(records(1)).first_offset == 6
    again.shutdown()


def test_recovery_truncates_at_the_last_valid_batch_before_a_flipped_byte(
    log_dir: str, clock: FakeClock
) -> None:
    manager = _filled(log_dir, clock, n=6)
    first = manager.get_log(TP).log_segments[0]
    os.pwrite(first.log.fd, b"\xee", SIZE + 70)  # inside the second batch (offset 1) of segment 0
    crash(manager)
    again = start([log_dir], clock)
    log = again.get_log(TP)
    assert log.log_end_offset == 1
    assert [s.base_offset for s in log.log_segments] == [0]  # the segments after the corruption are gone
    assert fetched_offsets(log.read(0, 1 << 20)) == [0]
    assert log.append_as_leader(records(1)).first_offset == 1
    again.shutdown()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_missing_index_file_is_rebuilt_after_clean_shutdown(
    log_dir: str, clock: FakeClock, suffix: str
) -> None:
    manager = _filled(log_dir, clock)
    manager.shutdown()
    os.unlink(os.path.join(log_dir, "my-topic-0", "00000000000000000002" + suffix))
    again = start([log_dir], clock)
    log = again.get_log(TP)
    segment = log.log_segments[1]
    assert segment.offset_index.entries == 1 and segment.time_index.last_entry == (1_003, 3)
    assert log.fetch_offset_by_timestamp(1_003).offset == 3
    assert fetched_offsets(log.read(3, 1 << 20)) == [3, 4, 5]
    again.shutdown()


def test_stale_recovery_point_checkpoint_recovers_from_there(log_dir: str, clock: FakeClock, caplog) -> None:
    manager = _filled(log_dir, clock)
    manager.get_log(TP).flush()
    manager.checkpoint_recovery_points()  # says 6
    OffsetCheckpointFile(os.path.join(log_dir, "recovery-point-offset-checkpoint")).write({TP: 0})
    os.pwrite(manager.get_log(TP).log_segments[1].log.fd, b"\xee", 70)
    crash(manager)
    caplog.set_level(logging.INFO)
    again = start([log_dir], clock)
    assert caplog.text.count("Recovering unflushed segment") == 2  # segments 0 and 2; 2 is cut, 4 deleted
    assert again.get_log(TP).log_end_offset == 2
    again.shutdown()


def test_segments_before_the_recovery_point_are_trusted(log_dir: str, clock: FakeClock) -> None:
    manager = _filled(log_dir, clock)
    manager.get_log(TP).flush()
    manager.checkpoint_recovery_points()
    crash(manager)
    again = start([log_dir], clock)
    assert again.get_log(TP).recovery_point == 6 and again.get_log(TP).log_end_offset == 6
    again.shutdown()


def test_delete_log_renames_then_removes_the_directory(log_dir: str, clock: FakeClock) -> None:
    manager = _filled(log_dir, clock)
    manager.delete_log(TP)
    assert manager.get_log(TP) is None
    assert [
        n for n in os.listdir(log_dir) if not n.startswith((".", "recovery", "log-start", "replication"))
    ] == []
    os.makedirs(os.path.join(log_dir, "gone-0.abc-delete"))
    manager.shutdown()
    start([log_dir], clock).shutdown()
    assert not os.path.exists(os.path.join(log_dir, "gone-0.abc-delete"))


def test_new_logs_go_to_the_dir_with_fewest_logs(tmp_path, clock: FakeClock) -> None:
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = start(dirs, clock)
    placed = [os.path.dirname(manager.get_or_create_log(TopicPartition("t", p)).dir) for p in range(4)]
    assert sorted(placed) == sorted(dirs * 2)
    manager.shutdown()


def test_update_config_reaches_the_topics_logs(log_dir: str, clock: FakeClock) -> None:
    manager = start([log_dir], clock)
    manager.get_or_create_log(TP)
    manager.update_config("my-topic", small_config(retention_ms=5))
    assert manager.get_log(TP).config.retention_ms == 5
    manager.shutdown()


def test_periodic_tasks_flush_retain_and_checkpoint(log_dir: str, clock: FakeClock) -> None:
    manager = LogManager([log_dir], small_config(segment_bytes=2 * SIZE + 10, flush_ms=1_000), time_ms=clock)
    manager.startup()
    log = manager.get_or_create_log(TP)
    for _ in range(6):
        log.append_as_leader(records(1))
    log.high_watermark = 6
    manager.flush_dirty_logs()
    assert log.recovery_point < 6
    clock.advance(1_000)
    manager.flush_dirty_logs()
    assert log.recovery_point == 6
    assert manager.cleanup_logs() == 3  # default retention.ms: week-old timestamps go, a new segment rolls
    manager.checkpoint_log_start_offsets()
    text = open(os.path.join(log_dir, "log-start-offset-checkpoint")).read()
    assert text == "0\n0\n"  # the log start offset sits on the first segment: nothing to record
    manager.shutdown()


def test_logs_of_a_dir_load_side_by_side_on_the_recovery_threads(
    log_dir: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = start([log_dir], clock)
    for p in range(4):
        manager.get_or_create_log(TopicPartition("t", p)).append_as_leader(records(1))
    manager.shutdown()
    from kafkapy.server.log import log_manager

    # Each load waits until another one is running too: with one thread this would time out.
    together = threading.Barrier(2, timeout=10)
    threads: set[str] = set()
    real_log = log_manager.Log

    def meeting_log(*args: object, **kwargs: object) -> log_manager.Log:
        threads.add(threading.current_thread().name)
        together.wait()
        return real_log(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log_manager, "Log", meeting_log)
    again = LogManager([log_dir], CONFIG, time_ms=clock, recovery_threads_per_data_dir=2)
    again.startup()
    assert len(again.all_logs()) == 4
    assert all(log.log_end_offset == 1 for log in again.all_logs())
    assert len(threads) == 2 and all(t.startswith("log-recovery-logs") for t in threads)
    again.shutdown()


def test_a_failed_load_is_raised_and_keeps_the_clean_shutdown_marker(
    log_dir: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = start([log_dir], clock)
    manager.get_or_create_log(TP).append_as_leader(records(1))
    manager.shutdown()
    from kafkapy.server.log import log_manager

    def failing_log(*args: object, **kwargs: object) -> log_manager.Log:
        raise ValueError("corrupt beyond repair")

    monkeypatch.setattr(log_manager, "Log", failing_log)
    with pytest.raises(ValueError, match="corrupt beyond repair"):
        LogManager([log_dir], CONFIG, time_ms=clock).startup()
    assert os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def test_an_io_error_loading_the_only_log_dir_takes_it_offline_and_fails_the_start(
    log_dir: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = start([log_dir], clock)
    manager.get_or_create_log(TP).append_as_leader(records(1))
    manager.shutdown()
    from kafkapy.protocol.errors import KafkaStorageException
    from kafkapy.server.log import log_manager

    def failing_log(*args: object, **kwargs: object) -> log_manager.Log:
        raise OSError("disk on fire")

    monkeypatch.setattr(log_manager, "Log", failing_log)
    again = LogManager([log_dir], CONFIG, time_ms=clock)
    with pytest.raises(KafkaStorageException, match="can be loaded"):
        again.startup()
    assert again.failure_channel.has_offline_log_dir(os.path.abspath(log_dir))
    assert os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def test_idle_producer_ids_expire_across_logs(log_dir: str, clock: FakeClock) -> None:
    manager = start([log_dir], clock)
    for p in range(2):
        log = manager.get_or_create_log(TopicPartition("t", p))
        log.append_as_leader(
            records(1, timestamp=clock.now - 1000, producer_id=p, producer_epoch=0, base_sequence=0)
        )
    assert manager.remove_expired_producers(expiration_ms=5000) == 0
    clock.advance(4000)
    assert manager.remove_expired_producers(expiration_ms=5000) == 2
    manager.shutdown()


def test_shutdown_closes_the_other_logs_when_one_fails_and_leaves_that_dir_unclean(
    log_dir: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manager = LogManager([log_dir], CONFIG, time_ms=clock, recovery_threads_per_data_dir=2)
    manager.startup()
    logs = {p: manager.get_or_create_log(TopicPartition("t", p)) for p in range(5)}
    for log in logs.values():
        log.append_as_leader(records(1))
    closing_threads: set[str] = set()
    real_close = type(logs[0]).close

    def close(log: object, **kwargs: object) -> None:
        closing_threads.add(threading.current_thread().name)
        if log is logs[3]:
            raise OSError("disk gone")
        real_close(log, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(logs[0]), "close", close)
    with caplog.at_level(logging.ERROR):
        manager.shutdown()
    assert "Error while closing log t-3" in caplog.text
    assert all(log._closed for p, log in logs.items() if p != 3)  # one failure closes no fewer
    assert not os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
    assert closing_threads and all(t.startswith("log-recovery-logs") for t in closing_threads)


def test_recovered_partitions_hold_one_descriptor_each(log_dir: str, clock: FakeClock, caplog) -> None:
    """After a crash every partition's last segment is rebuilt; its indexes must not stay mapped
    (a CPython mapping holds a descriptor), or 10k partitions exceed the open-file limit."""
    manager = start([log_dir], clock)
    tps = [TopicPartition("many", p) for p in range(20)]
    for tp in tps:
        manager.get_or_create_log(tp).append_as_leader(records(1, timestamp=1_000))
    crash(manager)
    caplog.set_level(logging.INFO)
    again = start([log_dir], clock)
    assert caplog.text.count("Recovering unflushed segment") == len(tps)
    for tp in tps:
        segment = again.get_log(tp).active_segment
        assert not segment.offset_index.is_mapped and not segment.time_index.is_mapped
    held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if _readable(fd)]
    assert sum(p.startswith(log_dir) and p.endswith((".index", ".timeindex")) for p in held) == 0
    # Still usable: a lookup and an append map them again.
    log = again.get_log(tps[0])
    log.append_as_leader(records(1, timestamp=2_000))
    assert fetched_offsets(log.read(0, 1 << 20)) == [0, 1]
    assert log.fetch_offset_by_timestamp(2_000).offset == 1
    again.shutdown()


def _readable(fd: str) -> bool:
    try:
        os.readlink(f"/proc/self/fd/{fd}")
        return True
    except OSError:
        return False


def test_logs_load_with_the_cyclic_collector_paused_and_it_is_back_after(
    log_dir: str, tmp_path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 10k-log load walked its own growing result in 8 full collections (0.74 s of 5.5 s)."""
    from kafkapy.server.log import log_manager

    manager = start([log_dir], clock)
    for p in range(3):
        manager.get_or_create_log(TopicPartition("t", p)).append_as_leader(records(1))
    manager.shutdown()
    seen: list[bool] = []
    real_log = log_manager.Log

    def watching_log(*args: object, **kwargs: object) -> log_manager.Log:
        seen.append(gc.isenabled())
        return real_log(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log_manager, "Log", watching_log)
    assert gc.isenabled()
    again = start([log_dir], clock)
    assert seen == [False, False, False]
    assert gc.isenabled()
    again.shutdown()

    # A load that fails turns it back on too; one that found it off leaves it off.
    def failing_log(*args: object, **kwargs: object) -> log_manager.Log:
        raise ValueError("corrupt beyond repair")

    monkeypatch.setattr(log_manager, "Log", failing_log)
    with pytest.raises(ValueError):
        LogManager([log_dir], CONFIG, time_ms=clock).startup()
    assert gc.isenabled()
    monkeypatch.setattr(log_manager, "Log", real_log)
    gc.disable()
    try:
        start([str(tmp_path / "other")], clock).shutdown()
        assert not gc.isenabled()
    finally:
        gc.enable()
