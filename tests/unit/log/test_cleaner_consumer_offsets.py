"""A coordinator loading a compacted __consumer_offsets partition gets the state it had before."""

from __future__ import annotations

import pytest
from cleaner_helpers import all_records, clean_once, keyed, make_cleaner
from log_helpers import small_config

from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.coordinator.group_metadata_manager import _read_partition
from kafkapy.server.log.cleaner.cleaner import CleanerStats
from kafkapy.server.log.cleaner.segment_groups import group_segments_by_size
from kafkapy.server.log.log import Log


@pytest.mark.timeout(30)
def test_offsets_partition_loads_the_same_groups_and_offsets_after_cleaning(tmp_path) -> None:
    config = small_config(cleanup_policy=("compact",), segment_bytes=2048, delete_retention_ms=1000)
    log = Log(str(tmp_path / "__consumer_offsets-0"), config)
    try:
        for round_ in range(8):
            for g in range(4):
                group = f"g{g}"
                value = codec.GroupMetadataValue("consumer", round_, "range", "m1")
                log.append_as_leader(
                    keyed([(codec.group_metadata_key(group), codec.group_metadata_value(value))])
                )
                for p in range(3):
                    om = codec.OffsetAndMetadata(round_ * 10 + p, commit_timestamp=1000 + round_)
                    log.append_as_leader(keyed([(codec.offset_key(group, "t", p), codec.offset_value(om))]))
        # g3 is deleted (offsets and metadata tombstoned), g1 loses one partition's offset.
        log.append_as_leader(keyed([(codec.offset_key("g3", "t", p), None) for p in range(3)]))
        log.append_as_leader(keyed([(codec.group_metadata_key("g3"), None)]))
        log.append_as_leader(keyed([(codec.offset_key("g1", "t", 2), None)]))
        log.roll()
        before = _read_partition(log, 1 << 20)
        size_before = log.size
        end, _ = clean_once(log)
        assert _read_partition(log, 1 << 20) == before
        # Once delete.retention.ms has passed the delete horizon (here: every segment is past
        # it), the tombstones themselves go; the loaded state is still the same.
        cleaner = make_cleaner()
        stats = CleanerStats()
        cleaner.build_offset_map(log, 0, end, stats)
        for group in group_segments_by_size(log.segments_in_range(0, end), 1 << 20, 1 << 20, end):
            cleaner.clean_segments(log, group, delete_horizon_ms=1 << 60, stats=stats)
        assert _read_partition(log, 1 << 20) == before
        assert all(r.value is not None for r in all_records(log))  # no tombstone left
        assert log.size < size_before
        groups = before[1]
        assert "g3" not in groups and ("t", 2) not in before[0]["g1"]
    finally:
        log.close()
