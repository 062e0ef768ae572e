"""LogManager.shutdown makes each log dir durable with one syncfs instead of a sync per file.

The invariants: no file of a partition is synced on its own at shutdown (the `.log`, the index
mappings, the producer snapshot and the epoch checkpoint are only written); each live dir's
filesystem is synced exactly once, through the dir's `.lock` descriptor, after every log of it
is closed and before its checkpoints and clean-shutdown marker are written; a dir whose syncfs
fails gets neither and is recovered at the next start; a snapshot torn by a crash before the
syncfs is rebuilt from the log. The runtime flush keeps its fsync per file.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log import durability
from kafkapy.server.log import log_manager as log_manager_module
from kafkapy.server.log.durability import DEFERRED, FsyncEach, sync_filesystem
from kafkapy.server.log.log_manager import CLEAN_SHUTDOWN_FILE, LOCK_FILE, LogManager
from kafkapy.server.log.offset_checkpoint import RECOVERY_POINT_CHECKPOINT
from kafkapy.server.log.producer_state_snapshot import list_snapshot_offsets, snapshot_path

CONFIG = small_config(segment_bytes=100_000, retention_ms=-1)
LOGS_PER_DIR = 6


@pytest.fixture
def dirs(tmp_path) -> list[str]:
    return [str(tmp_path / "a"), str(tmp_path / "b")]


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def syncfs_failing_in(failing: str, synced: list[str]) -> Callable[[int], None]:
    """sync_filesystem that fails with EIO for the dir `failing`; records each dir it is called for."""

    def syncfs(fd: int) -> None:
        synced.append(os.path.dirname(_fd_path(fd)))
        if _fd_path(fd).startswith(failing + os.sep):
            raise OSError(errno.EIO, "syncfs: Input/output error")
        sync_filesystem(fd)

    return syncfs


def loaded_manager(dirs: list[str], clock: FakeClock) -> LogManager:
    """LOGS_PER_DIR logs in each dir, each holding one idempotent producer's batch, their new
    leader epoch not yet checkpointed (a scheduler that never runs: close must write it)."""
    manager = LogManager(dirs, CONFIG, time_ms=clock, scheduler=lambda task: None)
    manager.startup()
    for p in range(LOGS_PER_DIR * len(dirs)):
        log = manager.get_or_create_log(TopicPartition("t", p))
        log.maybe_assign_epoch_start_offset(3, 0)
        log.append_as_leader(
            records(2, producer_id=100 + p, producer_epoch=0, base_sequence=0), leader_epoch=3
        )
    return manager


def test_shutdown_syncs_each_dir_once_and_no_partition_file(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = loaded_manager(dirs, clock)
    fsynced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsynced.append(_fd_path(fd))
        real_fsync(fd)

    per_file: list[str] = []
    for name in ("sync_file", "sync_mapping", "sync_dir"):
        monkeypatch.setattr(FsyncEach, name, lambda self, arg, name=name: per_file.append(name))
    synced: list[tuple[str, bool, bool, bool]] = []

    def syncfs(fd: int) -> None:
        d = os.path.dirname(_fd_path(fd))  # the dir's `.lock`, opened at start-up
        logs = [log for log in manager.all_logs() if os.path.dirname(log.dir) == d]
        synced.append(
            (
                _fd_path(fd),
                all(log._closed for log in logs),
                all(list_snapshot_offsets(log.dir) == [2] for log in logs),
                os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
                or os.path.exists(os.path.join(d, RECOVERY_POINT_CHECKPOINT)),
            )
        )
        sync_filesystem(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs)
    manager.shutdown()

    # One syncfs per dir, through its lock, once its logs are closed (snapshots written) and
    # before anything claims them durable.
    assert sorted(synced) == [(os.path.join(d, LOCK_FILE), True, True, False) for d in dirs]
    assert per_file == []
    # The only fsyncs left: the three checkpoint files of each dir (temp file, then the dir).
    partition_files = [p for p in fsynced if os.path.basename(os.path.dirname(p)).startswith("t-")]
    assert partition_files == []
    assert len(fsynced) == 2 * 3 * len(dirs)
    for d in dirs:
        assert os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
        assert open(os.path.join(d, RECOVERY_POINT_CHECKPOINT)).read().endswith(" 2\n")


def test_a_clean_shutdown_without_per_file_syncs_restarts_without_recovery(
    dirs: list[str], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    loaded_manager(dirs, clock).shutdown()
    caplog.set_level(logging.INFO)
    again = LogManager(dirs, CONFIG, time_ms=clock)
    again.startup()
    assert caplog.text.count("Skipping recovery") == 2 and "Attempting recovery" not in caplog.text
    for p in range(LOGS_PER_DIR * len(dirs)):
        log = again.get_log(TopicPartition("t", p))
        assert (log.log_end_offset, log.recovery_point, log.latest_epoch) == (2, 2, 3)
        assert log.producer_state.last_entry(100 + p).last_seq == 1  # from the snapshot
    again.shutdown()


def test_a_failed_syncfs_leaves_that_dir_offline_without_checkpoints_or_marker(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manager = loaded_manager(dirs, clock)
    failing, healthy = dirs
    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs_failing_in(failing, []))
    with caplog.at_level(logging.ERROR):
        manager.shutdown()
    assert f"Error while flushing logs to disk in dir {failing}" in caplog.text
    assert manager.failure_channel.offline_dirs == {failing}
    assert not os.path.exists(os.path.join(failing, CLEAN_SHUTDOWN_FILE))
    assert not os.path.exists(os.path.join(failing, RECOVERY_POINT_CHECKPOINT))
    assert os.path.exists(os.path.join(healthy, CLEAN_SHUTDOWN_FILE))
    assert open(os.path.join(healthy, RECOVERY_POINT_CHECKPOINT)).read().endswith(" 2\n")

    monkeypatch.undo()
    caplog.clear()
    caplog.set_level(logging.INFO)
    again = LogManager(dirs, CONFIG, time_ms=clock)
    again.startup()
    assert f"Attempting recovery for all logs in {failing}" in caplog.text
    assert f"Skipping recovery for all logs in {healthy}" in caplog.text
    assert all(again.get_log(TopicPartition("t", p)).log_end_offset == 2 for p in range(LOGS_PER_DIR * 2))
    again.shutdown()


@pytest.mark.parametrize(
    "torn", [b"", b"\x00" * 30, "half"], ids=["empty", "zeros-of-the-right-length", "cut-in-half"]
)
def test_a_snapshot_torn_by_a_crash_before_the_syncfs_is_rebuilt_from_the_log(
    tmp_path, clock: FakeClock, torn: bytes | str, caplog: pytest.LogCaptureFixture
) -> None:
    """What a crash between the deferred writes and the syncfs can leave: the snapshot renamed
    into place with none or part of its bytes, and no clean-shutdown marker."""
    log_dir = str(tmp_path / "logs")
    manager = LogManager([log_dir], CONFIG, time_ms=clock)
    manager.startup()
    tp = TopicPartition("t", 0)
    log = manager.get_or_create_log(tp)
    for seq in range(0, 6, 2):
        log.append_as_leader(records(2, producer_id=7, producer_epoch=1, base_sequence=seq))
    before = log.producer_state.last_entry(7)
    log.flush(syncer=DEFERRED)
    log.close(syncer=DEFERRED)
    path = snapshot_path(log.dir, 6)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2] if torn == "half" else torn)  # type: ignore[arg-type]
    manager._release_locks()  # the crash: no checkpoints, no marker
    caplog.set_level(logging.INFO)
    again = LogManager([log_dir], CONFIG, time_ms=clock)
    again.startup()
    assert "Attempting recovery" in caplog.text
    assert f"Failed to load producer snapshot from '{path}'" in caplog.text
    reloaded = again.get_log(tp)
    assert reloaded.log_end_offset == 6
    entry = reloaded.producer_state.last_entry(7)
    assert (entry.producer_epoch, entry.last_seq, entry.last_offset) == (1, 5, 5)
    assert (entry.producer_epoch, entry.last_seq, entry.last_offset) == (
        before.producer_epoch,
        before.last_seq,
        before.last_offset,
    )
    # A retry of the last batch is still recognised as a duplicate.
    assert reloaded.append_as_leader(records(2, producer_id=7, producer_epoch=1, base_sequence=4)).duplicate
    again.shutdown()


def test_the_runtime_flush_still_fsyncs_each_file(
    tmp_path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager([str(tmp_path / "logs")], CONFIG, time_ms=clock)
    manager.startup()
    log = manager.get_or_create_log(TopicPartition("t", 0))
    log.append_as_leader(records(2, producer_id=7, producer_epoch=1, base_sequence=0))
    fsynced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsynced.append(_fd_path(fd))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log.flush()  # flush.ms / flush.messages
    assert [os.path.basename(p) for p in fsynced] == ["00000000000000000000.log"]
    fsynced.clear()
    log.roll()  # the snapshot at the roll: its file, then the directory
    names = [os.path.basename(p) for p in fsynced]
    assert names[0].startswith("00000000000000000002.snapshot.") and names[1] == "t-0"
    monkeypatch.undo()
    manager.shutdown()


def test_sync_filesystem_reports_the_kernels_error() -> None:
    assert durability._syncfs is not None  # Linux: the deferred path really syncs
    fd = os.open(".", os.O_RDONLY)
    try:
        sync_filesystem(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as raised:
        sync_filesystem(-1)
    assert raised.value.errno == errno.EBADF


@pytest.mark.timeout(30)
def test_a_move_stopped_by_the_shutdown_keeps_its_future_log_covered_by_the_syncfs(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The future log is loaded as clean after a marker, so its writes must be on disk first."""
    from kafkapy.server import log_dir_mover
    from kafkapy.server.replication_quota import ReplicationQuotaManager

    monkeypatch.setattr(log_dir_mover, "ROUND_BYTES", 200)
    source, destination = dirs
    manager = LogManager(dirs, CONFIG, time_ms=clock)
    manager.startup()
    tp = TopicPartition("t", 0)
    log = manager.get_or_create_log(tp)
    assert os.path.dirname(log.dir) == source  # both empty: the first dir
    for seq in range(0, 40, 2):
        log.append_as_leader(records(2, size=100, producer_id=7, producer_epoch=0, base_sequence=seq))
    quota = ReplicationQuotaManager()
    quota.update_quota(1)  # one byte per second: the copy stops after its first round
    manager.moves.quota = quota
    manager.moves.start(tp, log, destination)
    future = manager.moves.future_logs()[tp]
    deadline = time.monotonic() + 10
    # Until the first round's epoch checkpoint is written (a runtime write, synced per file).
    while future.leader_epoch_cache.checkpoint._on_disk is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert 0 < future.log_end_offset < log.log_end_offset
    per_file: list[str] = []
    for name in ("sync_file", "sync_mapping", "sync_dir"):
        monkeypatch.setattr(FsyncEach, name, lambda self, arg, name=name: per_file.append(name))
    synced: dict[str, bool] = {}

    def syncfs(fd: int) -> None:
        synced[os.path.dirname(_fd_path(fd))] = future._closed
        sync_filesystem(fd)

    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs)
    manager.shutdown()
    assert per_file == []
    assert synced == {source: True, destination: True}
    assert [n for n in os.listdir(destination) if n.endswith("-future")]
    assert all(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE)) for d in dirs)


