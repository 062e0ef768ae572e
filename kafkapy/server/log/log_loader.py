"""Loading a log directory: its segments, their indexes, and recovery after an unclean shutdown.

Steps, after Kafka's LogLoader:
1. delete leftovers of interrupted operations (`.deleted`, `.cleaned`, `.tmp` files), finish
   an interrupted cleaner swap (`.swap` files, see segment_swap.py) and delete index files
   whose `.log` is gone;
2. open every segment; one whose offset or time index is missing or fails its sanity check
   is recovered at once (indexes rebuilt from the batches);
3. after an unclean shutdown, recover every segment from the one holding the recovery point
   on; the first one that had to be truncated ends the log: later segments are deleted;
4. make sure an (empty) active segment exists and give its indexes room to grow.

The Log then rebuilds its producer state from the newest snapshot plus the batch headers
after it (`headers_from`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sortedcontainers import SortedDict

from kafkapy.protocol.control_records import EndTxnMarker, parse_control_batch
from kafkapy.protocol.record_batch import BatchHeader
from kafkapy.server.log.abstract_index import CorruptIndexException
from kafkapy.server.log.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    LeaderEpochCheckpointFile,
    LeaderEpochFileCache,
)
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_paths,
)
from kafkapy.server.log.offset_checkpoint import CheckpointFormatError
from kafkapy.server.log.segment_swap import CLEANED_SUFFIX, SWAP_SUFFIX, complete_swaps
from kafkapy.server.log.transaction_index import TXN_INDEX_SUFFIX

logger = logging.getLogger("kafkapy.log.LogLoader")

_TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")


@dataclass(slots=True)
class LoadedLog:
    segments: SortedDict  # base offset -> LogSegment
    next_offset: int
    recovery_point: int
    log_start_offset: int


def load_log(
    dir_: str,
    config: LogConfig,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    time_ms: Callable[[], int],
    roll_jitter: Callable[[], int],
) -> LoadedLog:
    prefix = f"[Log partition={os.path.basename(dir_)}, dir={os.path.dirname(dir_)}]"
    base_offsets = _scan_files(dir_, prefix)
    # After an unclean shutdown the segments from the one holding the recovery point on are
    # recovered (indexes rebuilt) anyway: checking their indexes first, which are still
    # preallocated, would map and read 10 MB files for nothing (Kafka skips it too).
    recovered_from = (
        max((b for b in base_offsets if b <= recovery_point), default=-1) if not had_clean_shutdown else None
    )
    segments: SortedDict = SortedDict()
    for base_offset in base_offsets:
        check = recovered_from is None or base_offset < recovered_from
        segments[base_offset] = _open_segment(dir_, base_offset, config, time_ms, prefix, check)
    if not had_clean_shutdown and segments:
        _recover_unflushed(segments, recovery_point, prefix)
    if not segments:
        start = max(log_start_offset, 0)
        segments[start] = LogSegment.open(dir_, start, config, time_ms, roll_jitter())
    active: LogSegment = segments.peekitem(-1)[1]
    active.resize_indexes(config.segment_index_bytes)
    next_offset = active.read_next_offset()
    first_base = segments.peekitem(0)[0]
    log_start_offset = min(max(log_start_offset, first_base), next_offset)
    recovery_point = next_offset if had_clean_shutdown else min(recovery_point, next_offset)
    return LoadedLog(segments, next_offset, max(recovery_point, log_start_offset), log_start_offset)


def _scan_files(dir_: str, prefix: str) -> list[int]:
    names = os.listdir(dir_)
    base_offsets: list[int] = []
    changed = False
    for name in names:
        path = os.path.join(dir_, name)
        if name.endswith(_TEMP_SUFFIXES):
            logger.info("%s Deleting stray temporary file %s", prefix, path)
            os.unlink(path)
            changed = True
    if changed or any(n.endswith(SWAP_SUFFIX) for n in names):
        complete_swaps(dir_, prefix)
        names = os.listdir(dir_)
    # (One listing per log otherwise: start-up after a clean shutdown lists 10k directories.)
    remaining = set(names)
    for name in sorted(remaining):
        stem, ext = os.path.splitext(name)
        if not stem.isdigit():
            continue
        if ext == LOG_SUFFIX:
            base_offsets.append(int(stem))
        elif (
            ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX) and stem + LOG_SUFFIX not in remaining
        ):
            logger.warning(
                "%s Found an orphaned index file %s, with no corresponding log file.", prefix, name
            )
            os.unlink(os.path.join(dir_, name))
    return base_offsets


def _open_segment(
    dir_: str,
    base_offset: int,
    config: LogConfig,
    time_ms: Callable[[], int],
    prefix: str,
    check: bool = True,
) -> LogSegment:
    log_path, index_path, time_index_path = segment_paths(dir_, base_offset)
    missing = [p for p in (index_path, time_index_path) if not os.path.exists(p)]
    segment = LogSegment.open(dir_, base_offset, config, time_ms)
    reason = ""
    if missing:
        reason = f"Could not find index file(s) {', '.join(missing)} corresponding to log file {log_path}"
    elif check:
        try:
            segment.sanity_check()
        except CorruptIndexException as e:
            reason = f"Found a corrupted index file corresponding to log file {log_path} due to {e}"
        else:
            # The check read the last entries; the files stay unmapped until a lookup needs them.
            segment.offset_index.unmap()
            segment.time_index.unmap()
    if reason:
        logger.warning("%s %s, recovering segment and rebuilding index files...", prefix, reason)
        _recover_segment(segment, prefix)
    return segment


def _recover_segment(segment: LogSegment, prefix: str) -> int:
    truncated = segment.recover()
    if truncated > 0:
        logger.warning(
            "%s Truncated %d invalid bytes at the end of segment %s during recovery",
            prefix,
            truncated,
            segment.log.path,
        )
    return truncated


def _recover_unflushed(segments: SortedDict, recovery_point: int, prefix: str) -> None:
    start_index = max(segments.bisect_right(recovery_point) - 1, 0)
    unflushed = list(segments.values()[start_index:])
    for i, segment in enumerate(unflushed):
        logger.info("%s Recovering unflushed segment %d", prefix, segment.base_offset)
        truncated = _recover_segment(segment, prefix)
        # Rebuilding left the indexes mapped, and each CPython mapping holds a descriptor of its
        # own: 10k partitions recovered after a crash would hold 20k more and hit the open-file
        # limit before the broker started. A lookup or append maps them again; no msync is owed
        # (the recovery point has not moved, so a crash before the next flush recovers again).
        segment.offset_index.unmap()
        segment.time_index.unmap()
        if truncated > 0:
            logger.warning(
                "%s Corruption found in segment %d, truncating to offset %d",
                prefix,
                segment.base_offset,
                segment.read_next_offset(),
            )
            for later in unflushed[i + 1 :]:
                logger.warning("%s Deleting segment %d after the corruption", prefix, later.base_offset)
                del segments[later.base_offset]
                later.delete()
            return


def headers_from(segments: SortedDict, offset: int) -> Iterator[BatchHeader]:
    """Headers of the batches holding offsets >= `offset`; segments wholly below it are not read.

    The producer state scan after a snapshot: in the segment holding `offset` the offset
    index finds where to start.
    """
    start = max(segments.bisect_right(offset) - 1, 0)
    for segment in segments.values()[start:]:
        position = 0
        if segment.base_offset < offset:
            found = segment.translate_offset(offset)
            if found is None:
                continue
            position = found.position
        for _, header in segment.log.batches_from(position):
            if header.last_offset >= offset:
                yield header


def producer_batches_from(
    segments: SortedDict, offset: int
) -> Iterator[tuple[BatchHeader, EndTxnMarker | None]]:
    """The producer state's replay: headers of the batches holding offsets >= `offset`, and the
    marker of each control batch (the only batches whose records are read)."""
    start = max(segments.bisect_right(offset) - 1, 0)
    for segment in segments.values()[start:]:
        position = 0
        if segment.base_offset < offset:
            found = segment.translate_offset(offset)
            if found is None:
                continue
            position = found.position
        for batch_position, header in segment.log.batches_from(position):
            if header.last_offset < offset:
                continue
            marker = None
            if header.is_control:
                data = os.pread(segment.log.fd, header.size, batch_position)
                marker = parse_control_batch(data)
            yield header, marker


def min_snapshot_offset_to_retain(segments: SortedDict, recovery_point: int) -> int:
    """Producer snapshots below this are deleted at a roll: Kafka keeps those of the last two
    segments and of the unflushed part; older ones only shorten a scan a newer one skips."""
    keys = segments.keys()
    two_segments_back = keys[max(len(keys) - 2, 0)]
    recovery_segment = keys[max(segments.bisect_right(recovery_point) - 1, 0)]
    result: int = min(two_segments_back, recovery_segment)
    return result


def load_leader_epoch_cache(
    dir_: str,
    segments: SortedDict,
    log_start_offset: int,
    log_end_offset: int,
    unclean_recovery_point: int | None,
) -> LeaderEpochFileCache:
    """Read `leader-epoch-checkpoint` and make it agree with the log as loaded.

    A missing or corrupt file is rebuilt from the epochs the batches carry; after an unclean
    shutdown (`unclean_recovery_point` given) the batches from the recovery point on are read
    again too, since the file may predate them or name epochs of records recovery cut off.
    """
    name = os.path.basename(dir_)
    checkpoint = LeaderEpochCheckpointFile(os.path.join(dir_, LEADER_EPOCH_CHECKPOINT))
    try:
        entries = checkpoint.read()
    except (CheckpointFormatError, OSError) as e:
        logger.warning(
            "[Log partition=%s, dir=%s] Leader epoch checkpoint %s is unreadable (%s); rebuilding it from the log",
            name, os.path.dirname(dir_), checkpoint.path, e,
        )  # fmt: skip
        entries = None
    cache = LeaderEpochFileCache(name, checkpoint, entries or ())
    changed = entries is None and os.path.exists(checkpoint.path)
    scan_from = log_start_offset if entries is None else unclean_recovery_point
    if scan_from is not None and log_end_offset > scan_from:
        for header in headers_from(segments, scan_from):
            if header.partition_leader_epoch >= 0:
                changed = cache.assign(header.partition_leader_epoch, header.base_offset) or changed
    # Entries past the log's end or before its start are dropped in memory; a file that only
    # had those is not rewritten now (every load drops them again, and the next epoch change
    # writes the file): 10k empty partitions led at offset 0 would otherwise cost 10k fsynced
    # writes per start-up. A file rebuilt or completed from the batches is written.
    cache.truncate_from_end(log_end_offset)
    cache.truncate_from_start(log_start_offset)
    if changed:
        cache.flush()
    return cache
