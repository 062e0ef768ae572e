"""What a follower decides from its leader's answers: which fetched bytes to append, what to do
when its fetch offset is out of range, and where to cut its log before fetching (KIP-101, 279).

A follower's log may end with records the new leader never had: written by an old leader
that lost its place before they were replicated, or by this broker when it led. Cutting at the
high watermark (the pre-KIP-101 rule) can remove records that were committed, and a follower
elected before refetching them loses them for good; keeping too much forks the replicas. So the
follower asks the leader (OffsetsForLeaderEpoch) where the latest epoch it holds ends in the
leader's log, and cuts there. When the leader answers with an older epoch than the one asked
(the follower holds an epoch the leader never saw), the follower first cuts to where its own
copy of that older epoch ends and asks again (KIP-279), so each round removes at least one
epoch and the loop ends.

Pure functions only: the fetcher thread (replica_fetcher_thread.py) does the I/O and applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.constants import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.server.log.leader_epoch_cache import OffsetAndEpoch

# v3 is the first that names the asking replica (so a leader answers its followers only);
# v4 is the flexible encoding.
OFFSET_FOR_LEADER_EPOCH_VERSIONS = (3, 4)


class OffsetTruncationState(NamedTuple):
    offset: int
    completed: bool  # False: cut here, then ask the leader again with the new latest epoch

    def __str__(self) -> str:
        return f"TruncationState(offset={self.offset}, completed={self.completed})"


class EpochQuery(NamedTuple):
    current_leader_epoch: int  # fences a leader that lost its place (KIP-320)
    leader_epoch: int  # the latest epoch in the follower's log


def offset_truncation_state(
    leader_epoch: int,
    leader_end_offset: int,
    replica_end_offset: int,
    high_watermark: int,
    follower_end_offset_for: Callable[[int], OffsetAndEpoch | None],
) -> OffsetTruncationState:
    """Kafka's getOffsetTruncationState, given the leader's answer for our latest epoch.

    `follower_end_offset_for(epoch)` is the follower log's own end offset of `epoch`: the
    largest epoch at or below it and where that epoch ends here.
    """
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        # The leader cannot place any epoch we hold: only what was committed is certain.
        return OffsetTruncationState(min(high_watermark, replica_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        # A leader that answers without epochs: its end offset is the best bound there is.
        return OffsetTruncationState(min(leader_end_offset, replica_end_offset), True)
    ours = follower_end_offset_for(leader_epoch)
    if ours is None:
        # The leader's epoch predates everything we track; its offset is safe to cut at.
        return OffsetTruncationState(min(leader_end_offset, replica_end_offset), True)
    if ours.leader_epoch != leader_epoch:
        # We never had the leader's epoch: drop our epochs after the largest one below it,
        # then ask again about that one.
        return OffsetTruncationState(min(ours.offset, replica_end_offset), False)
    return OffsetTruncationState(min(ours.offset, leader_end_offset, replica_end_offset), True)


def epoch_request(replica_id: int, queries: Mapping[TopicPartition, EpochQuery]) -> dict[str, Any]:
    """The OffsetsForLeaderEpoch request body for `queries`, grouped by topic."""
    topics: dict[str, list[dict[str, int]]] = {}
    for tp, q in queries.items():
        topics.setdefault(tp.topic, []).append(
            {
                "partition": tp.partition,
                "current_leader_epoch": q.current_leader_epoch,
                "leader_epoch": q.leader_epoch,
            }
        )
    return {"replica_id": replica_id, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}


def follower_records(records: Any, fetch_offset: int) -> memoryview | None:
    """The whole batches of a fetched record set that end at or after `fetch_offset`.

    A leader's response may stop mid-batch (the size limit cuts file bytes, not batches), and
    may start with a batch holding offsets below the fetch offset; both ends are trimmed.
    """
    if records is None:
        return None
    view = memoryview(records).cast("B") if not isinstance(records, memoryview) else records
    start = end = None
    for position, header in iter_batches(view):
        if header.next_offset <= fetch_offset:
            continue
        if start is None:
            start = position
        end = position + header.size
    if start is None or end is None:
        return None
    return view[start:end]


def out_of_range_action(fetch_offset: int, leader_log_start: int, leader_hw: int) -> tuple[str, int] | None:
    """What a follower does when the leader says its fetch offset is out of range.

    Below the leader's log start offset: start over empty at the leader's log start offset.
    Above the leader's high watermark: the leader's log may be shorter than ours (an unclean
    election, or records of ours it never had), so truncate again the KIP-101 way.
    """
    if leader_log_start >= 0 and fetch_offset < leader_log_start:
        return "truncate_fully", leader_log_start
    if 0 <= leader_hw < fetch_offset:
        return "truncate", leader_hw
    return None


def follower_high_watermark(leader_hw: int, follower_log_end_offset: int) -> int:
    return min(leader_hw, follower_log_end_offset)
