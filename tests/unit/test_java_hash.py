"""Java int arithmetic for Kafka's partition and fetcher choices (kafkapy.common.java_hash)."""

from __future__ import annotations

from kafkapy.common.java_hash import kafka_abs, to_int32, topic_partition_hash


def test_to_int32_wraps_like_java_int_overflow() -> None:
    assert to_int32(2**31) == -(2**31)
    assert to_int32(2**32 + 5) == 5
    assert to_int32(-1) == -1


def test_topic_partition_hash_is_31_times_the_topic_hash_plus_the_partition() -> None:
    assert topic_partition_hash("test", 0) == 31 * 3556498
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE; 31 * MIN_VALUE wraps to MIN_VALUE.
    assert topic_partition_hash("polygenelubricants", 1) == -(2**31) + 1


def test_kafka_abs_maps_min_value_to_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5
