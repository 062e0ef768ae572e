"""Where a follower cuts its log, given the leader's OffsetsForLeaderEpoch answer (KIP-101/279)."""

from __future__ import annotations

import pytest

from kafkapy.server.follower_rules import OffsetTruncationState, offset_truncation_state
from kafkapy.server.log.leader_epoch_cache import EpochEntry, LeaderEpochCheckpointFile, LeaderEpochFileCache


def follower(*entries: tuple[int, int], leo: int):  # the follower's own end offsets per epoch
    cache = LeaderEpochFileCache(
        "t-0", LeaderEpochCheckpointFile("/nonexistent"), [EpochEntry(*e) for e in entries]
    )

    def end_offset_for(epoch: int):
        found = cache.end_offset_for(epoch, leo)
        return None if found.offset < 0 else found

    return end_offset_for


@pytest.mark.parametrize(
    ("leader_epoch", "leader_end", "expected", "case"),
    [
        (3, 25, OffsetTruncationState(25, True), "same epoch, the leader has less of it"),
        (3, 40, OffsetTruncationState(30, True), "same epoch, the leader has more: keep ours"),
        (2, 18, OffsetTruncationState(18, True), "the leader's epoch 2 ended earlier than ours"),
        (1, 5, OffsetTruncationState(10, False), "epoch 1 unknown here: cut after epoch 0, ask again"),
        (-1, 12, OffsetTruncationState(12, True), "a leader answering without epochs"),
        (0, -1, OffsetTruncationState(7, True), "the leader cannot place our epoch: the high watermark"),
    ],
)
def test_truncation_offset(
    leader_epoch: int, leader_end: int, expected: OffsetTruncationState, case: str
) -> None:
    ours = follower((0, 0), (2, 10), (3, 20), leo=30)
    assert offset_truncation_state(leader_epoch, leader_end, 30, 7, ours) == expected, case


def test_a_leader_epoch_below_everything_we_track_uses_the_leaders_offset() -> None:
    ours = follower((5, 100), leo=150)
    assert offset_truncation_state(2, 120, 150, 90, ours) == OffsetTruncationState(100, True)
    assert offset_truncation_state(2, 120, 150, 90, lambda epoch: None) == OffsetTruncationState(120, True)
