"""Produce requests of unusual shape, sent as raw protocol requests.

A partition named twice in one request counts once, with its last records (Kafka builds a map
of the request's partitions); answers of every shape (one partition, several topics, errors
next to successes) come back in request order with the offsets the log gave them.
"""

from __future__ import annotations

import time

import confluent_io as ck
import pytest

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.protocol.record_codec import build_batch

pytestmark = pytest.mark.timeout(120)

UNKNOWN_TOPIC_OR_PARTITION = 3
PRODUCE_VERSION = 9


def records(*values: bytes) -> bytes:
    return bytes(build_batch([(None, v, [], int(time.time() * 1000)) for v in values]))


def produce(conn: BrokerConnection, acks: int, topic_data: list[tuple[str, list[tuple[int, bytes]]]]) -> list:
    response = conn.send(
        ApiKey.PRODUCE,
        PRODUCE_VERSION,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": name, "partition_data": [{"index": i, "records": r} for i, r in parts]}
                for name, parts in topic_data
            ],
        },
    )
    assert response is not None
    return [
        (t.name, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
        for t in response.responses
    ]


def fetch_values(conn: BrokerConnection, topic: str, partition: int) -> list[int]:
    """Record counts of the batches in the partition, from offset 0."""
    response = conn.send(
        ApiKey.FETCH,
        4,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        },
    )
    assert response is not None
    data = response.responses[0].partitions[0]
    assert data.error_code == 0
    return [header.records_count for _, header in iter_batches(memoryview(data.records or b""))]


@pytest.mark.parametrize("acks", [1, -1])
def test_a_partition_named_twice_is_appended_once_with_its_last_records(
    bootstrap: str, topic: str, acks: int
) -> None:
    ck.create_topic(bootstrap, topic, partitions=2)
    host, port = bootstrap.rsplit(":", 1)
    with BrokerConnection(host, int(port), "shapes", timeout=30) as conn:
        answer = produce(
            conn, acks, [(topic, [(0, records(b"a")), (1, records(b"b")), (0, records(b"c", b"d", b"e"))])]
        )
        assert answer == [(topic, [(0, 0, 0), (1, 0, 0)])]
        assert fetch_values(conn, topic, 0) == [3]  # the last records named for partition 0, once
        assert fetch_values(conn, topic, 1) == [1]


def test_answers_keep_request_order_with_errors_beside_successes(bootstrap: str, topic: str) -> None:
    ck.create_topic(bootstrap, topic, partitions=2)
    host, port = bootstrap.rsplit(":", 1)
    with BrokerConnection(host, int(port), "shapes", timeout=30) as conn:
        first = produce(conn, 1, [(topic, [(1, records(b"x", b"y"))])])
        assert first == [(topic, [(1, 0, 0)])]
        answer = produce(
            conn,
            1,
            [(topic, [(1, records(b"z")), (7, records(b"no such partition")), (0, records(b"w"))]),
             (f"{topic}-missing", [(0, records(b"no such topic"))])],
        )  # fmt: skip
        assert answer == [
            (topic, [(1, 0, 2), (7, UNKNOWN_TOPIC_OR_PARTITION, -1), (0, 0, 0)]),
            (f"{topic}-missing", [(0, UNKNOWN_TOPIC_OR_PARTITION, -1)]),
        ]
