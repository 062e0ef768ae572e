"""murmur2 is Java's Utils.murmur2 bit for bit; keyed and null-keyed partitioning rules."""

from __future__ import annotations

import os
import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkapy.client.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkapy.producer.partitioner import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    make_partitioner,
    murmur2,
    murmur2_partition,
    to_positive,
)

# Values of org.apache.kafka.common.utils.Utils.murmur2 (Kafka's UtilsTest).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


@pytest.mark.parametrize(("data", "expected"), JAVA_VECTORS.items())
def test_murmur2_matches_java(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_murmur2_matches_kafka_python_on_random_inputs() -> None:
    rng = random.Random(7)
    for _ in range(500):
        data = os.urandom(rng.randrange(0, 64))
        assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF


def test_to_positive_clears_the_sign_bit_rather_than_negating() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert murmur2_partition(b"21", 10) == to_positive(-973932308) % 10


def cluster(partitions: int, leaderless: tuple[int, ...] = ()) -> ClusterMetadata:
    parts = tuple(
        PartitionMetadata(p, -1 if p in leaderless else 0, 0, (0,), (0,)) for p in range(partitions)
    )
    return ClusterMetadata({0: BrokerNode(0, "h", 1)}, {"t": parts})


def test_sticky_partition_holds_until_a_new_batch_then_moves_to_an_available_one() -> None:
    p = DefaultPartitioner()
    c = cluster(6, leaderless=(1, 2, 3))
    first = p.partition("t", None, None, c)
    assert first in (0, 4, 5)
    assert all(p.partition("t", None, None, c) == first for _ in range(20))
    p.on_new_batch("t", c, first)
    second = p.partition("t", None, None, c)
    assert second != first and second in (0, 4, 5)


def test_keys_use_murmur2_over_all_partitions_even_leaderless_ones() -> None:
    c = cluster(6, leaderless=(1, 2, 3, 4, 5))
    assert DefaultPartitioner().partition("t", b"k", b"21", c) == to_positive(-973932308) % 6


def test_round_robin_and_custom_partitioners() -> None:
    c = cluster(3)
    rr = RoundRobinPartitioner()
    assert [rr.partition("t", None, None, c) for _ in range(4)] == [0, 1, 2, 0]
    custom = make_partitioner(lambda key, all_parts, available: len(all_parts) - 1)
    assert custom.partition("t", None, b"x", c) == 2
    assert isinstance(make_partitioner("org.apache.kafka.clients.producer.internals.DefaultPartitioner"),
                      DefaultPartitioner)  # fmt: skip
    with pytest.raises(ValueError, match="Unknown partitioner"):
        make_partitioner("com.example.Mine")
