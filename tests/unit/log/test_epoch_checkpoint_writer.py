"""A new leader's epoch checkpoints are written in batches: each file written and renamed into
place without a sync, then one sync per log dir, and only then taken as durable.

The invariants: no checkpoint of a batch is fsynced on its own; each dir of a batch is synced
once; requests made while a batch is written go out in the same job's next round; a file whose
sync failed (or that was written again meanwhile) is not taken as durable, so the log's flush
or close writes it again with its own sync; a write error takes the log's dir offline.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log import log_manager as log_manager_module
from kafkapy.server.log.durability import FsyncEach, sync_filesystem
from kafkapy.server.log.epoch_checkpoint_writer import EpochCheckpointWriter
from kafkapy.server.log.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochCheckpointFile,
)
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_dir_failure_channel import LogDirFailureChannel
from kafkapy.server.log.log_manager import LogManager

CONFIG = small_config(segment_bytes=100_000, retention_ms=-1)


def epoch_records(n: int, epoch: int, base_offset: int) -> bytearray:
    """A leader's batch as a follower receives it: offsets and epoch set."""
    return records(n, partition_leader_epoch=epoch, base_offset=base_offset)


class Tasks:
    """A scheduler that runs nothing until told to."""

    def __init__(self) -> None:
        self.queued: list[Callable[[], None]] = []

    def __call__(self, task: Callable[[], None]) -> None:
        self.queued.append(task)

    def run(self) -> None:
        while self.queued:
            self.queued.pop(0)()


def on_disk(log: Log) -> list[EpochEntry] | None:
    return LeaderEpochCheckpointFile(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT)).read()


def durable(log: Log) -> bool:
    """Whether the log takes its checkpoint as durable (a close would not write it again)."""
    checkpoint = log.leader_epoch_cache.checkpoint
    return checkpoint._on_disk == (checkpoint.path, tuple(log.leader_epoch_cache.entries))


@pytest.fixture
def per_file_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    synced: list[str] = []
    for name in ("sync_file", "sync_dir"):
        real = getattr(FsyncEach, name)

        def record(self: FsyncEach, arg: object, name: str = name, real: object = real) -> None:
            synced.append(name)
            real(self, arg)  # type: ignore[operator]

        monkeypatch.setattr(FsyncEach, name, record)
    return synced


def make_logs(
    tmp_path: Path,
    writer: EpochCheckpointWriter,
    dirs: list[str],
    per_dir: int,
    channel: LogDirFailureChannel,
) -> list[Log]:
    logs = []
    for d in dirs:
        for p in range(per_dir):
            log = Log(str(tmp_path / d / f"t-{p}"), CONFIG, epoch_checkpoints=writer)
            log.failure_channel = channel
            logs.append(log)
    return logs


def test_a_batch_is_written_unsynced_then_synced_once_per_dir(
    tmp_path: Path, per_file_syncs: list[str]
) -> None:
    tasks = Tasks()
    synced_dirs: list[str] = []
    writer = EpochCheckpointWriter(tasks, lambda d: synced_dirs.append(d) is None)
    logs = make_logs(tmp_path, writer, ["a", "b"], 3, LogDirFailureChannel())
    for log in logs:
        log.maybe_assign_epoch_start_offset(4, 0)
    assert len(tasks.queued) == 1  # one job for all of them
    assert all(on_disk(log) is None for log in logs)  # nothing written on the caller's thread
    tasks.run()
    assert sorted(synced_dirs) == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert per_file_syncs == []
    for log in logs:
        assert on_disk(log) == [EpochEntry(4, 0)]
        assert durable(log)
        log.close()  # a durable checkpoint is not written again
    assert per_file_syncs == []


def test_requests_made_while_a_batch_is_written_go_out_in_the_next_round(tmp_path: Path) -> None:
    tasks = Tasks()
    rounds: list[int] = []
    late: list[Log] = []

    def sync_dir(_d: str) -> bool:
        rounds.append(1)
        if len(rounds) == 1:  # while the first batch is being synced
            late[0].maybe_assign_epoch_start_offset(7, 0)
        return True

    writer = EpochCheckpointWriter(tasks, sync_dir)
    first, second = make_logs(tmp_path, writer, ["a"], 2, LogDirFailureChannel())
    late.append(second)
    first.maybe_assign_epoch_start_offset(6, 0)
    tasks.run()
    assert len(rounds) == 2  # the same job wrote the late one
    assert on_disk(first) == [EpochEntry(6, 0)] and on_disk(second) == [EpochEntry(7, 0)]
    assert durable(first) and durable(second)
    second.maybe_assign_epoch_start_offset(8, 0)  # the job ended: a new one is scheduled
    assert len(tasks.queued) == 1


