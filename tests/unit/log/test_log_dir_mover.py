"""A replica moved between log dirs: the future log copies the current one while appends go on,
follows its truncations, then is swapped in under the same Log object.

Invariants checked: after the swap the log lives in the destination with every offset and the
same bytes; the object the partition holds is the same; the old directory is renamed -delete
and removed after the delay; appends made during the copy are all there; a truncation of the
current log mid-copy is reflected in the moved log (no stale batches)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from log_helpers import fetched_offsets, records, region_bytes, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.log import Log
from kafkapy.server.log_dir_mover import LogDirMoves

TP = TopicPartition("t", 0)


class _Logs:
    def __init__(self, dirs: list[str], log: Log) -> None:
        self.log_dirs = dirs
        self.log: Log | None = log

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self.log


def _wait_moved(moves: LogDirMoves, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while moves.destination(TP) is not None:
        assert time.monotonic() < deadline, "move did not finish"
        time.sleep(0.02)


def _all_bytes(log: Log) -> bytes:
    return region_bytes(log.read(log.log_start_offset, 10**8).records)


@pytest.mark.timeout(30)
def test_move_copies_everything_and_swaps_in_place(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    log = Log(str(a / "t-0"), small_config(file_delete_delay_ms=100), had_clean_shutdown=True)
    for _ in range(30):
        log.append_as_leader(records(3), leader_epoch=2)
    log.high_watermark = log.log_end_offset
    before = _all_bytes(log)
    logs = _Logs([str(a), str(b)], log)
    moves = LogDirMoves(logs)
    moves.start(TP, log, str(b))
    for _ in range(10):  # appends while the copy runs are carried over too
        log.append_as_leader(records(2), leader_epoch=3)
    _wait_moved(moves)
    assert log.dir == str(b / "t-0")
    assert log.log_end_offset == 110
    assert _all_bytes(log).startswith(before)
    assert fetched_offsets(log.read(0, 10**8)) == list(range(0, 90, 3)) + list(range(90, 110, 2))
    assert log.leader_epoch_cache.latest_epoch == 3
    assert log.leader_epoch_cache.checkpoint.path == str(b / "t-0" / "leader-epoch-checkpoint")
    assert not os.path.exists(a / "t-0")
    log.append_as_leader(records(1), leader_epoch=3)  # the moved log takes appends
    assert log.log_end_offset == 111
    deadline = time.monotonic() + 5
    while any(n.endswith("-delete") for n in os.listdir(a)):
        assert time.monotonic() < deadline, "old dir not deleted"
        time.sleep(0.05)
    assert not any(n.endswith("-future") for n in os.listdir(b))
    log.close()


@pytest.mark.timeout(30)
def test_truncation_of_the_current_log_reaches_the_future_log(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    log = Log(str(a / "t-0"), small_config(file_delete_delay_ms=0), had_clean_shutdown=True)
    for _ in range(20):
        log.append_as_leader(records(1), leader_epoch=1)
    moves = LogDirMoves(_Logs([str(a), str(b)], log))
    with log._lock:  # hold appends and the mover's rounds: truncate, then write other batches
        moves.start(TP, log, str(b))
        log.truncate_to(5)
        for _ in range(5):
            log.append_as_leader(records(2), leader_epoch=4)
    _wait_moved(moves)
    assert log.dir == str(b / "t-0")
    assert fetched_offsets(log.read(0, 10**8)) == [0, 1, 2, 3, 4, 5, 7, 9, 11, 13]
    log.close()


@pytest.mark.timeout(30)
def test_a_deleted_replica_abandons_its_move(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    log = Log(str(a / "t-0"), small_config(), had_clean_shutdown=True)
    log.append_as_leader(records(1))
    logs = _Logs([str(a), str(b)], log)
    moves = LogDirMoves(logs)
    with log._lock:
        moves.start(TP, log, str(b))
        logs.log = None  # deleted meanwhile
    _wait_moved(moves)
    assert log.dir == str(a / "t-0")
    assert not os.path.exists(b) or not os.listdir(b)
    log.close()


@pytest.mark.timeout(30)
def test_the_copy_waits_while_over_the_alter_log_dirs_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkapy.server import log_dir_mover
    from kafkapy.server.replication_quota import UNBOUNDED, ReplicationQuotaManager

    monkeypatch.setattr(log_dir_mover, "ROUND_BYTES", 200)
    a, b = tmp_path / "a", tmp_path / "b"
    log = Log(str(a / "t-0"), small_config(), had_clean_shutdown=True)
    for _ in range(20):
        log.append_as_leader(records(1, size=100))
    moves = LogDirMoves(_Logs([str(a), str(b)], log))
    quota = ReplicationQuotaManager()
    quota.update_quota(1)  # one byte per second: the first round puts the copy over the bound
    moves.quota = quota
    moves.start(TP, log, str(b))
    time.sleep(0.5)
    future = moves.future_logs()[TP]
    assert 0 < future.log_end_offset < log.log_end_offset  # held back, not finished
    quota.update_quota(UNBOUNDED)
    _wait_moved(moves)
    assert log.dir == str(b / "t-0") and log.log_end_offset == 20
    log.close()


@pytest.mark.timeout(30)
def test_an_unfinished_future_log_is_loaded_at_startup_and_its_move_resumes(tmp_path: Path) -> None:
    """Kafka's futureLogs: a `-future` dir left by the last run is loaded, cut back by leader
    epoch to what the current log still has (here the future log holds an epoch-1 batch the
    current log replaced with epoch 2), copied up to the end and swapped in."""
    from kafkapy.server.log.log_manager import LogManager

    a, b = tmp_path / "a", tmp_path / "b"
    current = Log(str(a / "t-0"), small_config(), had_clean_shutdown=True)
    current.append_as_leader(records(3), leader_epoch=1)
    scratch = Log(str(tmp_path / "scratch" / "t-0"), small_config(), had_clean_shutdown=True)
    scratch.append_as_follower(_all_bytes(current))
    scratch.append_as_leader(records(1, size=7), leader_epoch=1)  # offset 3, never in the current log
    current.append_as_leader(records(2), leader_epoch=2)  # offsets 3-4
    expected = _all_bytes(current)
    current.close()
    leftover = Log(str(b / "t-0.0123abcd-future"), small_config(), had_clean_shutdown=True)
    leftover.append_as_follower(_all_bytes(scratch))
    leftover.close()
    scratch.close()

    manager = LogManager([str(a), str(b)], small_config())
    manager.startup()
    try:
        future = manager.take_future_log(TP)
        assert future is not None and future.log_end_offset == 4 and manager.take_future_log(TP) is None
        log = manager.get_log(TP)
        assert log is not None and log.dir == str(a / "t-0")
        manager.moves.resume(TP, log, future)
        _wait_moved(manager.moves)
        assert log.dir == str(b / "t-0") and log.log_end_offset == 5
        assert _all_bytes(log) == expected
        assert not any(n.endswith("-future") for n in os.listdir(b))
    finally:
        manager.shutdown()


@pytest.mark.timeout(30)
def test_a_shutdown_mid_move_keeps_the_future_log_for_the_next_start(tmp_path: Path) -> None:
    from kafkapy.server.log.log_manager import LogManager
    from kafkapy.server.replication_quota import ReplicationQuotaManager

    a, b = tmp_path / "a", tmp_path / "b"
    config = small_config(segment_bytes=10**7, segment_index_bytes=10**6)
    manager = LogManager([str(a), str(b)], config)
    manager.startup()
    log = manager.get_or_create_log(TP)
    if log.dir != str(a / "t-0"):
        a, b = b, a
    for _ in range(300):  # 1.5 MB: more than one copy round
        log.append_as_leader(records(5, size=1000), leader_epoch=1)
    quota = ReplicationQuotaManager()
    quota.update_quota(1)  # 1 B/s: the copy waits after its first round
    manager.moves.quota = quota
    manager.moves.start(TP, log, str(b))
    deadline = time.monotonic() + 10
    while not any(n.endswith("-future") for n in os.listdir(b)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    manager.shutdown()
    assert [n for n in os.listdir(b) if n.endswith("-future")]
    again = LogManager([str(a), str(b)], config)
    again.startup()
    try:
        assert again.take_future_log(TP) is not None
    finally:
        again.shutdown()
