"""Idempotent produce: a retried batch is written once.

The direct proof is at the protocol level: a producer id from InitProducerId, a sequenced batch
sent twice (the second send is what a producer's retry after a lost response looks like on the
wire), and the log read back raw. Then confluent-kafka with enable.idempotence=True: its batches
must carry one producer id and gap-free sequences, and every message must be stored once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import confluent_io as ck
import pytest
from client_helpers import (
    check_round_trip,
    fetch_batches,
    fetch_body,
    make_messages,
    stored_codecs,
)

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.protocol.record_codec import build_batch, decode_records

pytestmark = pytest.mark.timeout(120)

NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


@pytest.fixture
def conn(bootstrap: str) -> Iterator[BrokerConnection]:
    host, port = bootstrap.rsplit(":", 1)
    with BrokerConnection(host, int(port), "idempotence-test", timeout=30.0) as c:
        c.api_versions()
        yield c


def init_producer_id(conn: BrokerConnection, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
    resp = conn.send(
        ApiKey.INIT_PRODUCER_ID,
        conn.pick_version(ApiKey.INIT_PRODUCER_ID),
        {"transactional_id": None, "transaction_timeout_ms": 60_000, "producer_id": producer_id,
         "producer_epoch": epoch},
    )  # fmt: skip
    assert resp is not None and resp.error_code == NONE, resp
    return resp.producer_id, resp.producer_epoch


def batch(pid: int, epoch: int, sequence: int, keys: list[bytes], ts: int | None = None) -> bytes:
    # Now, not a fixed date: a timestamp past the default retention could be deleted by the
    # shared broker's retention check before the test reads it back.
    ts = int(time.time() * 1000) if ts is None else ts
    records = [(k, b"value-" + k, [("seq", str(sequence + i).encode())], ts + i) for i, k in enumerate(keys)]
    return bytes(build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=sequence))


def produce_raw(conn: BrokerConnection, topic: str, records: bytes, acks: int) -> tuple[int, int, str | None]:
    """(error code, base offset, error message) of a one-partition Produce."""
    resp = conn.send(
        ApiKey.PRODUCE,
        conn.pick_version(ApiKey.PRODUCE),
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        },
    )
    assert resp is not None
    [part] = resp.responses[0].partition_responses
    return part.error_code, part.base_offset, part.error_message


def stored_records(bootstrap: str, topic: str) -> list[tuple[int, bytes | None]]:
    """(offset, key) of every record in partition 0, decoded from what a raw Fetch returns."""
    host, port = bootstrap.rsplit(":", 1)
    with BrokerConnection(host, int(port), "idempotence-test-fetch", timeout=30.0) as conn:
        resp = conn.send(ApiKey.FETCH, 12, fetch_body(topic, partition=0, offset=0))
    assert resp is not None
    data = memoryview(resp.responses[0].partitions[0].records or b"")
    return [(r.offset, r.key) for position, _ in iter_batches(data) for r in decode_records(data, position)]


@pytest.mark.parametrize("acks", [1, -1])
def test_a_resent_batch_is_acknowledged_with_its_first_offset_and_stored_once(
    bootstrap: str, topic: str, conn: BrokerConnection, acks: int
) -> None:
    ck.create_topic(bootstrap, topic, partitions=1)
    pid, epoch = init_producer_id(conn)
    assert pid >= 0 and epoch == 0

    first = batch(pid, epoch, 0, [b"a0", b"a1", b"a2", b"a3", b"a4"])
    assert produce_raw(conn, topic, first, acks)[:2] == (NONE, 0)
    assert produce_raw(conn, topic, first, acks)[:2] == (NONE, 0), (
        "the retry must answer the first append's offset"
    )

    second = batch(pid, epoch, 5, [b"b5", b"b6", b"b7"])
    assert produce_raw(conn, topic, second, acks)[:2] == (NONE, 5)
    # A retry of an older batch (Kafka remembers a producer's last five) is still recognised.
    assert produce_raw(conn, topic, first, acks)[:2] == (NONE, 0)
    assert produce_raw(conn, topic, second, acks)[:2] == (NONE, 5)

    # A gap in the sequence: 8 is next, 10 is refused and nothing is written.
    gap, _, message = produce_raw(conn, topic, batch(pid, epoch, 10, [b"c10"]), acks)
    assert gap == OUT_OF_ORDER_SEQUENCE_NUMBER, message
    assert produce_raw(conn, topic, batch(pid, epoch, 8, [b"c8"]), acks)[:2] == (NONE, 8)

    keys = [b"a0", b"a1", b"a2", b"a3", b"a4", b"b5", b"b6", b"b7", b"c8"]
    assert stored_records(bootstrap, topic) == list(enumerate(keys))
    headers = fetch_batches(bootstrap, topic, 0)
    assert [(h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) for h in headers] == [
        (pid, 0, 0, 5),
        (pid, 0, 5, 3),
        (pid, 0, 8, 1),
    ]


def test_a_bumped_epoch_fences_the_old_one_and_restarts_sequences(
    bootstrap: str, topic: str, conn: BrokerConnection
) -> None:
    ck.create_topic(bootstrap, topic, partitions=1)
    pid, epoch = init_producer_id(conn)
    assert produce_raw(conn, topic, batch(pid, epoch, 0, [b"e0-0", b"e0-1"]), -1)[:2] == (NONE, 0)

    # KIP-360: the producer asks InitProducerId to bump its epoch.
    same_pid, bumped = init_producer_id(conn, pid, epoch)
    assert (same_pid, bumped) == (pid, epoch + 1)

    # The partition learns the new epoch from the first batch written with it, which must
    # start the sequence again at 0; from then on the old epoch is fenced.
    midway, _, message = produce_raw(conn, topic, batch(pid, bumped, 2, [b"e1-2"]), -1)
    assert midway == OUT_OF_ORDER_SEQUENCE_NUMBER, message
    assert produce_raw(conn, topic, batch(pid, bumped, 0, [b"e1-0"]), -1)[:2] == (NONE, 2)
    stale, _, message = produce_raw(conn, topic, batch(pid, epoch, 2, [b"stale"]), -1)
    assert stale == INVALID_PRODUCER_EPOCH, message
    assert [k for _, k in stored_records(bootstrap, topic)] == [b"e0-0", b"e0-1", b"e1-0"]


def test_confluent_idempotent_producer_writes_sequenced_batches_once(bootstrap: str, topic: str) -> None:
    """librdkafka with enable.idempotence=True (acks=all, up to 5 requests in flight): one
    producer id on every batch, sequences without gaps or overlaps, every message once."""
    ck.create_topic(bootstrap, topic)
    sent = make_messages("idempotent")
    config = {
        "enable.idempotence": True,
        "compression.type": "zstd",
        "linger.ms": 2,
        "batch.num.messages": 500,  # many batches, several in flight at once
    }
    delivered = ck.produce(ck.producer(bootstrap, **config), topic, sent)

    pids = set()
    for partition in range(3):
        headers = fetch_batches(bootstrap, topic, partition)
        assert len(headers) > 1
        pids |= {(h.producer_id, h.producer_epoch) for h in headers}
        sequences = [(h.base_sequence, h.records_count) for h in headers]
        expected_next = 0
        for base_sequence, count in sequences:
            assert base_sequence == expected_next, f"partition {partition}: sequences {sequences}"
            expected_next += count
    [(pid, epoch)] = pids
    assert pid >= 0 and epoch >= 0
    assert stored_codecs(bootstrap, topic) == {4}

    check_round_trip(topic, sent, delivered, ck.consume_all(bootstrap, topic, len(sent)))
