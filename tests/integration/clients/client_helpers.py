"""What the client suites share: the messages they write, and one checker for what they read back.

Each client module turns its client's delivery reports and consumed records into the neutral
`Delivered` / `Consumed` shapes below; `check_round_trip` then pins every field against the
messages that were sent, so the three clients are held to exactly the same contract.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafka.partitioner.default import murmur2

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.record_batch import BatchHeader, iter_batches

N_MESSAGES = 10_000
PARTITIONS = 3
VALUE_SIZE = 100
DISTINCT_KEYS = 1_000  # every key is sent N_MESSAGES / DISTINCT_KEYS times
LARGE_VALUE_SIZE = 900 * 1024
WAIT_S = 60.0

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("1", "all")

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # attributes & 0x07
CREATE_TIME = 0  # Kafka's TimestampType.CREATE_TIME as the clients number it (librdkafka: 1)

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Message:
    index: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


@dataclass(frozen=True, slots=True)
class Delivered:
    index: int
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Consumed:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp_type: int
    timestamp: int


def unique_topic(prefix: str) -> str:
    """A fresh legal topic name per test (the shared cluster outlives every test)."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "-", prefix)[:180]
    return f"{clean}-{uuid.uuid4().hex[:10]}"


def now_ms() -> int:
    return int(time.time() * 1000)


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a key (kafka-python's port of Utils.murmur2)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def key_for(i: int) -> bytes:
    return b"key-%04d" % (i % DISTINCT_KEYS)


def make_messages(tag: str, n: int = N_MESSAGES, start: int = 0) -> list[Message]:
    """Messages start..start+n-1: keyed, VALUE_SIZE bytes, with headers (one repeated key, one
    empty value) and explicit, strictly increasing CreateTime timestamps an hour in the past
    (recent enough that no retention check can touch them)."""
    base = now_ms() - 3_600_000
    out = []
    for i in range(start, start + n):
        value = f"{tag}|{i:06d}|".encode().ljust(VALUE_SIZE, b"v")
        headers: Headers = (
            ("index", str(i).encode()),
            ("tag", tag.encode()),
            ("empty", b""),
            ("index", b"repeated-key"),
        )
        out.append(Message(i, key_for(i), value, headers, base + i))
    return out


def index_of(value: bytes) -> int:
    return int(value.split(b"|")[1])


def check_round_trip(
    topic: str,
    sent: Sequence[Message],
    delivered: Iterable[Delivered],
    consumed: Sequence[Consumed],
    partitions: int = PARTITIONS,
) -> None:
    """Every sent message read back once with every field intact, on its key's murmur2
    partition, at the offset its delivery report named; offsets contiguous from 0 per
    partition, and a partition's offsets in the order the messages were sent."""
    reports = {d.index: d for d in delivered}
    assert len(reports) == len(sent), f"{len(sent) - len(reports)} messages without a delivery report"
    assert len(consumed) == len(sent), f"consumed {len(consumed)} records, sent {len(sent)}"
    by_partition: dict[int, list[Consumed]] = {}
    seen: set[int] = set()
    for rec in consumed:
        assert rec.value is not None
        i = index_of(rec.value)
        assert i not in seen, f"message {i} read twice (offset {rec.offset})"
        seen.add(i)
        msg = sent[i]
        got = (rec.topic, rec.key, rec.value, rec.headers, rec.timestamp_type, rec.timestamp)
        want = (topic, msg.key, msg.value, msg.headers, CREATE_TIME, msg.timestamp)
        assert got == want, f"message {i} at {rec.partition}/{rec.offset}"
        assert msg.key is not None
        assert rec.partition == murmur2_partition(msg.key, partitions), f"message {i} on wrong partition"
        report = reports[i]
        assert (rec.partition, rec.offset) == (report.partition, report.offset), f"message {i}"
        by_partition.setdefault(rec.partition, []).append(rec)
    for p, recs in by_partition.items():
        recs.sort(key=lambda r: r.offset)
        assert [r.offset for r in recs] == list(range(len(recs))), f"partition {p}: offsets not contiguous"
        indexes = [index_of(r.value or b"") for r in recs]
        assert indexes == sorted(indexes), f"partition {p}: messages out of send order"
    assert set(by_partition) == set(range(partitions)), "some partition received nothing"


def check_stable_partitioning(first: dict[bytes, int], second: dict[bytes, int], partitions: int) -> None:
    """Two producers' key -> partition maps agree, and agree with the Java client's murmur2."""
    assert first == second
    assert first == {k: murmur2_partition(k, partitions) for k in first}
    assert set(first.values()) == set(range(partitions))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def fetch_batches(bootstrap: str, topic: str, partition: int, timeout: float = 10.0) -> list[BatchHeader]:
    """The headers of every batch stored in one partition, read with a raw Fetch (v12): what
    the broker really wrote, not what a client's decoder makes of it."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    out: list[BatchHeader] = []
    offset = 0
    with BrokerConnection(host, int(port), "client-suite-raw-fetch", timeout) as conn:
        for _ in range(10_000):
            resp = conn.send(ApiKey.FETCH, 12, fetch_body(topic, partition, offset))
            assert resp is not None and resp.error_code == 0
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, f"fetch {topic}-{partition}@{offset}: error {part.error_code}"
            records = memoryview(part.records or b"")
            for _, header in iter_batches(records):
                if header.base_offset >= offset:  # a fetch may start inside a batch
                    out.append(header)
                offset = header.last_offset + 1
            if offset >= part.high_watermark:
                return out
    raise AssertionError(f"{topic}-{partition}: fetch made no progress at offset {offset}")


def fetch_body(topic: str, partition: int, offset: int) -> dict[str, object]:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 8 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "fetch_offset": offset,
                        "partition_max_bytes": 4 << 20,
                        "log_start_offset": -1,
                        "current_leader_epoch": -1,
                    }
                ],
            }
        ],
    }


def stored_codecs(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> set[int]:
    return {h.compression for p in range(partitions) for h in fetch_batches(bootstrap, topic, p)}
