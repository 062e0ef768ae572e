"""Crash-safe replacement of segments by a cleaned one, and its completion at start-up.

The cleaner writes `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`, and
`.txnindex.cleaned` when it keeps ABORT markers), flushed.
`replace_segments` (under the log's lock) then renames them to `.swap`, renames the old
segments to `.deleted` and deletes them, and renames the `.swap` files to their final names.
A crash at any point leaves a state the loader finishes (Kafka's LogLoader):
- `.cleaned` files: the swap never began; deleted, the old segments are intact;
- `<base>.log.swap`: the cleaned data is complete; every segment whose base offset lies in
  [base, the swap segment's next offset) is one it replaces and is deleted, and the `.swap`
  file takes the final name (its offset and time indexes are rebuilt, their `.swap` files
  deleted; its `.txnindex.swap`, which the log cannot rebuild, takes its final name);
- `.deleted` files: deleted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from kafkapy.server.log.durability import fsync_dir
from kafkapy.server.log.file_records import FileRecords
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_paths,
    txn_index_path,
)
from kafkapy.server.log.offset_index import OffsetIndex
from kafkapy.server.log.time_index import TimeIndex
from kafkapy.server.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

logger = logging.getLogger("kafkapy.log.LogLoader")

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


# The `.swap` files the loader keeps: the data, and the aborted transactions it cannot rebuild.
_KEPT_SWAPS = (LOG_SUFFIX + SWAP_SUFFIX, TXN_INDEX_SUFFIX + SWAP_SUFFIX)


class SegmentsChangedError(Exception):
    """The segments a cleaned segment was built from changed meanwhile (truncation, retention)."""


def open_segment_with_suffix(
    dir_: str, base_offset: int, config: LogConfig, suffix: str, time_ms: Callable[[], int] | None = None
) -> LogSegment:
    """A new, empty segment whose three files carry `suffix` (leftovers of the same name removed)."""
    paths = [p + suffix for p in (*segment_paths(dir_, base_offset), txn_index_path(dir_, base_offset))]
    for path in paths:
        if os.path.exists(path):
            os.unlink(path)
    log_path, index_path, time_index_path, txn_path = paths
    clock = time_ms or (lambda: 0)
    return LogSegment(
        FileRecords(log_path),
        OffsetIndex(index_path, base_offset, config.segment_index_bytes),
        TimeIndex(time_index_path, base_offset, config.segment_index_bytes),
        base_offset, config.index_interval_bytes, 0, clock,
        txn_index=TransactionIndex(txn_path, base_offset),
    )  # fmt: skip


def change_file_suffixes(segment: LogSegment, old_suffix: str, new_suffix: str) -> None:
    """Rename the segment's files (indexes first: a crash after the `.log` rename leaves
    offset and time indexes the loader rebuilds anyway; the `.txnindex`, which cannot be
    rebuilt from a cleaned segment, is renamed before the `.log` so that a `.log.swap` the
    loader finds has its `.txnindex` either as `.txnindex.swap` or already final)."""
    txn = segment.txn_index
    if not txn.path.endswith(old_suffix):
        raise ValueError(f"Expected {txn.path} to end with {old_suffix!r}")
    for f in (segment.offset_index, segment.time_index, segment.log):
        if not f.path.endswith(old_suffix):
            raise ValueError(f"Expected {f.path} to end with {old_suffix!r}")
    txn.rename_file_to(txn.path[: len(txn.path) - len(old_suffix)] + new_suffix)
    for f in (segment.offset_index, segment.time_index, segment.log):
        f.rename_to(f.path[: len(f.path) - len(old_suffix)] + new_suffix)


def complete_swaps(dir_: str, prefix: str) -> None:
    """Finish the swaps a crash interrupted (called by the loader before opening segments)."""
    names = os.listdir(dir_)
    for name in names:
        if name.endswith(SWAP_SUFFIX) and not name.endswith(_KEPT_SWAPS):
            os.unlink(os.path.join(dir_, name))  # a swap's offset or time index: rebuilt from its .log
    for name in sorted(n for n in names if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)):
        stem = name[: -len(LOG_SUFFIX + SWAP_SUFFIX)]
        if not stem.isdigit():
            continue
        base = int(stem)
        swap_path = os.path.join(dir_, name)
        records = FileRecords(swap_path)
        try:
            next_offset = base
            for _, header in records.batches_from(0):
                next_offset = header.next_offset
        finally:
            records.close()
        for other in sorted(os.listdir(dir_)):
            other_stem, ext = os.path.splitext(other)
            if ext != LOG_SUFFIX or not other_stem.isdigit():
                continue
            other_base = int(other_stem)
            if base <= other_base < max(next_offset, base + 1):
                logger.info(
                    "%s Deleting segment %d replaced by the swap file %s", prefix, other_base, swap_path
                )
                for path in (*segment_paths(dir_, other_base), txn_index_path(dir_, other_base)):
                    if os.path.exists(path):
                        os.unlink(path)
        # The cleaned segment's aborted transactions: its `.txnindex.swap`, or its final
        # `.txnindex` when the crash came after that rename (the replaced segments are gone then).
        txn_swap = txn_index_path(dir_, base) + SWAP_SUFFIX
        if os.path.exists(txn_swap):
            os.replace(txn_swap, txn_index_path(dir_, base))
        final = os.path.join(dir_, stem + LOG_SUFFIX)
        logger.info("%s Recovering swap file %s into %s", prefix, swap_path, final)
        os.replace(swap_path, final)
        # The indexes of the final name belonged to a deleted segment or are absent: rebuilt.
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = os.path.join(dir_, stem + suffix)
            if os.path.exists(path):
                os.unlink(path)
    if any(n.endswith(SWAP_SUFFIX) for n in names):
        fsync_dir(dir_)


def delete_replaced(segments: list[LogSegment]) -> None:
    """Rename the replaced segments to `.deleted`, then delete them. Readers already holding
    a segment's `.log` descriptor keep reading it after the unlink (see file_records)."""
    for segment in segments:
        change_file_suffixes(segment, "", DELETED_SUFFIX)
    for segment in segments:
        segment.delete()
