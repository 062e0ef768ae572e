"""kafkapy-dump-log against segments written by the broker's own LogSegment: Kafka 2.8's lines."""

from __future__ import annotations

import os
import struct

import pytest
from click.testing import CliRunner

from kafkapy.protocol.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    Attr,
    CompressionType,
    compute_crc,
    read_header,
    set_base_offset,
)
from kafkapy.protocol.record_codec import build_batch, compress_batch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_segment import LogSegment
from kafkapy.tools.dump_log import main

T0 = 1_600_000_000_000


def _append(segment: LogSegment, batch: bytearray, base_offset: int, leader_epoch: int = 0) -> None:
    set_base_offset(batch, 0, base_offset, leader_epoch)
    h = read_header(batch)
    segment.append(h.last_offset, h.max_timestamp, h.last_offset, memoryview(batch))


def _control_batch(coordinator_epoch: int) -> bytearray:
    batch = build_batch(
        [(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, coordinator_epoch), [], T0 + 9)],
        producer_id=7,
        producer_epoch=0,
        base_sequence=-1,
        transactional=True,
    )
    (attrs,) = struct.unpack_from(">h", batch, ATTRIBUTES_OFFSET)
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, attrs | Attr.CONTROL)
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(memoryview(batch), 0, len(batch)))
    return batch


@pytest.fixture
def segment_dir(tmp_path) -> str:
    config = LogConfig(segment_index_bytes=1200, index_interval_bytes=1)
    seg = LogSegment.open(str(tmp_path), 0, config, lambda: T0)
    _append(
        seg,
        build_batch(
            [
                (b"k0", b"hello", [("h1", b"x"), ("h2", None)], T0),
                (None, b"world", [], T0 + 5),
                (b"k2", None, [], T0 + 2),
            ]
        ),
        0,
    )
    _append(
        seg,
        compress_batch(
            build_batch(
                [(b"a", b"1", [], T0 + 6), (b"b", b"2", [], T0 + 7)],
                producer_id=7,
                producer_epoch=0,
                base_sequence=3,
            ),
            CompressionType.GZIP,
        ),
        3,
    )
    _append(seg, _control_batch(5), 5)
    seg.close()
    return str(tmp_path)


def _run(*args: str) -> tuple[int, list[str], list[str]]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout.splitlines(), result.stderr.splitlines()


def _path(d: str, suffix: str) -> str:
    return os.path.join(d, "00000000000000000000" + suffix)


def test_shallow_dump_prints_one_line_per_batch_with_kafka_fields(segment_dir: str) -> None:
    code, out, err = _run("--files", _path(segment_dir, ".log"))
    assert code == 0 and err == []
    assert out[0] == f"Dumping {_path(segment_dir, '.log')}"
    assert out[1] == "Starting offset: 0"
    first = out[2]
    assert first.startswith(
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        f"partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: {T0 + 5} size: "
    )
    assert " magic: 2 compresscodec: NONE crc: " in first and first.endswith(" isvalid: true")
    assert out[3].startswith(
        "baseOffset: 3 lastOffset: 4 count: 2 baseSequence: 3 lastSequence: 4 producerId: 7 "
        "producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false"
    )
    assert "compresscodec: GZIP" in out[3]
    assert "isTransactional: true isControl: true" in out[4]
    assert len(out) == 5


def test_print_data_log_adds_record_lines_with_keys_payloads_and_control_markers(segment_dir: str) -> None:
    code, out, _ = _run("--files", _path(segment_dir, ".log"), "--print-data-log")
    assert code == 0
    records = [line for line in out if line.startswith("|")]
    assert records == [
        f"| offset: 0 CreateTime: {T0} keysize: 2 valuesize: 5 sequence: -1 headerKeys: [h1,h2] key: k0 payload: hello",
        f"| offset: 1 CreateTime: {T0 + 5} keysize: -1 valuesize: 5 sequence: -1 headerKeys: [] payload: world",
        f"| offset: 2 CreateTime: {T0 + 2} keysize: 2 valuesize: -1 sequence: -1 headerKeys: [] key: k2",
        f"| offset: 3 CreateTime: {T0 + 6} keysize: 1 valuesize: 1 sequence: 3 headerKeys: [] key: a payload: 1",
        f"| offset: 4 CreateTime: {T0 + 7} keysize: 1 valuesize: 1 sequence: 4 headerKeys: [] key: b payload: 2",
        f"| offset: 5 CreateTime: {T0 + 9} keysize: 4 valuesize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5",
    ]


def test_deep_iteration_without_print_data_log_leaves_out_contents(segment_dir: str) -> None:
    _, out, _ = _run("--files", _path(segment_dir, ".log"), "--deep-iteration")
    assert f"| offset: 0 CreateTime: {T0} keysize: 2 valuesize: 5 sequence: -1 headerKeys: [h1,h2]" in out


