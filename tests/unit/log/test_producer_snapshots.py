"""Producer state snapshots in a Log: when they are written, how a load uses them, when they go.

The invariant throughout: the producer state after a load or a truncation equals the state a
full scan of the log's batch headers gives (for what a snapshot holds: epoch, last sequence,
last offset, offset delta and timestamp of each producer's last batch).
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.server.log.log import Log
from kafkapy.server.log.producer_state import ProducerStateManager
from kafkapy.server.log.producer_state_snapshot import (
    SnapshotEntry,
    list_snapshot_offsets,
    read_snapshot_file,
    snapshot_path,
)

# Byte position of producerId in a v2 batch header: baseOffset 8, batchLength 4,
# partitionLeaderEpoch 4, magic 1, crc 4, attributes 2, lastOffsetDelta 4, two timestamps 16.
PRODUCER_ID_POSITION = 43


def batch(seq: int, pid: int, n: int = 2, epoch: int = 0, timestamp: int = 1_000) -> bytearray:
    return records(n, timestamp=timestamp, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def open_log(path: Path, clock: FakeClock, clean: bool = True) -> Log:
    return Log(str(path), small_config(), had_clean_shutdown=clean, time_ms=clock)


def fill(log: Log, segments: int = 3, producers: tuple[int, ...] = (1, 2, 3)) -> None:
    """Two batches per producer per segment, then a roll: `segments` full segments and an empty one."""
    seqs = dict.fromkeys(producers, 0)
    for _ in range(segments):
        for _ in range(2):
            for pid in producers:
                log.append_as_leader(batch(seqs[pid], pid))
                seqs[pid] += 2
        log.roll()


def state(log: Log) -> dict[int, SnapshotEntry]:
    return {e.producer_id: e for e in log.producer_state.snapshot_entries()}


def full_scan_state(log: Log) -> dict[int, SnapshotEntry]:
    manager = ProducerStateManager(log.name)
    manager.rebuild((h, None) for s in log.log_segments for _, h in s.log.batches_from(0))
    manager.truncate_head(log.log_start_offset)
    return {e.producer_id: e for e in manager.snapshot_entries()}


def snapshots(log_dir: Path) -> list[int]:
    return list_snapshot_offsets(str(log_dir))


def test_a_roll_writes_the_state_at_the_new_segments_base_offset(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(0, pid=1))
    log.append_as_leader(batch(0, pid=2))
    log.roll()
    assert snapshots(tmp_path / "t-0") == [4]
    log.append_as_leader(batch(2, pid=1))  # after the snapshot: not in it
    assert os.path.basename(snapshot_path(log.dir, 4)) == "00000000000000000004.snapshot"
    assert log.producer_state.snapshots is not None
    loaded = log.producer_state.snapshots.load_latest(4)
    assert loaded is not None
    assert {e.producer_id: (e.last_sequence, e.last_offset) for e in loaded[1]} == {1: (1, 1), 2: (1, 3)}
    log.close()


def test_close_writes_a_snapshot_at_the_log_end_offset(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(0, pid=1))
    log.close()
    assert snapshots(tmp_path / "t-0") == [2]


def test_reopening_from_snapshots_gives_the_full_scan_state(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    fill(log)
    log.append_as_leader(batch(12, pid=1))  # a tail after the last roll's snapshot
    before = state(log)
    log.close()
    again = open_log(tmp_path / "t-0", clock)
    assert state(again) == before == full_scan_state(again)
    assert again.append_as_leader(batch(12, pid=1)).duplicate  # the last batch is still known
    again.close()


def test_a_tail_after_the_newest_snapshot_is_scanned(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    fill(log, segments=2)
    log.append_as_leader(batch(8, pid=2))
    log.append_as_leader(batch(0, pid=9))  # a producer the snapshot does not know
    before = state(log)
    log.close()
    os.unlink(snapshot_path(log.dir, log.log_end_offset))  # as if the broker died before close
    again = open_log(tmp_path / "t-0", clock, clean=False)
    assert state(again) == before == full_scan_state(again)
    again.close()


def test_only_the_last_batch_of_a_producer_survives_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    for seq in (0, 2, 4):
        log.append_as_leader(batch(seq, pid=1))
    assert log.append_as_leader(batch(2, pid=1)).duplicate  # in memory: the last five batches
    log.close()
    again = open_log(tmp_path / "t-0", clock)
    assert again.append_as_leader(batch(4, pid=1)).duplicate
    # Kafka's snapshot keeps one batch per producer: an older retry is now out of order.
    with pytest.raises(Exception, match="Out of order sequence"):
        again.append_as_leader(batch(2, pid=1))
    again.close()


def test_load_does_not_read_segments_below_the_snapshot(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=3)
    expected = state(log)
    first_segment = log.log_segments[0].log.path
    log.close()
    # Give the first batch of the first segment another producer id. The batch CRC would catch
    # it, but a header scan does not check CRCs: a scan of that segment would report pid 666.
    with open(first_segment, "r+b") as f:
        f.seek(PRODUCER_ID_POSITION)
        f.write(struct.pack(">q", 666))
    reads: list[str] = []
    from kafkapy.server.log import file_records

    original = file_records.FileRecords.batches_from

    def counting(self: file_records.FileRecords, position: int = 0):  # noqa: ANN202
        reads.append(os.path.basename(self.path))
        return original(self, position)

    file_records.FileRecords.batches_from = counting  # type: ignore[method-assign]
    try:
        again = open_log(log_dir, clock)
    finally:
        file_records.FileRecords.batches_from = original  # type: ignore[method-assign]
    assert state(again) == expected
    assert 666 not in state(again)
    assert "00000000000000000000.log" not in reads
    again.close()
    # Control: without snapshots the scan does read the first segment and sees the change.
    for offset in snapshots(log_dir):
        os.unlink(snapshot_path(str(log_dir), offset))
    scanned = open_log(log_dir, clock)
    assert 666 in state(scanned)
    scanned.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data[:10] + bytes([data[10] ^ 0x01]) + data[11:],
        lambda data: b"\x00\x07" + data[2:],
        lambda data: b"",
    ],
    ids=["truncated", "bad-crc", "wrong-version", "empty"],
)
def test_a_corrupt_snapshot_is_named_deleted_and_an_older_one_used(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture, damage
) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=3)
    log.append_as_leader(batch(12, pid=3))
    expected = state(log)
    log.close()
    newest = snapshot_path(str(log_dir), max(snapshots(log_dir)))
    data = Path(newest).read_bytes()
    Path(newest).write_bytes(damage(data))
    with caplog.at_level(logging.WARNING, logger="kafkapy.log.ProducerStateManager"):
        again = open_log(log_dir, clock)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        newest in r.getMessage() and "Failed to load producer snapshot" in r.getMessage() for r in warnings
    )
    assert state(again) == expected == full_scan_state(again)
    # Deleted, then written again from the rebuilt state (the load scanned a tail, as Kafka's does).
    assert {e.producer_id: e for e in read_snapshot_file(newest)} == expected
    again.close()


def test_every_snapshot_corrupt_falls_back_to_a_full_scan(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=2)
    expected = state(log)
    log.close()
    for offset in snapshots(log_dir):
        Path(snapshot_path(str(log_dir), offset)).write_bytes(b"\x00\x01garbage")
    again = open_log(log_dir, clock)
    assert state(again) == expected
    assert snapshots(log_dir) == [again.log_end_offset]  # the bad ones went; the load wrote a new one
    again.close()


def test_snapshots_above_the_recovered_end_are_deleted_after_an_unclean_shutdown(
    tmp_path: Path, clock: FakeClock
) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=2)
    end = log.log_end_offset
    expected = state(log)
    log.close()
    # A snapshot from a future the log never kept (the segment data was lost in the crash).
    stale = snapshot_path(str(log_dir), end + 100)
    Path(stale).write_bytes(Path(snapshot_path(str(log_dir), end)).read_bytes())
    again = open_log(log_dir, clock, clean=False)
    assert not os.path.exists(stale)
    assert state(again) == expected
    again.close()


def test_truncation_deletes_later_snapshots_and_reloads_the_state(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=3)  # segments at 0, 12, 24, 36; snapshots at 12 (kept), 24, 36
    assert snapshots(log_dir)[-2:] == [24, 36]
    log.truncate_to(26)
    assert max(snapshots(log_dir)) == 24
    assert state(log) == full_scan_state(log)
    # Segment 24 held pid 1 at 24-25, pid 2 at 26-27, ...: only pid 1's batch there survives.
    assert state(log)[1].last_offset == 25
    assert state(log)[2].last_offset == 21
    assert log.append_as_leader(batch(8, pid=2)).first_offset == 26  # pid 2 goes on from sequence 7
    log.close()
    again = open_log(log_dir, clock)
    assert state(again) == full_scan_state(again)
    again.close()


def test_full_truncation_deletes_every_snapshot(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=2)
    log.truncate_fully_and_start_at(100)
    assert snapshots(log_dir) == []
    assert state(log) == {}
    log.close()


def test_snapshots_stay_bounded_as_segments_roll(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=8)
    bases = [s.base_offset for s in log.log_segments]
    assert snapshots(log_dir) == bases[-2:]  # the last two segments' (everything is flushed)
    log.close()


def test_retention_deletes_snapshots_below_the_log_start_offset(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    fill(log, segments=3)
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(30)
    assert all(o >= 30 for o in snapshots(log_dir))
    assert log.delete_old_segments() >= 2
    assert all(o >= log.log_start_offset >= 30 for o in snapshots(log_dir))
    assert state(log) == full_scan_state(log)
    log.close()


def test_idle_producers_expire(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    hour = 3_600_000
    log.append_as_leader(batch(0, pid=1, timestamp=clock.now - 25 * hour))
    log.append_as_leader(batch(0, pid=2, timestamp=clock.now - hour))
    assert log.remove_expired_producers(24 * hour) == 1
    assert set(state(log)) == {2}
    # An expired producer is unknown again: any sequence starts it.
    assert not log.append_as_leader(batch(500, pid=1, timestamp=clock.now)).duplicate
    clock.advance(2 * hour)
    assert log.remove_expired_producers(3 * hour) == 1  # pid 2's batch is now three hours old
    assert set(state(log)) == {1}
    log.close()


def test_a_roll_snapshot_still_queued_at_a_truncation_is_never_installed(
    tmp_path: Path, clock: FakeClock
) -> None:
    queued: list = []
    log_dir = tmp_path / "t-0"
    log = Log(str(log_dir), small_config(), time_ms=clock, scheduler=queued.append)
    log.append_as_leader(batch(0, pid=1))
    log.append_as_leader(batch(2, pid=1))
    log.roll()  # the snapshot at 4 is encoded, its write queued
    log.truncate_to(2)
    log.append_as_leader(batch(0, pid=1, epoch=1))  # another history reaches offset 4
    for job in queued:
        job()
    assert 4 not in snapshots(log_dir)
    log.close()
    again = open_log(log_dir, clock)
    assert state(again)[1].producer_epoch == 1 and state(again) == full_scan_state(again)
    again.close()


def test_two_writers_of_the_same_snapshot_leave_a_valid_file(tmp_path: Path, clock: FakeClock) -> None:
    from kafkapy.server.log.producer_snapshots import ProducerSnapshots

    first, second = ProducerSnapshots(str(tmp_path), "t-0"), ProducerSnapshots(str(tmp_path), "t-0")
    entry = SnapshotEntry(1, 0, 1, 1, 1, 5)
    jobs = [first.prepare_write(7, [entry]), second.prepare_write(7, [entry])]
    assert all(job is not None for job in jobs)
    for job in jobs:
        job()  # type: ignore[misc]
    loaded = first.load_latest(7)
    assert loaded == (7, [entry])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000007.snapshot"]


def test_a_load_that_scanned_a_tail_writes_a_snapshot_at_the_end(tmp_path: Path, clock: FakeClock) -> None:
    log_dir = tmp_path / "t-0"
    log = open_log(log_dir, clock)
    log.append_as_leader(batch(0, pid=1))
    log.roll()
    log.append_as_leader(batch(2, pid=1))
    log.close()
    os.unlink(snapshot_path(str(log_dir), 4))  # the close snapshot: as after a kill -9
    assert snapshots(log_dir) == [2]
    again = open_log(log_dir, clock, clean=False)
    assert snapshots(log_dir) == [2, 4]
    again.close()


def test_an_early_end_snapshot_is_the_one_the_close_keeps(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(0, pid=1))
    with caplog.at_level(logging.INFO):
        log.write_end_snapshot_early()
        log.close()
    assert snapshots(tmp_path / "t-0") == [2]
    assert caplog.text.count("Wrote producer snapshot at offset 2") == 1  # the close wrote nothing
    again = open_log(tmp_path / "t-0", clock)
    assert again.append_as_leader(batch(0, pid=1)).duplicate
    again.close()


def test_appends_after_an_early_end_snapshot_get_their_own_at_close(tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(0, pid=1))
    log.write_end_snapshot_early()
    log.append_as_leader(batch(2, pid=1))
    log.append_as_leader(batch(0, pid=2))
    before = state(log)
    log.close()
    assert snapshots(tmp_path / "t-0") == [2, 6]
    again = open_log(tmp_path / "t-0", clock)
    assert state(again) == before == full_scan_state(again)
    again.close()


def test_no_early_end_snapshot_for_an_empty_or_closed_log(tmp_path: Path, clock: FakeClock) -> None:
    empty = open_log(tmp_path / "t-0", clock)
    empty.write_end_snapshot_early()
    assert snapshots(tmp_path / "t-0") == []
    empty.close()
    closed = open_log(tmp_path / "t-1", clock)
    closed.append_as_leader(batch(0, pid=1))
    closed.close()
    os.unlink(snapshot_path(closed.dir, 2))
    closed.write_end_snapshot_early()  # a log closed meanwhile (deleted, moved) is left alone
    assert snapshots(tmp_path / "t-1") == []
