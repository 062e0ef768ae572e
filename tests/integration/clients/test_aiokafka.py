"""aiokafka against the shared kafkapy broker: admin, produce/consume in every codec and acks
level with every field checked, keyed partitioning, a 900 KB message, an empty value with a null
key, and ListOffsets.

What aiokafka itself cannot do, and what these tests do instead:
- its admin client has no ListOffsets call (no list_offsets/list_partition_offsets): earliest,
  latest and by-time go through the consumer (beginning_offsets, end_offsets, offsets_for_times);
- its admin calls return the raw responses, so errors are read as codes, not caught;
- a delivery report's timestamp is not checked: aiokafka's MessageBatch.done() hands every
  message of a CreateTime batch the timestamp of the batch's first message (it overwrites the
  broker's -1 inside its loop); the consumed records carry the right ones and are checked.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from client_helpers import (
    ACKS,
    CODEC_IDS,
    CODECS,
    LARGE_VALUE_SIZE,
    N_MESSAGES,
    PARTITIONS,
    WAIT_S,
    Consumed,
    Delivered,
    Message,
    check_round_trip,
    check_stable_partitioning,
    key_for,
    make_messages,
    now_ms,
    stored_codecs,
)

pytestmark = pytest.mark.timeout(120)

TIMEOUT_MS = 30_000
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3

T = TypeVar("T")


def run(coro: Awaitable[T], timeout: float = WAIT_S) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS, **config: str) -> Any:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    await admin.start()
    try:
        return await admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=config)], TIMEOUT_MS)
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, messages: Sequence[Message], **config: Any) -> list[Delivered]:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=TIMEOUT_MS, **config
    )
    await producer.start()
    try:
        futures = [
            (
                m.index,
                await producer.send(
                    topic, key=m.key, value=m.value, headers=list(m.headers), timestamp_ms=m.timestamp
                ),
            )
            for m in messages
        ]
        await producer.flush()
        out = []
        for index, future in futures:
            md = await future
            out.append(Delivered(index, md.partition, md.offset))
        return out
    finally:
        await producer.stop()


async def consume_all(bootstrap: str, topic: str, count: int, partitions: int = PARTITIONS) -> list[Consumed]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest", check_crcs=True
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        out: list[Consumed] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while len(out) < count and loop.time() < deadline:
            for records in (await consumer.getmany(timeout_ms=500, max_records=5000)).values():
                out.extend(
                    Consumed(
                        r.topic,
                        r.partition,
                        r.offset,
                        r.key,
                        r.value,
                        tuple(r.headers),
                        r.timestamp_type,
                        r.timestamp,
                    )
                    for r in records
                )
        # No duplicates hide past `count`: the logs' ends add up to exactly what was sent.
        assert set((await consumer.beginning_offsets(tps)).values()) == {0}
        assert sum((await consumer.end_offsets(tps)).values()) == count
        return out
    finally:
        await consumer.stop()


# -- admin ------------------------------------------------------------------------------------


def test_admin_creates_lists_describes_and_deletes_topics(bootstrap: str, topic: str) -> None:
    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        await admin.start()
        try:
            created = await admin.create_topics(
                [
                    NewTopic(
                        topic,
                        PARTITIONS,
                        1,
                        topic_configs={"retention.ms": "7200000", "max.message.bytes": "2000000"},
                    )
                ],
                TIMEOUT_MS,
            )
            assert [tuple(e[:2]) for e in created.topic_errors] == [(topic, 0)]
            assert topic in await admin.list_topics()

            [described] = await admin.describe_topics([topic])
            assert (described["topic"], described["error_code"], described["is_internal"]) == (
                topic,
                0,
                False,
            )
            parts = sorted(described["partitions"], key=lambda p: p["partition"])
            assert [
                (p["partition"], p["error_code"], p["leader"], p["replicas"], p["isr"]) for p in parts
            ] == [(i, 0, 0, [0], [0]) for i in range(PARTITIONS)]

            [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            [(error_code, _, _, name, entries)] = response.resources
            assert (error_code, name) == (0, topic)
            values = {e[0]: e[1] for e in entries}
            assert values["retention.ms"] == "7200000"
            assert values["max.message.bytes"] == "2000000"

            again = await admin.create_topics([NewTopic(topic, 1, 1)], TIMEOUT_MS)
            assert [tuple(e[:2]) for e in again.topic_errors] == [(topic, TOPIC_ALREADY_EXISTS)]

            deleted = await admin.delete_topics([topic], TIMEOUT_MS)
            assert [tuple(e) for e in deleted.topic_error_codes] == [(topic, 0)]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT_S
            while topic in await admin.list_topics():
                assert loop.time() < deadline, f"{topic} still listed after delete"
                await asyncio.sleep(0.1)
            gone = await admin.delete_topics([topic], TIMEOUT_MS)
            assert [tuple(e) for e in gone.topic_error_codes] == [(topic, UNKNOWN_TOPIC_OR_PARTITION)]
        finally:
            await admin.close()

    run(scenario())


# -- produce and consume ----------------------------------------------------------------------


@pytest.mark.parametrize("acks", ACKS)
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_keeps_every_field(bootstrap: str, topic: str, codec: str, acks: str) -> None:
    sent = make_messages(f"aio-{codec}-{acks}")

    async def scenario() -> tuple[list[Delivered], list[Consumed]]:
        await create_topic(bootstrap, topic)
        delivered = await produce(
            bootstrap,
            topic,
            sent,
            acks="all" if acks == "all" else 1,
            compression_type=None if codec == "none" else codec,
        )
        return delivered, await consume_all(bootstrap, topic, N_MESSAGES)

    delivered, consumed = run(scenario())
    check_round_trip(topic, sent, delivered, consumed)
    assert stored_codecs(bootstrap, topic) == {CODEC_IDS[codec]}, "the batches were not sent in this codec"


def test_keyed_partitioning_is_stable_and_matches_murmur2(bootstrap: str, topic: str) -> None:
    """aiokafka's DefaultPartitioner is the Java client's murmur2: two producer instances agree
    with each other and with the reference hash."""
    keys = [key_for(i) for i in range(200)]
    msgs = [Message(i, k, b"p|%06d|" % i, (), now_ms()) for i, k in enumerate(keys)]

    async def placement() -> dict[bytes, int]:
        return {keys[d.index]: d.partition for d in await produce(bootstrap, topic, msgs, acks=1)}

    async def scenario() -> tuple[dict[bytes, int], dict[bytes, int]]:
        await create_topic(bootstrap, topic, partitions=7)
        return await placement(), await placement()

    check_stable_partitioning(*run(scenario()), 7)


def test_large_message_and_empty_value_with_null_key(bootstrap: str, topic: str) -> None:
    big = os.urandom(LARGE_VALUE_SIZE)  # incompressible: 900 KB on the wire too
    ts = now_ms() - 1000
    records = [
        (b"big", big, [("h", b"x")], ts),
        (None, b"", [], ts + 1),  # empty value, null key
        # aiokafka refuses a record with neither key nor value ("Need at least one: key or
        # value"), so its tombstone here carries a key.
        (b"gone", None, [], ts + 2),
        (b"after", b"small", [], ts + 3),
    ]

    async def scenario() -> list[Any]:
        await create_topic(bootstrap, topic, partitions=1)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=TIMEOUT_MS)
        await producer.start()
        try:
            futures = [
                await producer.send(topic, key=k, value=v, headers=h, timestamp_ms=t)
                for k, v, h, t in records
            ]
            assert [(await f).offset for f in futures] == [0, 1, 2, 3]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got: list[Any] = []
            while len(got) < len(records):  # bounded by run()'s timeout
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(batch)
            return got
        finally:
            await consumer.stop()

    got = run(scenario())
    assert [r.offset for r in got] == [0, 1, 2, 3]
    assert [(r.key, r.value, list(r.headers), r.timestamp_type, r.timestamp) for r in got] == [
        (k, v, h, 0, t) for k, v, h, t in records
    ]
    assert len(got[0].value) == LARGE_VALUE_SIZE


# -- ListOffsets ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_list_offsets_earliest_latest_and_by_time(bootstrap: str, topic: str, codec: str) -> None:
    """beginning_offsets, end_offsets and offsets_for_times on one partition whose messages are
    10 ms apart, so a time between two messages names the later one."""
    count, step, base = 1000, 10, now_ms() - 600_000
    msgs = [Message(i, key_for(i), b"lo|%06d|" % i, (), base + step * i) for i in range(count)]
    tp = TopicPartition(topic, 0)
    cases = {0: 0, base + 1: 1, base + step * 500: 500, base + step * 500 - 3: 500}
    cases |= {base + step * (count - 1): count - 1}

    async def scenario() -> None:
        await create_topic(bootstrap, topic, partitions=1)
        await produce(bootstrap, topic, msgs, acks="all", compression_type=None if codec == "none" else codec)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            assert await consumer.beginning_offsets([tp]) == {tp: 0}
            assert await consumer.end_offsets([tp]) == {tp: count}
            found = {ts: (await consumer.offsets_for_times({tp: ts}))[tp] for ts in cases}
            got = {ts: (f.offset, f.timestamp) if f else None for ts, f in found.items()}
            assert got == {ts: (k, base + step * k) for ts, k in cases.items()}
            assert await consumer.offsets_for_times({tp: base + step * count}) == {tp: None}
        finally:
            await consumer.stop()

    run(scenario())
