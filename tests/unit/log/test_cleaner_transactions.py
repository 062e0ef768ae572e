"""The cleaner and transactions, as Kafka's cleaner handles them: aborted data is removed (and
does not hide older values of its keys), markers stay while data of their transaction is
left and go after delete.retention.ms once they are the last of it, the `.txnindex` follows
the markers into the cleaned segment, a producer's last batch keeps its sequence, and an
open transaction bounds the dirty section."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from cleaner_helpers import all_records, clean_once, keyed, latest_by_key, make_cleaner, set_mtime
from log_helpers import FakeClock, small_config

from kafkapy.protocol.control_records import ControlRecordType, EndTxnMarker, build_control_batch
from kafkapy.protocol.record_batch import BatchHeader
from kafkapy.server.log.cleaner.cleaner import CleanerStats, LogToClean
from kafkapy.server.log.cleaner.cleaner_manager import LogCleanerManager
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig

ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT


def compact_config(**overrides: object) -> LogConfig:
    return small_config(**{"cleanup_policy": ("compact",), "segment_bytes": 600, **overrides})


def txn(log: Log, pid: int, seq: int, pairs: list[tuple[bytes, bytes]], epoch: int = 0) -> None:
    log.append_as_leader(
        keyed(pairs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    )


def end_txn(log: Log, pid: int, kind: ControlRecordType, epoch: int = 0) -> None:
    log.append_as_leader(build_control_batch(pid, epoch, EndTxnMarker(kind, 0), 1_000), from_coordinator=True)


def headers(log: Log) -> list[BatchHeader]:
    return [h for s in log.log_segments for _, h in s.log.batches_from(0)]


def markers(log: Log) -> list[tuple[int, int]]:
    """(producer id, offset) of each control batch left."""
    return [(h.producer_id, h.base_offset) for h in headers(log) if h.is_control]


def filler(log: Log, rounds: int) -> None:
    for r in range(rounds):
        log.append_as_leader(keyed([(b"f%d" % (r % 3), b"x" * 40)]))


@pytest.fixture
def log(tmp_path: Path, clock: FakeClock):
    opened = Log(str(tmp_path / "t-0"), compact_config(delete_retention_ms=1000), time_ms=clock)
    yield opened
    opened.close()


def write_transactions(log: Log) -> dict[str, int]:
    log.append_as_leader(keyed([(b"k%d" % k, b"old") for k in range(5)]))
    txn(log, 1, 0, [(b"k0", b"committed"), (b"k1", b"committed")])
    end_txn(log, 1, COMMIT)
    txn(log, 2, 0, [(b"k2", b"aborted"), (b"k3", b"aborted")])
    abort_offset = log.log_end_offset
    end_txn(log, 2, ABORT)
    txn(log, 2, 2, [(b"k4", b"later")])
    end_txn(log, 2, COMMIT)
    filler(log, 12)
    log.roll()
    return {"abort": abort_offset}


@pytest.mark.timeout(30)
def test_aborted_records_are_removed_and_do_not_hide_older_values(log: Log) -> None:
    at = write_transactions(log)
    end = log.log_end_offset
    assert [a.last_offset for a in log.collect_aborted_transactions(0, end)] == [at["abort"]]
    clean_once(log)
    values = {k: v for k, (_, v) in latest_by_key(all_records(log)).items() if k.startswith(b"k")}
    assert values == {
        b"k0": b"committed", b"k1": b"committed", b"k2": b"old", b"k3": b"old", b"k4": b"later",
    }  # fmt: skip
    assert b"aborted" not in {r.value for r in all_records(log)}
    # First pass: the ABORT marker saw its data removed, so it and its index entry stay.
    assert (2, at["abort"]) in markers(log)
    assert [a.last_offset for a in log.collect_aborted_transactions(0, end)] == [at["abort"]]
    txn_files = glob.glob(os.path.join(log.dir, "*.txnindex*"))
    assert txn_files and all(f.endswith(".txnindex") for f in txn_files)
    # A restart reads the same log and the same aborted transactions.
    log.close()
    again = Log(log.dir, compact_config())
    try:
        assert [a.last_offset for a in again.collect_aborted_transactions(0, end)] == [at["abort"]]
        assert b"aborted" not in {r.value for r in all_records(again)}
    finally:
        again.close()


@pytest.mark.timeout(30)
def test_markers_go_after_delete_retention_once_no_data_of_their_transaction_is_left(log: Log) -> None:
    at = write_transactions(log)
    end, _ = clean_once(log)
    commit_markers = [m for m in markers(log) if m[1] != at["abort"]]
    # The second pass, its segments older than the horizon: the ABORT marker has no data left
    # and goes with its index entry; COMMIT markers whose transactions still have data stay.
    segments = log.log_segments
    for s in segments[:-1]:
        set_mtime(s, 1_000_000)
    set_mtime(segments[-2], 1_000_000 + 5000)
    filler(log, 6)
    log.roll()
    clean_once(log, first_dirty=end)
    assert (2, at["abort"]) not in markers(log)
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []
    assert markers(log) == commit_markers


@pytest.mark.timeout(30)
def test_a_producers_last_batch_stays_empty_so_its_sequence_survives(log: Log, tmp_path: Path) -> None:
    log.append_as_leader(keyed([(b"k0", b"old")]))
    txn(log, 7, 0, [(b"k0", b"a"), (b"k1", b"a"), (b"k2", b"a")], epoch=3)
    end_txn(log, 7, ABORT, epoch=3)
    filler(log, 12)
    log.roll()
    clean_once(log)
    kept = [h for h in headers(log) if h.producer_id == 7 and not h.is_control]
    assert [(h.records_count, h.base_sequence, h.last_sequence, h.producer_epoch) for h in kept] == [
        (0, 0, 2, 3)
    ]
    log.close()
    for snapshot in glob.glob(os.path.join(log.dir, "*.snapshot")):
        os.unlink(snapshot)  # rebuilt from the log alone
    again = Log(log.dir, compact_config())
    try:
        entry = again.producer_state.last_entry(7)
        assert entry is not None and entry.producer_epoch == 3 and entry.last_seq == 2
    finally:
        again.close()


@pytest.mark.timeout(30)
def test_an_open_transaction_bounds_the_dirty_section(log: Log, clock: FakeClock) -> None:
    log.append_as_leader(keyed([(b"k0", b"v")]))
    filler(log, 6)
    open_at = log.log_end_offset
    txn(log, 9, 0, [(b"k0", b"open")])
    filler(log, 12)
    log.roll()
    log.high_watermark = log.log_end_offset
    manager = LogCleanerManager([], lambda: {}, clock)
    _, uncleanable, _ = manager.cleanable_offsets(log, None, clock.now)
    assert uncleanable == open_at == log.last_stable_offset
    end, _ = clean_once_bounded(log, uncleanable)
    assert end <= open_at
    assert b"open" in {r.value for r in all_records(log)}
    # Once it ends, the bound moves to the active segment.
    end_txn(log, 9, COMMIT)
    log.high_watermark = log.log_end_offset
    _, uncleanable, _ = manager.cleanable_offsets(log, end, clock.now)
    assert uncleanable == log.active_segment.base_offset


def clean_once_bounded(log: Log, uncleanable: int) -> tuple[int, CleanerStats]:
    return make_cleaner().clean(LogToClean(log, 0, uncleanable, 0, log.size))


@pytest.mark.timeout(30)
def test_a_crash_mid_swap_keeps_the_cleaned_segments_txnindex(tmp_path: Path) -> None:
    from kafkapy.server.log.segment_swap import complete_swaps
    from kafkapy.server.log.transaction_index import AbortedTxn, TransactionIndex

    d = tmp_path / "t-0"
    d.mkdir()
    base = "00000000000000000000"
    data = bytes(keyed([(b"k", b"v")]))
    (d / f"{base}.log").write_bytes(data)
    (d / f"{base}.log.swap").write_bytes(data)
    old, new = AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 1, 7, 8)
    for path, entry in ((d / f"{base}.txnindex", old), (d / f"{base}.txnindex.swap", new)):
        index = TransactionIndex(str(path), 0)
        index.append(entry)
        index.close()
    complete_swaps(str(d), "[test]")
    assert sorted(os.listdir(d)) == [f"{base}.log", f"{base}.txnindex"]
    assert TransactionIndex(str(d / f"{base}.txnindex"), 0).entries == [new]
