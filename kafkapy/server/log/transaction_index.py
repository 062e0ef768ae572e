"""TransactionIndex: a segment's `.txnindex`, the aborted transactions whose markers it holds.

File format (Kafka's TransactionIndex, version 0), a sequence of 34-byte entries, big-endian:

    version          int16  0
    producerId       int64
    firstOffset      int64  first offset of the aborted transaction
    lastOffset       int64  offset of its ABORT marker
    lastStableOffset int64  the last stable offset right after the marker was written

Entries are appended in marker order (lastOffset ascending). The file is created on the
first append only, as in Kafka, so most segments have none. The entries are also kept in
memory: they are few (one per aborted transaction) and a read_committed fetch asks for them
on every request.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import struct
from dataclasses import dataclass

from kafkapy.protocol.errors import KafkaError
from kafkapy.server.log.durability import FSYNC_EACH, Syncer

logger = logging.getLogger("kafkapy.log.TransactionIndex")

TXN_INDEX_SUFFIX = ".txnindex"
TXN_INDEX_VERSION = 0

# version int16 | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class CorruptTxnIndexException(KafkaError):
    """A `.txnindex` that is cut mid-entry, of an unknown version or out of order."""


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            TXN_INDEX_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )

    @classmethod
    def decode(cls, data: bytes | memoryview, position: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != TXN_INDEX_VERSION:
            raise CorruptTxnIndexException(f"Unexpected aborted transaction version {version}")
        return cls(pid, first, last, lso)


@dataclass(slots=True)
class TxnIndexSearchResult:
    aborted: list[AbortedTxn]
    # True once an entry's last stable offset reaches the upper bound: no later segment can
    # hold an aborted transaction that starts below it (Kafka's isComplete).
    is_complete: bool


class TransactionIndex:
    def __init__(self, path: str, start_offset: int) -> None:
        self.path = path
        self.start_offset = start_offset
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []  # entries' lastOffset, for bisection
        self._fd: int | None = None
        # True when the file was corrupt and dropped: the log rebuilds it from its batches.
        self.needs_rebuild = False
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            try:
                self._entries = _decode_all(path, data)
            except CorruptTxnIndexException as e:
                logger.warning("%s; deleting it, it will be rebuilt from the log", e.message)
                os.unlink(path)
                self.needs_rebuild = True
            self._last_offsets = [e.last_offset for e in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    @property
    def last_offset(self) -> int | None:
        return self._last_offsets[-1] if self._last_offsets else None

    def append(self, txn: AbortedTxn) -> None:
        last = self.last_offset
        if last is not None and txn.last_offset <= last:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} "
                f"is not greater than current last offset {last} of index {self.path}"
            )
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, txn.encode())
        self._entries.append(txn)
        self._last_offsets.append(txn.last_offset)

    def append_if_new(self, txn: AbortedTxn) -> bool:
        """Append unless an entry for this marker (or a later one) is already there: rebuilds
        from the log replay markers the index may already hold."""
        last = self.last_offset
        if last is not None and txn.last_offset <= last:
            return False
        self.append(txn)
        return True

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset)."""
        out: list[AbortedTxn] = []
        for txn in self._entries[bisect.bisect_left(self._last_offsets, fetch_offset) :]:
            if txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(out, True)
        return TxnIndexSearchResult(out, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset`."""
        keep = bisect.bisect_left(self._last_offsets, offset)
        if keep == len(self._entries):
            return
        del self._entries[keep:]
        del self._last_offsets[keep:]
        if os.path.exists(self.path):
            os.truncate(self.path, keep * ENTRY_SIZE)

    def reset(self) -> None:
        self.truncate_to(-1)

    def sanity_check(self) -> None:
        if os.path.exists(self.path) and os.path.getsize(self.path) % ENTRY_SIZE != 0:
            raise CorruptTxnIndexException(
                f"Transaction index file {self.path} has size {os.path.getsize(self.path)}, "
                f"not a multiple of {ENTRY_SIZE}"
            )

    def flush(self, syncer: Syncer = FSYNC_EACH) -> None:
        if self._fd is not None:
            syncer.sync_file(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename_to(self, path: str) -> None:
        """The file was moved with its directory: later opens use the new path."""
        self.path = path

    def rename_file_to(self, path: str) -> None:
        """Rename the file itself (the cleaner's suffix changes); an open descriptor stays valid."""
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _decode_all(path: str, data: bytes) -> list[AbortedTxn]:
    if len(data) % ENTRY_SIZE != 0:
        raise CorruptTxnIndexException(
            f"Transaction index file {path} has size {len(data)}, not a multiple of {ENTRY_SIZE}"
        )
    entries = [AbortedTxn.decode(data, pos) for pos in range(0, len(data), ENTRY_SIZE)]
    for prev, cur in zip(entries, entries[1:], strict=False):
        if cur.last_offset <= prev.last_offset:
            raise CorruptTxnIndexException(f"Transaction index file {path} has entries out of order")
    return entries
