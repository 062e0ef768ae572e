"""The `<offset>.snapshot` file format, byte for byte (Kafka's producer snapshot, version 1)."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from kafkapy.server.log.producer_snapshots import ProducerSnapshots
from kafkapy.server.log.producer_state import ProducerStateEntry
from kafkapy.server.log.producer_state_snapshot import (
    CorruptSnapshotException,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    list_snapshot_offsets,
    snapshot_file_name,
)

ENTRY = SnapshotEntry(
    producer_id=42, producer_epoch=3, last_sequence=9, last_offset=109, offset_delta=4, timestamp=1234
)
# The entry written out by hand, field by field, as Kafka's reader expects it.
ENTRY_BYTES = (
    b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # producerId 42
    b"\x00\x03"  # producerEpoch 3
    b"\x00\x00\x00\x09"  # lastSequence 9
    b"\x00\x00\x00\x00\x00\x00\x00\x6d"  # lastOffset 109
    b"\x00\x00\x00\x04"  # offsetDelta 4
    b"\x00\x00\x00\x00\x00\x00\x04\xd2"  # timestamp 1234
    b"\xff\xff\xff\xff"  # coordinatorEpoch -1
    b"\xff\xff\xff\xff\xff\xff\xff\xff"  # currentTxnFirstOffset -1
)


def expected_file(body: bytes) -> bytes:
    return b"\x00\x01" + crc32c(body).to_bytes(4, "big") + body


def test_snapshot_bytes_match_kafkas_layout_and_read_back() -> None:
    body = b"\x00\x00\x00\x01" + ENTRY_BYTES
    data = encode_snapshot([ENTRY])
    assert data == expected_file(body)
    assert len(data) == 2 + 4 + 4 + 46
    assert decode_snapshot(data) == [ENTRY]


def test_an_empty_state_is_a_valid_snapshot() -> None:
    assert encode_snapshot([]) == expected_file(b"\x00\x00\x00\x00")
    assert decode_snapshot(encode_snapshot([])) == []


def test_file_name_is_the_zero_padded_offset() -> None:
    assert snapshot_file_name(1234) == "00000000000000001234.snapshot"


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda d: d[:-1], "schema validation"),
        (lambda d: d[:5], "schema validation"),
        (lambda d: d[:20] + bytes([d[20] ^ 0xFF]) + d[21:], "CRC is no longer valid"),
        (lambda d: b"\x00\x02" + d[2:], "unknown file version 2"),
    ],
    ids=["cut-by-one", "cut-inside-header", "flipped-byte", "version-2"],
)
def test_damaged_snapshots_are_refused(mangle, message: str) -> None:
    with pytest.raises(CorruptSnapshotException, match=message):
        decode_snapshot(mangle(encode_snapshot([ENTRY, ENTRY])))


def test_a_count_that_disagrees_with_the_length_is_refused_even_with_a_good_crc() -> None:
    body = b"\x00\x00\x00\x02" + ENTRY_BYTES
    with pytest.raises(CorruptSnapshotException, match="schema validation"):
        decode_snapshot(expected_file(body))


def test_entry_keeps_the_last_batch_and_derives_its_first_sequence_and_offset() -> None:
    entry = ProducerStateEntry.from_snapshot(ENTRY)
    (batch,) = entry.batches
    assert (batch.first_seq, batch.last_seq, batch.first_offset, batch.last_offset) == (5, 9, 105, 109)
    assert entry.to_snapshot() == ENTRY


def test_first_sequence_wraps_below_zero_like_kafkas_decrement() -> None:
    wrapped = SnapshotEntry(7, 0, last_sequence=1, last_offset=10, offset_delta=3, timestamp=0)
    (batch,) = ProducerStateEntry.from_snapshot(wrapped).batches
    assert batch.first_seq == 2**31 - 2  # ..., 2147483646, 2147483647, 0, 1


def test_a_write_prepared_before_a_truncation_installs_nothing(tmp_path) -> None:
    snapshots = ProducerSnapshots(str(tmp_path), "t-0")
    job = snapshots.prepare_write(100, [ENTRY])
    assert job is not None
    snapshots.delete_above(50)  # the log lost offset 50 on while the write was queued
    job()
    assert list_snapshot_offsets(str(tmp_path)) == []
    assert snapshots.offsets == []
    assert not list(tmp_path.iterdir())  # and no temporary file is left behind


def test_an_existing_snapshot_is_not_rewritten(tmp_path) -> None:
    snapshots = ProducerSnapshots(str(tmp_path), "t-0")
    snapshots.write(100, [ENTRY])
    assert snapshots.prepare_write(100, []) is None
    assert decode_snapshot((tmp_path / snapshot_file_name(100)).read_bytes()) == [ENTRY]
    assert struct.unpack(">h", (tmp_path / snapshot_file_name(100)).read_bytes()[:2]) == (1,)
