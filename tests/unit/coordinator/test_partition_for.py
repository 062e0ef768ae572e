"""The coordinator partition of a group, computed as Kafka does: abs(String.hashCode) % partitions."""

from __future__ import annotations

import pytest

from kafkapy.common.java_hash import java_string_hash, kafka_abs
from kafkapy.server.coordinator.group_metadata_manager import partition_for


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 99162322),
        ("g1", 3242),
        ("é", 233),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # hashed over UTF-16 code units: a surrogate pair
        ("polygenelubricants", -(2**31)),
        ("my-group", -1906497762),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_integer_min_value_maps_to_partition_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0


def test_negative_hashes_use_their_absolute_value() -> None:
    # Kafka's Utils.abs is Math.abs, not a sign-bit mask (which would give 36 here).
    assert partition_for("my-group", 50) == 12
    assert partition_for("g1", 50) == 42