def test_an_unsynced_checkpoint_is_written_with_its_own_sync_before_the_recovery_point_moves(
    tmp_path: Path, per_file_syncs: list[str]
) -> None:
    tasks = Tasks()
    writer = EpochCheckpointWriter(tasks, lambda _d: False)  # the dir's sync fails
    (log,) = make_logs(tmp_path, writer, ["a"], 1, LogDirFailureChannel())
    log.maybe_assign_epoch_start_offset(2, 0)
    log.append_as_leader(records(3), leader_epoch=2)
    tasks.run()
    assert on_disk(log) == [EpochEntry(2, 0)]
    assert not durable(log)
    log.flush()
    assert log.recovery_point == 3
    assert per_file_syncs.count("sync_file") >= 2  # the checkpoint's own fsync, then the segment's
    assert durable(log)
    per_file_syncs.clear()
    log.append_as_leader(records(1), leader_epoch=2)
    log.flush()  # the epochs did not change: only the segment is synced
    assert "sync_dir" not in per_file_syncs
    log.close()


def test_a_file_written_again_is_not_confirmed_by_the_older_write(tmp_path: Path) -> None:
    file = LeaderEpochCheckpointFile(str(tmp_path / LEADER_EPOCH_CHECKPOINT))
    older = file.write_unsynced([EpochEntry(1, 0)])
    assert older is not None
    file.write_unsynced([EpochEntry(1, 0), EpochEntry(2, 4)])
    file.confirm(older)
    assert file._on_disk is None  # the file says epoch 2 now: the old entries are not "on disk"
    assert file.write_unsynced([EpochEntry(1, 0)]) is not None  # so they would be written again


def test_a_write_error_takes_the_dir_offline_and_spares_the_other_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = Tasks()
    channel = LogDirFailureChannel()
    writer = EpochCheckpointWriter(tasks, lambda _d: True)
    bad, good = make_logs(tmp_path, writer, ["a"], 1, channel) + make_logs(
        tmp_path, writer, ["b"], 1, channel
    )
    real_write = LeaderEpochCheckpointFile._write

    def failing(self: LeaderEpochCheckpointFile, written: tuple[EpochEntry, ...], syncer: object) -> None:
        if self.path.startswith(bad.dir):
            raise OSError(errno.EIO, "Input/output error")
        real_write(self, written, syncer)  # type: ignore[arg-type]

    monkeypatch.setattr(LeaderEpochCheckpointFile, "_write", failing)
    bad.maybe_assign_epoch_start_offset(1, 0)
    good.maybe_assign_epoch_start_offset(1, 0)
    tasks.run()
    assert channel.has_offline_log_dir(str(tmp_path / "a"))
    assert not channel.has_offline_log_dir(str(tmp_path / "b"))
    assert on_disk(good) == [EpochEntry(1, 0)] and durable(good)


def test_a_closed_log_is_skipped(tmp_path: Path) -> None:
    tasks = Tasks()
    writer = EpochCheckpointWriter(tasks, lambda _d: True)
    (log,) = make_logs(tmp_path, writer, ["a"], 1, LogDirFailureChannel())
    log.maybe_assign_epoch_start_offset(3, 0)
    log.close()  # writes it itself
    written = os.stat(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT)).st_mtime_ns
    tasks.run()
    assert os.stat(os.path.join(log.dir, LEADER_EPOCH_CHECKPOINT)).st_mtime_ns == written


def test_the_log_manager_syncs_a_dir_once_for_many_new_leaders(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, per_file_syncs: list[str]
) -> None:
    tasks = Tasks()
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, CONFIG, time_ms=clock, scheduler=tasks)
    manager.startup()
    synced: list[str] = []

    def syncfs(fd: int) -> None:
        synced.append(os.path.dirname(os.readlink(f"/proc/self/fd/{fd}")))
        sync_filesystem(fd)

    monkeypatch.setattr(log_manager_module, "sync_filesystem", syncfs)
    logs = [manager.get_or_create_log(TopicPartition("t", p)) for p in range(8)]
    for log in logs:
        log.maybe_assign_epoch_start_offset(5, 0)
    tasks.run()
    assert sorted(synced) == dirs  # through each dir's lock, once
    assert per_file_syncs == []
    assert all(durable(log) and on_disk(log) == [EpochEntry(5, 0)] for log in logs)
    manager.shutdown()
    assert per_file_syncs == []


def test_a_followers_new_epoch_is_written_by_the_batch_not_on_the_fetcher_thread(
    tmp_path: Path, per_file_syncs: list[str]
) -> None:
    """An acks=all produce waits for the followers' next fetch: their first batch of an epoch
    must not cost two fsyncs before it. A crash before the batch's sync loses nothing either:
    recovery reads the epochs of the batches after the recovery point again."""
    tasks = Tasks()
    writer = EpochCheckpointWriter(tasks, lambda _d: True)
    (log,) = make_logs(tmp_path, writer, ["a"], 1, LogDirFailureChannel())
    log.append_as_follower(epoch_records(2, epoch=3, base_offset=0))
    assert per_file_syncs == [] and on_disk(log) is None
    assert len(tasks.queued) == 1
    # A crash now (the checkpoint never written): the unclean load takes the epoch from the batch.
    recovered = Log(log.dir, CONFIG, recovery_point=0, had_clean_shutdown=False)
    assert recovered.leader_epoch_cache.entries == [EpochEntry(3, 0)]
    recovered.close_handlers()
    tasks.run()
    assert on_disk(log) == [EpochEntry(3, 0)] and durable(log)
    log.append_as_follower(epoch_records(1, epoch=3, base_offset=2))
    assert tasks.queued == []  # the same epoch: nothing to write
    log.close()
