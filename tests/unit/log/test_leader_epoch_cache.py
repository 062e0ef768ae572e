"""The leader epoch cache (KIP-101): its rules, its checkpoint file, and how a Log keeps it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafkapy.protocol.constants import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochCheckpointFile,
    LeaderEpochFileCache,
    OffsetAndEpoch,
)
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.offset_checkpoint import CheckpointFormatError


def cache(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochFileCache:
    checkpoint = LeaderEpochCheckpointFile(str(tmp_path / LEADER_EPOCH_CHECKPOINT))
    return LeaderEpochFileCache("t-0", checkpoint, [EpochEntry(*e) for e in entries])


def records(n: int, epoch: int = -1, base_offset: int = 0) -> bytearray:
    return build_batch(
        [(b"k", b"v", [], 1_000) for _ in range(n)], base_offset=base_offset, partition_leader_epoch=epoch
    )


# -- assign and truncate ---------------------------------------------------------------------------


def test_assign_appends_new_epochs_and_ignores_a_repeat_of_the_latest(tmp_path: Path) -> None:
    c = cache(tmp_path)
    assert c.assign(0, 0) and c.assign(2, 10)
    assert not c.assign(2, 15)  # the same epoch going on
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10)] and c.latest_epoch == 2


def test_assign_drops_entries_that_contradict_the_new_one(tmp_path: Path) -> None:
    c = cache(tmp_path, (0, 0), (2, 10), (3, 20))
    assert c.assign(3, 15)  # epoch 3 really began at 15: the old (3, 20) goes
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    assert c.assign(4, 12)  # a start offset at or before later entries' removes them too
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(4, 12)]


def test_truncate_from_end_removes_epochs_starting_at_or_after_the_offset(tmp_path: Path) -> None:
    c = cache(tmp_path, (0, 0), (2, 10), (3, 20))
    assert not c.truncate_from_end(25)
    assert c.truncate_from_end(10)
    assert c.entries == [EpochEntry(0, 0)]


def test_truncate_from_start_moves_the_first_kept_epoch_to_the_new_start(tmp_path: Path) -> None:
    c = cache(tmp_path, (0, 0), (2, 10), (3, 20))
    assert c.truncate_from_start(15)
    assert c.entries == [EpochEntry(2, 15), EpochEntry(3, 20)]
    assert not c.truncate_from_start(15)
    assert c.epoch_for_offset(19) == 2 and c.epoch_for_offset(20) == 3 and c.epoch_for_offset(3) is None


# -- end_offset_for: the leader's answer -----------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (3, OffsetAndEpoch(30, 3)),  # the latest epoch ends at the log end offset
        (2, OffsetAndEpoch(20, 2)),  # an older one where the next began
        (1, OffsetAndEpoch(10, 0)),  # an epoch this leader never had: the largest below it
        (-1, OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)),
        (7, OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)),  # newer than any we know
    ],
)
def test_end_offset_for_epoch(tmp_path: Path, requested: int, expected: OffsetAndEpoch) -> None:
    c = cache(tmp_path, (0, 0), (2, 10), (3, 20))
    assert c.end_offset_for(requested, 30) == expected


def test_an_epoch_older_than_the_cache_ends_where_the_cache_begins(tmp_path: Path) -> None:
    c = cache(tmp_path, (4, 100), (5, 150))
    assert c.end_offset_for(2, 200) == OffsetAndEpoch(100, 2)
    assert cache(tmp_path).end_offset_for(2, 0) == OffsetAndEpoch(UNDEFINED_EPOCH_OFFSET, UNDEFINED_EPOCH)


# -- the checkpoint file ---------------------------------------------------------------------------


def test_checkpoint_file_is_kafkas_format(tmp_path: Path) -> None:
    c = cache(tmp_path, (0, 0), (3, 1500))
    c.flush()
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n3 1500\n"
    assert c.checkpoint.read() == [EpochEntry(0, 0), EpochEntry(3, 1500)]


@pytest.mark.parametrize(
    "content",
    ["", "1\n0\n", "0\n2\n0 0\n", "0\n1\nx 3\n", "0\n2\n3 10\n2 20\n", "0\n1\n0 0 0\n", "0\nfoo\n"],
)
def test_a_malformed_checkpoint_is_refused_with_the_file_named(tmp_path: Path, content: str) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(content)
    with pytest.raises(CheckpointFormatError, match=LEADER_EPOCH_CHECKPOINT):
        LeaderEpochCheckpointFile(str(path)).read()


# -- the Log keeps it ------------------------------------------------------------------------------


def test_leader_appends_and_new_epochs_land_in_the_checkpoint(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "t-0"), LogConfig())
    log.append_as_leader(records(3), leader_epoch=0)
    log.maybe_assign_epoch_start_offset(2, log.log_end_offset)  # elected again, nothing written yet
    log.append_as_leader(records(2), leader_epoch=2)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(2, 3)]
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(3, 0)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(5, 2)
    assert (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n2 3\n"
    log.close()


def test_follower_appends_take_the_epochs_of_the_leaders_batches(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "t-0"), LogConfig())
    log.append_as_follower(records(2, epoch=1, base_offset=0))
    log.append_as_follower(records(2, epoch=1, base_offset=2) + records(1, epoch=4, base_offset=4))
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 4)]
    assert LeaderEpochCheckpointFile(str(tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT)).read() == [
        EpochEntry(1, 0),
        EpochEntry(4, 4),
    ]
    log.close()


def test_truncation_and_a_moving_log_start_keep_the_cache_in_step(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "t-0"), LogConfig())
    for epoch in (1, 2, 3):
        log.append_as_follower(records(5, epoch=epoch, base_offset=log.log_end_offset))
    log.truncate_to(7)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 5)]
    log.high_watermark = 7
    log.maybe_increment_log_start_offset(6)
    assert log.leader_epoch_cache.entries == [EpochEntry(2, 6)]
    log.truncate_fully_and_start_at(40)
    assert log.leader_epoch_cache.is_empty() and log.end_offset_for_epoch(2) is None
    log.close()


def test_a_corrupt_checkpoint_is_named_and_rebuilt_from_the_log(tmp_path: Path, caplog) -> None:
    d = tmp_path / "t-0"
    log = Log(str(d), LogConfig())
    log.append_as_follower(records(2, epoch=1) + records(3, epoch=5, base_offset=2))
    log.close()
    (d / LEADER_EPOCH_CHECKPOINT).write_text("0\n9\ngarbage\n")
    with caplog.at_level(logging.WARNING):
        reopened = Log(str(d), LogConfig(), had_clean_shutdown=True)
    assert "leader-epoch-checkpoint is unreadable" in caplog.text
    assert reopened.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(5, 2)]
    assert (d / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n1 0\n5 2\n"
    reopened.close()


def test_after_an_unclean_shutdown_epochs_follow_what_recovery_kept(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = Log(str(d), LogConfig())
    log.append_as_follower(records(2, epoch=1))
    log.flush()
    log.append_as_follower(records(3, epoch=5, base_offset=2))
    checkpoint = (d / LEADER_EPOCH_CHECKPOINT).read_text()
    log.close()
    # The checkpoint was lost with the crash, but epoch 5's batch reached the disk.
    (d / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n1 0\n")
    reopened = Log(str(d), LogConfig(), recovery_point=2, had_clean_shutdown=False)
    assert (d / LEADER_EPOCH_CHECKPOINT).read_text() == checkpoint
    reopened.close()
    # The other way round: the checkpoint names an epoch whose records did not survive.
    (d / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n1 0\n5 2\n6 5\n")
    reopened = Log(str(d), LogConfig(), recovery_point=2, had_clean_shutdown=False)
    assert reopened.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(5, 2)]
    reopened.close()


def test_checkpoint_write_of_unchanged_entries_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing 10k logs must not fsync 10k files that already say the same thing.
    path = str(tmp_path / LEADER_EPOCH_CHECKPOINT)
    file = LeaderEpochCheckpointFile(path)
    file.write([EpochEntry(1, 0)])
    fsyncs: list[int] = []
    real_fsync = __import__("os").fsync
    monkeypatch.setattr("os.fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    file.write([EpochEntry(1, 0)])
    assert fsyncs == []
    reread = LeaderEpochCheckpointFile(path)
    assert reread.read() == [EpochEntry(1, 0)]
    reread.write([EpochEntry(1, 0)])  # what was read is on disk too
    assert fsyncs == []
    file.write([EpochEntry(1, 0), EpochEntry(2, 5)])
    assert fsyncs  # changed entries are written
    assert LeaderEpochCheckpointFile(path).read() == [EpochEntry(1, 0), EpochEntry(2, 5)]
    moved = tmp_path / "moved"
    moved.mkdir()
    file.path = str(moved / LEADER_EPOCH_CHECKPOINT)  # a log-dir move points the file elsewhere
    file.write([EpochEntry(1, 0), EpochEntry(2, 5)])
    assert LeaderEpochCheckpointFile(file.path).read() == [EpochEntry(1, 0), EpochEntry(2, 5)]


def test_a_renamed_log_writes_its_checkpoint_in_the_new_directory(tmp_path: Path) -> None:
    """Topic deletion and log-dir moves rename the directory: later epochs must not go to the old
    path (the write would fail there and fail the whole log dir)."""
    log = Log(str(tmp_path / "t-0"), LogConfig())
    log.append_as_leader(records(2), leader_epoch=1)
    log.rename_dir(str(tmp_path / "t-0.moved"))
    log.append_as_leader(records(1), leader_epoch=2)
    log.leader_epoch_cache.flush()
    assert not (tmp_path / "t-0").exists()
    written = LeaderEpochCheckpointFile(str(tmp_path / "t-0.moved" / LEADER_EPOCH_CHECKPOINT)).read()
    assert written == [EpochEntry(1, 0), EpochEntry(2, 2)]
    log.close()
