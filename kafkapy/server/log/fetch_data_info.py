"""What a read of the log returns, and the result of an append."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from kafkapy.protocol.file_region import FileRegion


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset with where it sits: the segment's base offset and its byte position there."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """File regions to send as they are; the last region may end inside a batch (clients skip it)."""

    fetch_offset_metadata: LogOffsetMetadata
    records: list[FileRegion] = field(default_factory=list)
    size: int = 0
    first_entry_incomplete: bool = False


class LogAppendInfo(NamedTuple):
    """What an append did. `duplicate` marks a producer retry answered with the original offsets.

    A NamedTuple: one is made per produced partition, and a frozen dataclass costs several
    times more to build.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    num_messages: int
    valid_bytes: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None = None
