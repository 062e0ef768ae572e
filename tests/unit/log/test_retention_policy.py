"""RetentionPolicy decides without touching files: segments go oldest first, stop at the first
one that must stay, never past the high watermark, and the last one only if it has data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kafkapy.server.log.log_retention import RetentionPolicy, RetentionView, deletable_segments


@dataclass
class FakeSegment:
    base_offset: int
    size: int
    largest_timestamp: int


@dataclass
class FakeConfig:
    retention_ms: int = -1
    retention_bytes: int = -1
    delete: bool = True


def _view(segments: list[FakeSegment], hw: int, next_offset: int, start: int = 0) -> Any:
    return RetentionView(segments, hw, next_offset, start)  # type: ignore[arg-type]


SEGMENTS = [FakeSegment(0, 100, 1_000), FakeSegment(10, 100, 2_000), FakeSegment(20, 100, 9_000)]


@pytest.mark.timeout(10)
def test_time_rule_takes_the_old_prefix_only() -> None:
    policy = RetentionPolicy(lambda: 10_000)
    found = policy.retention_ms_breached(FakeConfig(retention_ms=5_000), _view(SEGMENTS, 30, 30))  # type: ignore[arg-type]
    assert found is not None
    assert [s.base_offset for s in found.segments] == [0, 10]
    assert found.reason == "retention time 5000ms breach"


@pytest.mark.timeout(10)
def test_nothing_past_the_high_watermark_goes() -> None:
    policy = RetentionPolicy(lambda: 10**9)
    found = policy.retention_ms_breached(FakeConfig(retention_ms=1), _view(SEGMENTS, 15, 30))  # type: ignore[arg-type]
    assert found is not None and [s.base_offset for s in found.segments] == [0]


@pytest.mark.timeout(10)
def test_size_rule_deletes_only_whole_excess_segments() -> None:
    policy = RetentionPolicy(lambda: 0)
    found = policy.retention_size_breached(FakeConfig(retention_bytes=150), _view(SEGMENTS, 30, 30))  # type: ignore[arg-type]
    assert found is not None and [s.base_offset for s in found.segments] == [0]


@pytest.mark.timeout(10)
def test_a_last_empty_segment_stays_and_compacted_logs_only_follow_the_start_offset() -> None:
    empty_tail = [*SEGMENTS[:2], FakeSegment(20, 0, 0)]
    assert len(deletable_segments(_view(empty_tail, 20, 20), lambda s, n: True)) == 2
    rules = RetentionPolicy(lambda: 0).rules(FakeConfig(delete=False))  # type: ignore[arg-type]
    assert len(rules) == 1
    found = rules[0](_view(SEGMENTS, 30, 30, start=12))
    assert found is not None and [s.base_offset for s in found.segments] == [0]
