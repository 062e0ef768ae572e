from __future__ import annotations

import pytest

from kafkapy.server.log.cleaner.offset_map import BYTES_PER_ENTRY, OffsetMapFullError, SkimpyOffsetMap


@pytest.mark.timeout(10)
def test_offset_map_keeps_the_latest_offset_of_each_key() -> None:
    m = SkimpyOffsetMap(1000 * BYTES_PER_ENTRY)
    assert m.slots == 1000
    for i in range(500):
        m.put(b"key-%d" % (i % 100), i)
    assert m.size == 100
    assert [m.get(b"key-%d" % k) for k in (0, 42, 99)] == [400, 442, 499]
    assert m.get(b"absent") == -1
    assert m.latest_offset == 499
    assert m.utilization == pytest.approx(0.1)


@pytest.mark.timeout(10)
def test_offset_map_is_bounded_by_its_memory_and_clears() -> None:
    m = SkimpyOffsetMap(10 * BYTES_PER_ENTRY)
    for i in range(10):
        m.put(b"k%d" % i, i)
    with pytest.raises(OffsetMapFullError):
        m.put(b"one-too-many", 10)
    m.put(b"k3", 33)  # an existing key still updates in a full map
    assert m.get(b"k3") == 33
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"k3")) == (0, -1, -1)
