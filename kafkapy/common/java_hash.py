"""Java's hash codes, where Kafka's choice of a partition or a thread depends on them.

A coordinator's partition (`Utils.abs(groupId.hashCode) % partitions`), a fetcher thread
(`Utils.abs(31 * topic.hashCode + partition) % fetchers`) and the legacy consumer's assignment
order must be the ones a Java broker or client computes, so they are done in 32-bit two's
complement here, once.
"""

from __future__ import annotations

_INT_MIN = -(1 << 31)


def to_int32(n: int) -> int:
    """`n` wrapped to a Java int, as Java's int arithmetic overflows."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """`31 * topic.hashCode() + partition` in Java int arithmetic (the fetcher id's input)."""
    return to_int32(31 * java_string_hash(topic) + partition)


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE (whose abs overflows) maps to 0."""
    return 0 if n == _INT_MIN else abs(n)