def test_an_early_write_back_syncs_each_live_dir_and_a_failure_takes_that_dir_offline(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What a stopping broker runs while the controller moves its leadership: one syncfs per dir,
    nothing closed or marked clean; an error counts as at shutdown (the dir's later syncfs
    through the same descriptor would not report it again)."""
    manager = loaded_manager(dirs, clock)
    failing, healthy = dirs
    synced: list[str] = []
    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs_failing_in(failing, synced))
    with caplog.at_level(logging.INFO):
        manager.write_back_early()
    assert sorted(synced) == sorted(dirs)
    assert not any(log._closed for log in manager.all_logs())
    assert f"Error while flushing logs to disk in dir {failing}" in caplog.text
    assert f"Flushed the logs in {healthy} to disk (syncfs)" in caplog.text
    for d in dirs:
        assert not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE))
    assert manager.failure_channel.offline_dirs == {failing}


def test_an_early_write_back_writes_the_end_snapshots_that_the_close_then_keeps(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manager = loaded_manager(dirs, clock)
    empty = manager.get_or_create_log(TopicPartition("empty", 0))
    per_file: list[str] = []
    for name in ("sync_file", "sync_mapping", "sync_dir"):
        monkeypatch.setattr(FsyncEach, name, lambda self, arg, name=name: per_file.append(name))
    written_before_syncfs: list[bool] = []

    def syncfs(fd: int) -> None:
        d = os.path.dirname(_fd_path(fd))
        logs = [log for log in manager.all_logs() if os.path.dirname(log.dir) == d and log is not empty]
        written_before_syncfs.append(all(list_snapshot_offsets(log.dir) == [2] for log in logs))
        sync_filesystem(fd)

    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs)
    with caplog.at_level(logging.INFO):
        manager.write_back_early()
        # The snapshots are written before each dir's syncfs, which covers them: no sync per file.
        assert written_before_syncfs == [True, True]
        assert per_file == []
        assert list_snapshot_offsets(empty.dir) == []
        manager.shutdown()
    # The close found each snapshot at its log's end and wrote none again.
    assert caplog.text.count("Wrote producer snapshot at offset 2") == LOGS_PER_DIR * len(dirs)
    again = LogManager(dirs, CONFIG, time_ms=clock)
    again.startup()
    for p in range(LOGS_PER_DIR * len(dirs)):
        assert again.get_log(TopicPartition("t", p)).producer_state.last_entry(100 + p).last_seq == 1
    again.shutdown()


def test_an_early_write_back_cut_short_leaves_the_rest_to_the_close(
    dirs: list[str], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = loaded_manager(dirs, clock)
    logs = list(manager.all_logs())
    synced: list[str] = []
    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs_failing_in("/nowhere", synced))
    written: list[str] = []
    real_write = type(logs[0]).write_end_snapshot_early

    def write_end_snapshot_early(log, **kwargs) -> None:  # the logs close after the third
        written.append(log.dir)
        real_write(log, **kwargs)
        if len(written) == 3:
            manager.cut_early_write_back()

    monkeypatch.setattr(type(logs[0]), "write_end_snapshot_early", write_end_snapshot_early)
    manager.write_back_early()
    assert len(written) == 3 and synced == []  # stopped at the next log, no syncfs either
    manager.shutdown()
    assert sorted(synced) == sorted(dirs)
    for log in logs:
        assert list_snapshot_offsets(log.dir) == [2]  # the close wrote the others
