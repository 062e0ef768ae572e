from __future__ import annotations

import os

import pytest

from kafkapy.protocol.constants import NO_TIMESTAMP
from kafkapy.server.log.abstract_index import CorruptIndexException, IndexFullError, InvalidOffsetException
from kafkapy.server.log.offset_index import OffsetIndex, OffsetPosition
from kafkapy.server.log.time_index import TimeIndex, TimestampOffset

BASE = 100


@pytest.fixture
def offset_index(tmp_path) -> OffsetIndex:
    index = OffsetIndex(str(tmp_path / "00000000000000000100.index"), BASE, 8 * 10 + 5)
    yield index
    index.close()


@pytest.fixture
def time_index(tmp_path) -> TimeIndex:
    index = TimeIndex(str(tmp_path / "00000000000000000100.timeindex"), BASE, 12 * 10 + 5)
    yield index
    index.close()


def test_new_index_is_preallocated_to_whole_entries(offset_index: OffsetIndex, time_index: TimeIndex) -> None:
    assert os.path.getsize(offset_index.path) == 80
    assert os.path.getsize(time_index.path) == 120
    assert (offset_index.entries, offset_index.max_entries) == (0, 10)


def test_offset_lookup_on_empty_index_gives_base_offset_and_position_zero(offset_index: OffsetIndex) -> None:
    assert offset_index.lookup(500) == OffsetPosition(BASE, 0)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (99, OffsetPosition(BASE, 0)),  # below the first entry
        (103, OffsetPosition(BASE, 0)),
        (105, OffsetPosition(105, 50)),  # exact
        (106, OffsetPosition(105, 50)),  # between entries: the lower one
        (110, OffsetPosition(110, 100)),
        (119, OffsetPosition(115, 150)),
        (120, OffsetPosition(120, 200)),  # the last entry
        (10**12, OffsetPosition(120, 200)),  # past the end
    ],
)
def test_offset_lookup_finds_largest_entry_at_or_below_target(
    offset_index: OffsetIndex, target: int, expected: OffsetPosition
) -> None:
    for i, offset in enumerate((105, 110, 115, 120)):
        offset_index.append(offset, 50 * (i + 1))
    assert offset_index.lookup(target) == expected


def test_offset_lookup_with_one_entry(offset_index: OffsetIndex) -> None:
    offset_index.append(BASE + 3, 30)
    assert offset_index.lookup(BASE + 2) == OffsetPosition(BASE, 0)
    assert offset_index.lookup(BASE + 3) == OffsetPosition(BASE + 3, 30)


def test_offset_index_refuses_offsets_that_do_not_increase(offset_index: OffsetIndex) -> None:
    offset_index.append(105, 10)
    with pytest.raises(InvalidOffsetException):
        offset_index.append(105, 20)


def test_offset_index_refuses_appends_when_full(offset_index: OffsetIndex) -> None:
    for i in range(10):
        offset_index.append(BASE + i + 1, i)
    assert offset_index.is_full
    with pytest.raises(IndexFullError):
        offset_index.append(BASE + 50, 99)


def test_offset_index_truncate_removes_entries_at_and_above_offset(offset_index: OffsetIndex) -> None:
    for offset in (105, 110, 115):
        offset_index.append(offset, offset)
    offset_index.truncate_to(110)
    assert offset_index.entries == 1
    offset_index.truncate_to(107)
    assert offset_index.entries == 1
    offset_index.truncate_to(100)
    assert offset_index.entries == 0


def test_closed_index_is_trimmed_and_reopens_with_its_entries(tmp_path) -> None:
    path = str(tmp_path / "x.index")
    index = OffsetIndex(path, BASE, 800)
    index.append(105, 7)
    index.append(109, 9)
    index.close()
    assert os.path.getsize(path) == 16
    reopened = OffsetIndex(path, BASE, 800)
    assert reopened.entries == 2 and reopened.lookup(200) == OffsetPosition(109, 9)
    reopened.resize(800)
    assert reopened.max_entries == 100 and reopened.entries == 2
    reopened.close()


def test_sanity_check_names_a_file_with_a_partial_entry(tmp_path) -> None:
    path = tmp_path / "bad.index"
    path.write_bytes(b"\x00" * 12)
    index = OffsetIndex(str(path), BASE, 800)
    with pytest.raises(CorruptIndexException, match="bad.index"):
        index.sanity_check()
    index.close()


def test_sanity_check_rejects_last_offset_below_base(tmp_path) -> None:
    path = tmp_path / "neg.index"
    path.write_bytes((-5).to_bytes(4, "big", signed=True) + b"\x00\x00\x00\x01")
    index = OffsetIndex(str(path), BASE, 800)
    with pytest.raises(CorruptIndexException, match="neg.index"):
        index.sanity_check()
    index.close()


def test_time_index_appends_only_when_timestamp_grows(time_index: TimeIndex) -> None:
    time_index.maybe_append(1000, 101)
    time_index.maybe_append(1000, 102)
    time_index.maybe_append(1005, 103)
    assert time_index.entries == 2
    assert time_index.last_entry == TimestampOffset(1005, 103)


