"""Partitioners: where a record goes when the caller names no partition.

Keyed records: `toPositive(murmur2(key)) % numPartitions`, Java's DefaultPartitioner, which is
also librdkafka's `murmur2_random`, so a key lands on the same partition whichever of those
clients wrote it. Null keys: the sticky partitioner of KIP-480 — stay on one (available)
partition until a batch for it is started, then pick another at random — so null-keyed records
fill batches instead of scattering one record per partition.

A custom partitioner is any object with `partition(topic, key, key_bytes, cluster) -> int`, or a
plain callable `(key_bytes, all_partitions, available_partitions) -> int` (kafka-python's shape).
"""

from __future__ import annotations

import random
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kafkapy.client.cluster import ClusterMetadata

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF
_U32LE = struct.Struct("<I")  # murmur2 reads 4-byte little-endian words


def murmur2(data: bytes) -> int:
    """Java's Utils.murmur2 (32-bit MurmurHash2, seed 0x9747b28c), as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    tail = length & ~3
    for (k,) in _U32LE.iter_unpack(data[:tail]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's Utils.toPositive: clear the sign bit (not abs: abs(MIN_VALUE) stays negative)."""
    return n & 0x7FFFFFFF


def murmur2_partition(key_bytes: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key_bytes)) % num_partitions


class Partitioner(Protocol):
    def partition(self, topic: str, key: Any, key_bytes: bytes | None, cluster: ClusterMetadata) -> int: ...


class StickyPartitionCache:
    """KIP-480's per-topic sticky partition for null keys."""

    def __init__(self) -> None:
        self._sticky: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(self, topic: str, cluster: ClusterMetadata) -> int:
        p = self._sticky.get(topic)
        return self.next_partition(topic, cluster, -1) if p is None else p

    def next_partition(self, topic: str, cluster: ClusterMetadata, previous: int) -> int:
        """Choose a new sticky partition, different from `previous` when there is a choice."""
        with self._lock:
            current = self._sticky.get(topic)
            if current is not None and current != previous:
                return current  # another thread already moved on
            available = cluster.available_partitions(topic)
            count = cluster.partition_count(topic) or 1
            if len(available) == 1:
                chosen = available[0]
            elif available:
                chosen = previous
                while chosen == previous:
                    chosen = random.choice(available)
            else:
                chosen = random.randrange(count)
            self._sticky[topic] = chosen
            return chosen


class DefaultPartitioner:
    """murmur2 for keys, sticky for null keys (Kafka 2.4+'s DefaultPartitioner)."""

    def __init__(self) -> None:
        self.cache = StickyPartitionCache()

    @staticmethod
    def uses_sticky(key_bytes: bytes | None) -> bool:
        return key_bytes is None

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, cluster: ClusterMetadata) -> int:
        if key_bytes is None:
            return self.cache.partition(topic, cluster)
        return murmur2_partition(key_bytes, cluster.partition_count(topic) or 1)

    def on_new_batch(self, topic: str, cluster: ClusterMetadata, previous: int) -> None:
        self.cache.next_partition(topic, cluster, previous)


class UniformStickyPartitioner(DefaultPartitioner):
    """Sticky for every record, keyed or not (Kafka's UniformStickyPartitioner)."""

    @staticmethod
    def uses_sticky(key_bytes: bytes | None) -> bool:
        return True

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, cluster: ClusterMetadata) -> int:
        return self.cache.partition(topic, cluster)


class RoundRobinPartitioner:
    """Each record to the next available partition in turn (Kafka's RoundRobinPartitioner)."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, cluster: ClusterMetadata) -> int:
        with self._lock:
            n = self._counters.get(topic, 0)
            self._counters[topic] = n + 1
        available = cluster.available_partitions(topic)
        if available:
            return available[n % len(available)]
        return n % (cluster.partition_count(topic) or 1)


class _CallablePartitioner:
    """Adapts kafka-python's partitioner shape `fn(key_bytes, all, available) -> int`."""

    def __init__(self, fn: Callable[[bytes | None, Sequence[int], Sequence[int]], int]) -> None:
        self.fn = fn

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, cluster: ClusterMetadata) -> int:
        count = cluster.partition_count(topic) or 1
        return self.fn(key_bytes, list(range(count)), cluster.available_partitions(topic))


_BY_NAME: dict[str, Callable[[], Any]] = {
    "DefaultPartitioner": DefaultPartitioner,
    "UniformStickyPartitioner": UniformStickyPartitioner,
    "RoundRobinPartitioner": RoundRobinPartitioner,
    "murmur2_random": DefaultPartitioner,  # librdkafka's name for Java's behaviour
}


def make_partitioner(spec: Any) -> Any:
    """None, a Java class name (the simple name is what counts), an object or a callable."""
    if spec is None:
        return DefaultPartitioner()
    if isinstance(spec, str):
        simple = spec.rsplit(".", 1)[-1]
        if simple not in _BY_NAME:
            raise ValueError(f"Unknown partitioner.class {spec}; known: {', '.join(_BY_NAME)}")
        return _BY_NAME[simple]()
    if isinstance(spec, type):
        spec = spec()
    if hasattr(spec, "partition"):
        return spec
    if callable(spec):
        return _CallablePartitioner(spec)
    raise ValueError(f"partitioner.class must be a class name, an object or a callable, not {spec!r}")
