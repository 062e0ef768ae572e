from __future__ import annotations

import time

import pytest
from cleaner_helpers import keyed
from log_helpers import FakeClock, small_config

from kafkapy.server.log.cleaner.cleaner_manager import LogCleanerManager
from kafkapy.server.log.cleaner.throttler import Throttler
from kafkapy.server.log.log import Log


@pytest.mark.timeout(30)
def test_throttler_holds_the_rate_to_its_bound() -> None:
    throttler = Throttler(2_000_000)  # 2 MB/s
    started = time.monotonic()
    for _ in range(40):
        time.sleep(0.01)  # "reading" 50 KB in 10 ms: 5 MB/s unthrottled, 0.4 s for 2 MB
        throttler.maybe_throttle(50_000)
    elapsed = time.monotonic() - started
    assert elapsed >= 0.8, elapsed  # 2 MB at 2 MB/s, less the last unchecked interval
    assert throttler.throttled_s > 0


@pytest.mark.timeout(30)
def test_max_compaction_lag_makes_a_log_due_whatever_its_ratio(tmp_path, clock: FakeClock) -> None:
    config = small_config(
        cleanup_policy=("compact",), max_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.99
    )
    log = Log(str(tmp_path / "t-0"), config, time_ms=clock)
    try:
        for k in range(30):
            log.append_as_leader(keyed([(b"k%d" % k, b"v")], timestamp=clock.now - 120_000))
        log.high_watermark = log.log_end_offset
        manager = LogCleanerManager([str(tmp_path)], lambda: {}, clock)
        assert manager.cleanable_offsets(log, None, clock.now)[2] is True
        assert manager.cleanable_offsets(log, None, clock.now - 100_000)[2] is False
    finally:
        log.close()
