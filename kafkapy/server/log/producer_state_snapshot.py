"""The `<offset>.snapshot` file: a log's producer state as of `offset` (Kafka's PidSnapshot v1).

Layout, all big-endian (ProducerStateManager's snapshot, version 1, in Kafka 2.x):

    version           int16   always 1
    crc               uint32  CRC-32C of every byte after this field
    count             int32   number of entries that follow
    count x entry:
      producerId            int64
      producerEpoch         int16
      lastSequence          int32  last sequence of the producer's last batch
      lastOffset            int64  last offset of that batch
      offsetDelta           int32  lastOffset - firstOffset of that batch
      timestamp             int64  max timestamp of that batch
      coordinatorEpoch      int32  -1: kafkapy writes no transaction markers
      currentTxnFirstOffset int64  -1: no ongoing transaction

Only the last batch of each producer is kept, so a retry of an older batch is no longer
recognised as a duplicate after a restart: Kafka behaves the same way.

The file name is the offset zero-padded to 20 digits, like a segment's. A file is written to
`<name>.<random>.tmp`, fsynced and renamed over the final name, so a crash leaves either the old file
set or the new one (the loader deletes stray `.tmp` files). At a clean shutdown the syncs are
deferred to one syncfs of the log dir (durability.py): a crash before it may leave the renamed
file empty or cut short, which decode_snapshot rejects as corrupt, and the loader then rebuilds
the state from the log (no clean-shutdown marker was written, so the log is recovered too).
"""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
from dataclasses import dataclass

from crc32c import crc32c

from kafkapy.protocol.errors import KafkaError
from kafkapy.server.log.durability import FSYNC_EACH, Syncer
from kafkapy.server.log.log_segment import filename_prefix

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
NO_COORDINATOR_EPOCH = -1
NO_TXN_FIRST_OFFSET = -1

# version int16 | crc uint32: the prefix the CRC does not cover.
_VERSION_AND_CRC = struct.Struct(">hI")
# count int32: the number of entries, first of the bytes the CRC covers.
_COUNT = struct.Struct(">i")
# producerId int64 | producerEpoch int16 | lastSequence int32 | lastOffset int64 |
# offsetDelta int32 | timestamp int64 | coordinatorEpoch int32 | currentTxnFirstOffset int64
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotException(KafkaError):
    """A snapshot file that cannot be trusted: unknown version, bad CRC or cut short."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_TXN_FIRST_OFFSET


def snapshot_file_name(offset: int) -> str:
    return filename_prefix(offset) + SNAPSHOT_SUFFIX


def snapshot_path(dir_: str, offset: int) -> str:
    return os.path.join(dir_, snapshot_file_name(offset))


def offset_from_snapshot_name(name: str) -> int | None:
    """The offset a `<20 digits>.snapshot` name stands for; None for any other name."""
    stem, ext = os.path.splitext(name)
    return int(stem) if ext == SNAPSHOT_SUFFIX and stem.isdigit() else None


def list_snapshot_offsets(dir_: str) -> list[int]:
    """Offsets of the snapshot files in `dir_`, ascending (none if the dir is gone)."""
    try:
        names = os.listdir(dir_)
    except FileNotFoundError:
        return []
    return sorted(o for o in map(offset_from_snapshot_name, names) if o is not None)


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset,
        )  # fmt: skip
    return _VERSION_AND_CRC.pack(SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    """Parse a snapshot's bytes; raises CorruptSnapshotException with Kafka's wording."""
    if len(data) < _VERSION_AND_CRC.size + _COUNT.size:
        raise CorruptSnapshotException(f"Snapshot failed schema validation: {len(data)} bytes is too short")
    version, crc = _VERSION_AND_CRC.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotException(f"Snapshot contained an unknown file version {version}")
    (count,) = _COUNT.unpack_from(data, _VERSION_AND_CRC.size)
    position = _VERSION_AND_CRC.size + _COUNT.size
    # The structure is checked before the CRC, as Kafka parses the file before checking it.
    if count < 0 or len(data) - position != count * _ENTRY.size:
        raise CorruptSnapshotException(
            f"Snapshot failed schema validation: {count} entries do not fill {len(data) - position} bytes"
        )
    computed = crc32c(data[_VERSION_AND_CRC.size :])
    if crc != computed:
        raise CorruptSnapshotException(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}"
        )
    return [SnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(data[position:])]


def read_snapshot_file(path: str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        return decode_snapshot(f.read())


def write_temp_snapshot(path: str, data: bytes, syncer: Syncer = FSYNC_EACH) -> str:
    """Write and sync `data` to a fresh `<path>.<random>.tmp`; returns that name for `install_snapshot`.

    The name is unique so that two writers of the same snapshot (a roll's queued write and
    close) never rename each other's half-written file.
    """
    temp = f"{path}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        syncer.sync_file(fd)
    finally:
        os.close(fd)
    return temp


def install_snapshot(temp: str, path: str, syncer: Syncer = FSYNC_EACH) -> None:
    """Rename a written temp file over `path` and sync the directory so the rename survives a crash."""
    os.replace(temp, path)
    syncer.sync_dir(os.path.dirname(path))


def delete_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