def test_time_index_refuses_going_back_in_offsets(time_index: TimeIndex) -> None:
    time_index.maybe_append(1000, 110)
    with pytest.raises(InvalidOffsetException):
        time_index.maybe_append(2000, 105)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (999, TimestampOffset(NO_TIMESTAMP, BASE)),
        (1000, TimestampOffset(1000, 101)),
        (1500, TimestampOffset(1000, 101)),
        (2000, TimestampOffset(2000, 105)),
        (9999, TimestampOffset(3000, 109)),
    ],
)
def test_time_lookup_finds_largest_timestamp_at_or_below_target(
    time_index: TimeIndex, target: int, expected: TimestampOffset
) -> None:
    for ts, offset in ((1000, 101), (2000, 105), (3000, 109)):
        time_index.maybe_append(ts, offset)
    assert time_index.lookup(target) == expected


def test_time_index_keeps_a_slot_for_the_final_entry(time_index: TimeIndex) -> None:
    for i in range(9):
        time_index.maybe_append(1000 + i, BASE + i)
    assert time_index.is_full
    with pytest.raises(IndexFullError):
        time_index.maybe_append(5000, 200)
    time_index.maybe_append(5000, 200, skip_full_check=True)
    assert time_index.entries == 10


def test_time_index_truncate_removes_entries_for_offsets_at_and_above(time_index: TimeIndex) -> None:
    for ts, offset in ((1000, 101), (2000, 105), (3000, 109)):
        time_index.maybe_append(ts, offset)
    time_index.truncate_to(106)
    assert time_index.last_entry == TimestampOffset(2000, 105)
    time_index.truncate_to(101)
    assert time_index.entries == 0


def test_time_index_sanity_check_rejects_decreasing_timestamps(tmp_path) -> None:
    path = tmp_path / "bad.timeindex"
    path.write_bytes(
        (5000).to_bytes(8, "big") + (1).to_bytes(4, "big") + (10).to_bytes(8, "big") + (2).to_bytes(4, "big")
    )
    index = TimeIndex(str(path), BASE, 1200)
    with pytest.raises(CorruptIndexException, match="bad.timeindex"):
        index.sanity_check()
    index.close()


def _fds_on(path: str) -> int:
    """How many of this process's descriptors are open on `path`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == path
        except OSError:
            pass  # the listing's own descriptor, closed already
    return count


def test_indexes_hold_no_descriptor_and_map_on_first_use(tmp_path) -> None:
    """10k idle partitions must not cost 20k descriptors: an index is mapped only once a lookup
    or an append needs it, and an unmapped one holds no descriptor."""
    path = str(tmp_path / "00000000000000000100.index")
    index = OffsetIndex(path, BASE, 800)
    for i in range(5):
        index.append(BASE + 10 * i, 100 * i)
    index.close()
    reopened = [OffsetIndex(path, BASE, 800) for _ in range(20)]
    assert _fds_on(path) == 0
    assert not any(i.is_mapped for i in reopened)
    assert reopened[0].entries == 5  # from the trimmed file's length alone
    assert reopened[0].lookup(BASE + 25) == OffsetPosition(BASE + 20, 200)
    assert reopened[0].is_mapped and not reopened[1].is_mapped
    assert _fds_on(path) <= 1  # CPython's mmap keeps a dup of the descriptor it mapped
    reopened[0].unmap()
    assert not reopened[0].is_mapped
    assert _fds_on(path) == 0
    assert reopened[0].lookup(BASE + 45) == OffsetPosition(BASE + 40, 400)
    for i in reopened:
        i.close()


def test_unmapped_index_resizes_without_mapping(tmp_path) -> None:
    index = TimeIndex(str(tmp_path / "00000000000000000100.timeindex"), BASE, 1200)
    index.maybe_append(1000, BASE + 1)
    index.close()
    reopened = TimeIndex(index.path, BASE, 1200)
    reopened.resize(1200)  # the log loader gives the active segment room again
    assert not reopened.is_mapped
    assert os.path.getsize(index.path) == 1200
    assert reopened.entries == 1 and reopened.max_entries == 100
    reopened.maybe_append(2000, BASE + 5)
    reopened.close()
    assert os.path.getsize(index.path) == 24
    last = TimeIndex(index.path, BASE, 1200)
    assert last.last_entry == TimestampOffset(2000, BASE + 5)
    last.close()


def test_final_entry_at_close_is_written_without_mapping(tmp_path) -> None:
    """A segment's closing time index entry goes through pwrite when the index is not mapped (a
    first write into the preallocated mapping costs a block-allocating page fault)."""
    index = TimeIndex(str(tmp_path / "00000000000000000100.timeindex"), BASE, 1200)
    index.maybe_append(1000, BASE + 1)
    index.close()
    reopened = TimeIndex(index.path, BASE, 1200)
    reopened.resize(1200)  # the active segment's room, as the log loader gives it
    reopened.maybe_append(2000, BASE + 5, write_through=True)  # reads the last entry: maps it
    reopened.maybe_append(3000, BASE + 7, write_through=True)  # a mapping sees what pwrite wrote
    assert reopened.lookup(2500) == TimestampOffset(2000, BASE + 5)
    assert reopened.entries == 3
    reopened.close()
    assert os.path.getsize(index.path) == 36
    again = TimeIndex(index.path, BASE, 1200)
    assert [again.entry(i) for i in range(again.entries)] == [
        TimestampOffset(1000, BASE + 1),
        TimestampOffset(2000, BASE + 5),
        TimestampOffset(3000, BASE + 7),
    ]
    again.close()
    fresh = TimeIndex(str(tmp_path / "00000000000000000200.timeindex"), 200, 1200)
    fresh.maybe_append(4000, 201, write_through=True)  # no entry to read first: never mapped
    assert not fresh.is_mapped
    fresh.close()
    assert TimeIndex(fresh.path, 200, 1200).last_entry == TimestampOffset(4000, 201)
