"""Reading __consumer_offsets back: every (key, value) record of a partition's log, in order.

Runs on an io thread (file reads block). Batches are read through `Log.read` (file regions,
`offsets.load.buffer.size` bytes at a time) and decoded here; compressed batches (another
broker or an older Kafka may have written them) are decompressed with kafka-python's codecs,
the same libraries the clients use. Control batches (transaction markers) carry no group data
and are skipped by `read_log_records`; `read_committed_records` instead holds each producer's
transactional records (TxnOffsetCommit) until its marker, yields them on COMMIT, drops them on
ABORT, and leaves those of still-open transactions in `open_txns`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

from kafkapy.protocol.control_records import parse_control_batch
from kafkapy.protocol.record_batch import (
    iter_batches,
)
from kafkapy.protocol.record_codec import decode_batch_records

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def read_log_records(
    log: Any, end_offset: int, buffer_size: int
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record from the log start offset up to `end_offset` (blocking)."""
    offset = log.log_start_offset
    while offset < end_offset:
        info = log.read(offset, buffer_size, end_offset, True)
        if not info.records:
            return
        data = b"".join(os.pread(r.fd, r.length, r.position) for r in info.records)
        view = memoryview(data)
        progressed = False
        for position, header in iter_batches(view):
            if header.next_offset <= offset:
                continue
            progressed = True
            offset = header.next_offset
            if header.is_control:
                continue
            for record in decode_batch_records(view, position):
                yield record.key, record.value
        if not progressed:
            return


class CommittedRecordsReader:
    """(key, value) of the records a read_committed reader would apply, in marker order."""

    def __init__(self, log: Any, end_offset: int, buffer_size: int) -> None:
        self.log, self.end_offset, self.buffer_size = log, end_offset, buffer_size
        # producer id -> records of its open transaction (left here after iteration)
        self.open_txns: dict[int, list[tuple[bytes | None, bytes | None]]] = {}

    def __iter__(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        log = self.log
        offset = log.log_start_offset
        while offset < self.end_offset:
            info = log.read(offset, self.buffer_size, self.end_offset, True)
            if not info.records:
                return
            data = b"".join(os.pread(r.fd, r.length, r.position) for r in info.records)
            view = memoryview(data)
            progressed = False
            for position, header in iter_batches(view):
                if header.next_offset <= offset:
                    continue
                progressed = True
                offset = header.next_offset
                if header.is_control:
                    pending = self.open_txns.pop(header.producer_id, [])
                    if not parse_control_batch(view, position).is_abort:
                        yield from pending
                    continue
                records = [(r.key, r.value) for r in decode_batch_records(view, position)]
                if header.is_transactional:
                    self.open_txns.setdefault(header.producer_id, []).extend(records)
                else:
                    yield from records
            if not progressed:
                return
