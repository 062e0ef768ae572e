"""The newest records of one partition, made fit for display.

One Fetch to the partition's leader from `end - count` (never below the log start), as a
consumer would send it. Keys, values and headers are bytes from anyone who could produce: they
are decoded leniently (invalid UTF-8 replaced) and cut to a display limit here, and escaped by
the template engine, so a megabyte of markup neither breaks nor bloats the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.client.records import decode_record_set
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import LeaderNotAvailableException
from kafkapy.tools.consumer_groups_cmd.group_admin import EARLIEST, LATEST, GroupAdmin

DISPLAY_LIMIT = 2000  # characters of a key, value or header shown
PARTITION_FETCH_BYTES = 1024 * 1024  # the broker still returns a first batch larger than this
FETCH_MAX_BYTES = 8 * 1024 * 1024
CONSUMER_REPLICA_ID = -1


@dataclass(frozen=True, slots=True)
class Shown:
    """Bytes as text: at most DISPLAY_LIMIT characters, with the full size when cut."""

    text: str | None
    size: int
    truncated: bool

    @classmethod
    def of(cls, data: bytes | None) -> Shown:
        if data is None:
            return cls(None, 0, False)
        text = data[: DISPLAY_LIMIT * 4].decode("utf-8", errors="replace")
        cut = len(text) > DISPLAY_LIMIT or len(data) > DISPLAY_LIMIT * 4
        return cls(text[:DISPLAY_LIMIT], len(data), cut)


@dataclass(frozen=True, slots=True)
class RecordRow:
    offset: int
    timestamp: int
    timestamp_type: str
    key: Shown
    value: Shown
    headers: tuple[tuple[str, Shown], ...]

    @property
    def time_text(self) -> str:
        """The timestamp in UTC, to the millisecond (-1, no timestamp: empty)."""
        if self.timestamp < 0:
            return ""
        return datetime.fromtimestamp(self.timestamp / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class PartitionRecords:
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    records: tuple[RecordRow, ...]


def newest_records(
    admin: AdminClient, groups: GroupAdmin, topic: str, partition: int, count: int
) -> PartitionRecords:
    tp = (topic, partition)
    start = groups.list_offsets([tp], EARLIEST).get(tp, 0)
    end = groups.list_offsets([tp], LATEST).get(tp, 0)
    md = admin.metadata([topic], "fetch")
    t = next(t for t in md.topics if t.name == topic)
    raise_for_error(t.error_code, None)
    p = next((p for p in t.partitions if p.partition_index == partition), None)
    if p is None or p.leader_id < 0:
        raise LeaderNotAvailableException(f"No leader for {topic}-{partition}")
    fetch_from = max(start, end - count)
    rows: list[RecordRow] = []
    # A fetch returns whole batches from the offset on; more may be needed to reach `end`.
    position = fetch_from
    for _ in range(count + 1):
        if position >= end:
            break
        records, next_offset = _fetch(admin, p.leader_id, t, partition, position)
        rows.extend(_row(r) for r in records if r.offset < end)
        if next_offset is None or next_offset <= position:
            break
        position = next_offset
    return PartitionRecords(topic, partition, start, end, tuple(rows[-count:]))


def _fetch(
    admin: AdminClient, leader: int, t: Any, partition: int, offset: int
) -> tuple[list[Any], int | None]:
    def build(version: int) -> dict[str, Any]:
        return {
            "replica_id": CONSUMER_REPLICA_ID,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": FETCH_MAX_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    # v13+ name the topic by id, older versions by name
                    "topic": t.name,
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": PARTITION_FETCH_BYTES,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    _, answer = admin.send_to_broker(leader, ApiKey.FETCH, build)
    raise_for_error(getattr(answer, "error_code", 0) or 0)
    for topic in answer.responses:
        for part in topic.partitions:
            if part.partition_index == partition:
                raise_for_error(part.error_code, None)
                return decode_record_set(t.name, partition, part.records, min_offset=offset)
    return [], None


def _row(r: Any) -> RecordRow:
    return RecordRow(
        r.offset,
        r.timestamp,
        "LogAppendTime" if r.timestamp_type else "CreateTime",
        Shown.of(r.key),
        Shown.of(r.value),
        tuple((h[0], Shown.of(h[1])) for h in r.headers),
    )
