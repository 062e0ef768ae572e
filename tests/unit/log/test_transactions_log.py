"""The log side of transactions (KIP-98): open transactions, the last stable offset, markers,
the aborted transaction index (`.txnindex`, Kafka's format) and what survives a restart."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.protocol.control_records import (
    ControlRecordType,
    EndTxnMarker,
    build_control_batch,
    parse_control_batch,
)
from kafkapy.protocol.errors import (
    InvalidRecordException,
    InvalidTxnStateException,
    ProducerFencedException,
    TransactionCoordinatorFencedException,
)
from kafkapy.protocol.record_batch import read_header
from kafkapy.server.log.log import Log
from kafkapy.server.log.transaction_index import (
    AbortedTxn,
    CorruptTxnIndexException,
    TransactionIndex,
)

ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT


def txn_batch(pid: int, seq: int, n: int = 2, epoch: int = 0) -> bytearray:
    return records(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)


def marker(pid: int, kind: ControlRecordType, coordinator_epoch: int = 0, epoch: int = 0) -> bytearray:
    return build_control_batch(pid, epoch, EndTxnMarker(kind, coordinator_epoch), 1_000)


def open_log(path: Path, clean: bool = True) -> Log:
    return Log(str(path), small_config(segment_bytes=100_000), had_clean_shutdown=clean, time_ms=FakeClock())


def at_end(log: Log) -> None:
    log.high_watermark = log.log_end_offset


# -- the file format ----------------------------------------------------------------------------


def test_aborted_txn_entry_is_kafkas_34_byte_layout() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=21)
    assert entry.encode() == struct.pack(">hqqqq", 0, 7, 10, 20, 21)
    assert len(entry.encode()) == 34
    assert AbortedTxn.decode(entry.encode()) == entry


def test_txn_index_file_holds_entries_in_order_and_reloads(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    assert not os.path.exists(path)  # created on the first append only, as in Kafka
    index.append(AbortedTxn(1, 0, 5, 6))
    index.append(AbortedTxn(2, 3, 9, 10))
    index.close()
    with open(path, "rb") as f:
        assert f.read() == struct.pack(">hqqqq", 0, 1, 0, 5, 6) + struct.pack(">hqqqq", 0, 2, 3, 9, 10)
    again = TransactionIndex(path, 0)
    assert again.entries == [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    with pytest.raises(ValueError):
        again.append(AbortedTxn(3, 4, 9, 10))  # marker offsets must increase


def test_collect_aborted_txns_returns_overlaps_and_stops_when_complete(tmp_path: Path) -> None:
    index = TransactionIndex(str(tmp_path / "x.txnindex"), 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.append(AbortedTxn(2, 8, 12, 13))
    index.append(AbortedTxn(3, 20, 30, 31))
    found = index.collect_aborted_txns(6, 15)
    assert [t.producer_id for t in found.aborted] == [2] and found.is_complete  # 31 >= 15
    found = index.collect_aborted_txns(6, 40)
    assert [t.producer_id for t in found.aborted] == [2, 3] and not found.is_complete
    found = index.collect_aborted_txns(0, 10)
    assert [t.producer_id for t in found.aborted] == [1, 2] and found.is_complete
    index.truncate_to(12)
    assert [t.producer_id for t in index.entries] == [1]
    assert os.path.getsize(index.path) == 34


def test_corrupt_txn_index_is_named_and_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"\x00" * 35)
    index = TransactionIndex(str(path), 0)
    assert index.needs_rebuild and not path.exists() and len(index) == 0
    assert str(path) in caplog.text
    with pytest.raises(CorruptTxnIndexException):
        from kafkapy.server.log.transaction_index import _decode_all

        _decode_all("f", b"\x00" * 34 * 2 + b"\x01")


def test_control_batch_round_trip() -> None:
    data = marker(42, ABORT, coordinator_epoch=9, epoch=3)
    header = read_header(data)
    assert header.is_control and header.is_transactional and header.producer_id == 42
    assert header.producer_epoch == 3 and header.base_sequence == -1
    assert parse_control_batch(data) == EndTxnMarker(ABORT, 9)


# -- the log ------------------------------------------------------------------------------------


def test_open_transaction_holds_the_last_stable_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(records(3))  # offsets 0-2, not transactional
    log.append_as_leader(txn_batch(1, 0))  # 3-4: opens producer 1's transaction
    log.append_as_leader(records(2))  # 5-6
    at_end(log)
    assert log.first_unstable_offset == 3 and log.last_stable_offset == 3
    log.append_as_leader(marker(1, COMMIT), from_coordinator=True)  # 7
    # The marker is not replicated yet: the transaction stays unstable until the HW passes it.
    assert log.last_stable_offset == 3
    at_end(log)
    assert log.first_unstable_offset is None and log.last_stable_offset == 8
    assert log.collect_aborted_transactions(0, 8) == []


def test_abort_marker_writes_the_txn_index_with_the_lso(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(1, 0))  # 0-1
    log.append_as_leader(txn_batch(2, 0))  # 2-3: another open transaction
    log.append_as_leader(marker(1, ABORT), from_coordinator=True)  # 4
    entries = log.active_segment.txn_index.entries
    # Producer 2's transaction still open at 2: that is the LSO right after the marker.
    assert entries == [AbortedTxn(1, 0, 4, 2)]
    log.append_as_leader(marker(2, ABORT), from_coordinator=True)  # 5
    assert log.active_segment.txn_index.entries[-1] == AbortedTxn(2, 2, 5, 6)
    assert [t.producer_id for t in log.collect_aborted_transactions(0, 6)] == [1, 2]
    assert [t.producer_id for t in log.collect_aborted_transactions(5, 6)] == [2]


def test_clients_cannot_write_markers_and_zombie_coordinators_are_fenced(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    with pytest.raises(InvalidRecordException):
        log.append_as_leader(marker(1, COMMIT))
    log.append_as_leader(txn_batch(1, 0))
    log.append_as_leader(marker(1, COMMIT, coordinator_epoch=5), from_coordinator=True)
    log.append_as_leader(txn_batch(1, 2))
    with pytest.raises(TransactionCoordinatorFencedException):
        log.append_as_leader(marker(1, ABORT, coordinator_epoch=4), from_coordinator=True)
    with pytest.raises(InvalidTxnStateException):
        log.append_as_leader(records(1, producer_id=1, producer_epoch=0, base_sequence=4))
    log.append_as_leader(marker(1, ABORT, coordinator_epoch=5, epoch=1), from_coordinator=True)
    with pytest.raises(ProducerFencedException):
        log.append_as_leader(marker(1, ABORT, coordinator_epoch=5, epoch=0), from_coordinator=True)


def test_open_transaction_survives_a_clean_restart_through_the_snapshot(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(records(2))
    log.append_as_leader(txn_batch(1, 0))  # 2-3 open
    log.close()
    log = open_log(tmp_path / "t-0")
    at_end(log)
    assert log.producer_state.snapshot_entries()[0].current_txn_first_offset == 2
    assert log.last_stable_offset == 2
    log.append_as_leader(marker(1, ABORT), from_coordinator=True)
    at_end(log)
    assert log.last_stable_offset == log.log_end_offset == 5
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(1, 2, 4, 5)]


def test_unclean_restart_rebuilds_lost_txn_index_entries(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(1, 0))
    log.append_as_leader(txn_batch(2, 0))
    log.append_as_leader(marker(1, ABORT), from_coordinator=True)
    log.flush()
    path = log.active_segment.txn_index.path
    for name in os.listdir(log.dir):  # a crash before any snapshot or index write
        if name.endswith((".snapshot", ".txnindex")):
            os.unlink(os.path.join(log.dir, name))
    log = open_log(tmp_path / "t-0", clean=False)
    assert os.path.exists(path)
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 4, 2)]
    at_end(log)
    assert log.last_stable_offset == 2  # producer 2's transaction is still open


def test_txn_index_goes_with_its_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(1, 0))
    log.append_as_leader(marker(1, ABORT), from_coordinator=True)
    path = log.active_segment.txn_index.path
    log.truncate_to(2)
    assert log.collect_aborted_transactions(0, 10) == [] and os.path.getsize(path) == 0
    log.append_as_leader(marker(1, ABORT), from_coordinator=True)
    log.roll()
    log.append_as_leader(records(1))
    at_end(log)
    log.maybe_increment_log_start_offset(3)
    log.delete_old_segments()
    assert not os.path.exists(path)


def test_follower_append_tracks_transactions_like_the_leader(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader-0")
    leader.append_as_leader(txn_batch(1, 0))
    leader.append_as_leader(marker(1, ABORT), from_coordinator=True)
    follower = open_log(tmp_path / "follower-0")
    for segment in leader.log_segments:
        with open(segment.log.path, "rb") as f:
            data = f.read()
        if data:
            follower.append_as_follower(data)
    assert follower.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 2, 3)]
