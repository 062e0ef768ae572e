"""Loading __consumer_offsets with transactional offset commits: committed transactions'
offsets apply at their marker, aborted ones vanish, open ones stay pending."""

from __future__ import annotations

from pathlib import Path

from kafkapy.protocol.control_records import ControlRecordType, EndTxnMarker, build_control_batch
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.coordinator.group_metadata_manager import _read_partition
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig


def offsets_batch(group: str, offset: int, pid: int = -1) -> bytearray:
    record = (codec.offset_key(group, "t", 0), codec.offset_value(codec.OffsetAndMetadata(offset)), (), 1_000)
    if pid < 0:
        return build_batch([record])
    return build_batch([record], producer_id=pid, producer_epoch=0, transactional=True)


def marker(pid: int, kind: ControlRecordType) -> bytearray:
    return build_control_batch(pid, 0, EndTxnMarker(kind, 0), 1_000)


def test_load_applies_committed_drops_aborted_keeps_open_pending(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "__consumer_offsets-0"), LogConfig())
    log.append_as_leader(offsets_batch("plain", 5))
    log.append_as_leader(offsets_batch("committed", 10, pid=1), from_coordinator=True)
    log.append_as_leader(offsets_batch("aborted", 20, pid=2), from_coordinator=True)
    log.append_as_leader(offsets_batch("open", 30, pid=3), from_coordinator=True)
    log.append_as_leader(marker(2, ControlRecordType.ABORT), from_coordinator=True)
    log.append_as_leader(marker(1, ControlRecordType.COMMIT), from_coordinator=True)
    offsets, _groups, pending = _read_partition(log, 1 << 20)
    assert {g: {tp: om.offset for tp, om in o.items()} for g, o in offsets.items()} == {
        "plain": {("t", 0): 5},
        "committed": {("t", 0): 10},
    }
    assert {pid: list(groups) for pid, groups in pending.items()} == {3: ["open"]}
    assert pending[3]["open"][("t", 0)].offset == 30
    log.close()
