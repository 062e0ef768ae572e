"""kafkapy's consumer with read_committed: aborted transactions' batches are dropped between
the transaction's first offset and its ABORT marker, as Kafka's Fetcher does."""

from __future__ import annotations

from kafkapy.client.records import decode_record_set
from kafkapy.protocol.control_records import ControlRecordType, EndTxnMarker, build_control_batch
from kafkapy.protocol.record_batch import set_base_offset
from kafkapy.protocol.record_codec import build_batch


def at(offset: int, batch: bytearray) -> bytes:
    set_base_offset(memoryview(batch), 0, offset, 0)
    return bytes(batch)


def txn(pid: int, value: bytes) -> bytearray:
    return build_batch(
        [(None, value, (), 1)], producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True
    )


def marker(pid: int, kind: ControlRecordType) -> bytearray:
    return build_control_batch(pid, 0, EndTxnMarker(kind, 0), 1)


def test_aborted_producer_batches_are_dropped_until_its_abort_marker() -> None:
    data = (
        at(0, txn(1, b"aborted-1"))
        + at(1, txn(2, b"committed-2"))
        + at(2, marker(1, ControlRecordType.ABORT))
        + at(3, txn(1, b"later-1"))  # producer 1's next transaction, not aborted
        + at(4, marker(2, ControlRecordType.COMMIT))
        + at(5, marker(1, ControlRecordType.COMMIT))
        + at(6, build_batch([(None, b"plain", (), 1)]))
    )
    committed, next_offset = decode_record_set("t", 0, data, 0, True, [(1, 0)])
    assert [r.value for r in committed] == [b"committed-2", b"later-1", b"plain"]
    assert next_offset == 7
    everything, _ = decode_record_set("t", 0, data)
    assert [r.value for r in everything] == [b"aborted-1", b"committed-2", b"later-1", b"plain"]