def test_trailing_partial_batch_is_reported_as_invalid_bytes(segment_dir: str) -> None:
    with open(_path(segment_dir, ".log"), "ab") as f:
        f.write(b"\x00" * 30)
    _, out, _ = _run("--files", _path(segment_dir, ".log"))
    assert out[-1] == "Found 30 invalid bytes at the end of 00000000000000000000.log"


def test_corrupted_batch_shows_isvalid_false(segment_dir: str) -> None:
    path = _path(segment_dir, ".log")
    with open(path, "r+b") as f:
        f.seek(70)
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0xFF]))
    _, out, _ = _run("--files", path)
    assert out[2].endswith("isvalid: false")
    assert out[3].endswith("isvalid: true")


def test_index_dump_prints_entries_that_match_the_log(segment_dir: str) -> None:
    code, out, err = _run("--files", _path(segment_dir, ".index"))
    assert code == 0 and err == []
    # Like Kafka, the first batch of a segment gets no entry (no bytes since the last entry yet).
    assert out[1:] == ["offset: 4 position: 105", "offset: 5 position: 204"]


def test_index_mismatch_is_reported_on_stderr(segment_dir: str) -> None:
    path = _path(segment_dir, ".index")
    with open(path, "r+b") as f:
        f.write(struct.pack(">ii", 1, 0))  # claims offset 1 is the last offset of the batch at 0
    code, out, err = _run("--files", path, "--verify-index-only")
    assert code == 0
    assert out == [f"Dumping {path}"]
    assert err == [f"Mismatches in :{os.path.abspath(path)}", "  Index offset: 1, log offset: 2"]


def test_time_index_dump_prints_entries_checked_against_batches(segment_dir: str) -> None:
    code, out, err = _run("--files", _path(segment_dir, ".timeindex"))
    assert code == 0 and err == []
    assert out[1:] == [f"timestamp: {T0 + 7} offset: 4", f"timestamp: {T0 + 9} offset: 5"]


def test_index_sanity_check(segment_dir: str) -> None:
    path = _path(segment_dir, ".index")
    code, out, _ = _run("--files", path, "--index-sanity-check")
    assert code == 0 and out[1] == f"{path} passed sanity check."
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00")
    code, _, err = _run("--files", path, "--index-sanity-check")
    assert code == 1 and "is corrupt, found" in err[0]


def test_unknown_suffix_is_ignored_and_files_is_required(segment_dir: str) -> None:
    code, out, err = _run("--files", os.path.join(segment_dir, "x.txt"))
    assert code == 0 and err == [f"Ignoring unknown file {os.path.join(segment_dir, 'x.txt')}"]
    code, _, err = _run()
    assert code == 1 and err == ['Missing required argument "[files]"']


def test_time_index_timestamp_mismatch_is_reported(segment_dir: str) -> None:
    path = _path(segment_dir, ".timeindex")
    with open(path, "r+b") as f:
        f.write(struct.pack(">qi", T0 + 1, 4))
    _, out, err = _run("--files", path)
    assert out[1] == f"timestamp: {T0 + 1} offset: 4"
    assert err == [
        f"Found timestamp mismatch in :{os.path.abspath(path)}",
        f"  Index timestamp: {T0 + 1}, log timestamp: {T0 + 7}",
    ]


def test_producer_snapshot_prints_one_line_per_producer_as_kafka_does(tmp_path) -> None:
    from kafkapy.server.log.producer_snapshots import ProducerSnapshots
    from kafkapy.server.log.producer_state_snapshot import SnapshotEntry, snapshot_path

    ProducerSnapshots(str(tmp_path), "t-0").write(
        110, [SnapshotEntry(42, 3, 9, 109, 4, T0), SnapshotEntry(43, 0, -1, -1, 0, -1)]
    )
    path = snapshot_path(str(tmp_path), 110)
    code, out, err = _run("--files", path)
    assert code == 0 and err == []
    assert out == [
        f"Dumping {path}",
        "producerId: 42 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: None "
        f"lastTimestamp: {T0} firstSequence: 5 lastSequence: 9 lastOffset: 109 offsetDelta: 4 timestamp: {T0}",
        "producerId: 43 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: None lastTimestamp: -1 ",
    ]
    with open(path, "r+b") as f:
        f.seek(10)
        f.write(b"\xff")
    code, out, err = _run("--files", path)
    assert code == 0 and out == [f"Dumping {path}"]
    assert len(err) == 1 and err[0].startswith("Snapshot is corrupt (CRC is no longer valid).")
