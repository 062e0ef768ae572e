"""A malformed frame costs only its own connection.

While a confluent-kafka producer and consumer keep working on the shared broker, raw sockets
send it garbage: random bytes, a hostile 0x7fffffff length, a negative length, a truncated
Produce, an unknown API key, a frame cut off by the peer. The broker must close each of those
connections (and answer nothing on them), while the concurrent clients see no error and every
message they produced is read back. A Produce whose frame is well formed but whose batch is
corrupt is the opposite case: it is answered with CORRUPT_MESSAGE and the connection stays.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import confluent_io as ck
import pytest
from client_helpers import WAIT_S, check_round_trip, make_messages
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.record_codec import build_batch
from kafkapy.testing import KafkapyCluster

pytestmark = pytest.mark.timeout(120)

CLOSE_TIMEOUT_S = 10.0
PRODUCE_VERSION = 9
CORRUPT_MESSAGE = 2


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=CLOSE_TIMEOUT_S)


def closed_by_broker(sock: socket.socket) -> bool:
    """True when the broker closes the connection without sending a byte."""
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        if not data:
            return True
        return False  # the broker answered something: it took the frame for a request
    return False


def produce_frame(topic: str, records: bytes, correlation_id: int = 7) -> bytes:
    body = messages.encode_request(
        ApiKey.PRODUCE,
        PRODUCE_VERSION,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        },
    )
    return framing.encode_request_frame(ApiKey.PRODUCE, PRODUCE_VERSION, correlation_id, "malformed", body)


def reframe(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def some_records() -> bytes:
    return bytes(build_batch([(b"k", b"v" * 100, [], int(time.time() * 1000))] * 10))


def hostile_frames(topic: str) -> dict[str, bytes]:
    rng = random.Random(20240607)
    produce = produce_frame(topic, some_records())
    body = produce[4:]
    return {
        # A plausible length followed by random bytes: the header cannot be parsed.
        **{f"random body {i}": reframe(rng.randbytes(rng.randrange(8, 512))) for i in range(8)},
        "random header then zeros": reframe(rng.randbytes(10) + bytes(200)),
        "length 0x7fffffff": struct.pack(">I", 0x7FFFFFFF) + rng.randbytes(1024),
        "negative length": struct.pack(">i", -5) + rng.randbytes(64),
        "zero length": struct.pack(">i", 0),
        # A Produce whose frame is complete but whose body stops early, at several points.
        **{f"produce truncated to {n}": reframe(body[:n]) for n in (9, 20, len(body) // 2, len(body) - 7)},
        # A Produce whose record set claims more bytes than the frame holds.
        "produce with overlong record set": reframe(body[:-100]),
        "unknown api key 999": reframe(struct.pack(">hhih", 999, 0, 1, 3) + b"bad" + bytes(16)),
    }


@pytest.fixture
def busy_clients(bootstrap: str, topic: str) -> Iterator[Callable[[], None]]:
    """A producer and a consumer working on `topic` in threads; calling the fixture's value
    stops them and checks every produced message was acknowledged and read back."""
    ck.create_topic(bootstrap, topic)
    stop = threading.Event()
    producer_done = threading.Event()
    sent: list[Any] = []
    delivered: list[Any] = []
    consumed: list[Any] = []
    failures: list[BaseException] = []

    def producing() -> None:
        try:
            p = ck.producer(bootstrap, acks="all")
            for round_ in range(1000):
                if stop.is_set():
                    return
                msgs = make_messages(f"busy-{round_}", 200, start=len(sent))
                delivered.extend(ck.produce(p, topic, msgs))
                sent.extend(msgs)
        except BaseException as e:
            failures.append(e)
        finally:
            producer_done.set()

    def consuming() -> None:
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"{topic}-busy", "enable.auto.commit": False}
        )
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
            deadline = time.monotonic() + 100
            while time.monotonic() < deadline:
                if producer_done.is_set() and len(consumed) >= len(delivered):
                    return
                for msg in c.consume(1000, 0.2):
                    assert msg.error() is None, msg.error()
                    consumed.append(ck.to_consumed(msg))
        except BaseException as e:
            failures.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=producing), threading.Thread(target=consuming)]
    for t in threads:
        t.start()

    def finish() -> None:
        time.sleep(0.5)  # let the clients work past the last malformed frame
        stop.set()
        for t in threads:
            t.join(WAIT_S)
        assert not any(t.is_alive() for t in threads), "a client thread hung"
        assert not failures, failures
        assert len(sent) >= 1000, f"the producer made little progress: {len(sent)} messages"
        check_round_trip(topic, sent, delivered, consumed)

    try:
        yield finish
    finally:
        stop.set()
        for t in threads:
            t.join(WAIT_S)


def test_a_malformed_frame_closes_only_its_own_connection(
    bootstrap: str, topic: str, busy_clients: Callable[[], None], kafkapy_shared_cluster: KafkapyCluster
) -> None:
    broker = kafkapy_shared_cluster.brokers[0]
    log_start = len(broker.server_log())
    idle = connect(bootstrap)  # a bystander connection that must survive everything below
    not_closed = []
    for name, frame in hostile_frames(topic).items():
        with connect(bootstrap) as sock:
            sock.sendall(frame)
            if not closed_by_broker(sock):
                not_closed.append(name)
        time.sleep(0.05)
    # A frame the peer abandons halfway: the broker sees EOF and lets the connection go.
    with connect(bootstrap) as sock:
        full = produce_frame(topic, some_records())
        sock.sendall(full[: len(full) // 2])
        sock.shutdown(socket.SHUT_WR)
        assert closed_by_broker(sock), "half a frame then EOF"
    assert not_closed == [], f"the broker kept these connections open: {not_closed}"
    # Each was refused as a protocol error, not by a handler crashing on it.
    log = broker.server_log()[log_start:]
    # Kafka's two wordings: a frame refused after it was read, and a size prefix refused before
    # ("Unexpected error from <conn>; closing connection: Invalid receive (size = ...)").
    closes = log.count("WARN Closing connection") + log.count("; closing connection: Invalid receive")
    assert closes >= len(hostile_frames(topic)), log
    assert "unexpected error" not in log, log

    busy_clients()

    host, port = bootstrap.rsplit(":", 1)
    with idle, BrokerConnection(host, int(port), "after-malformed", timeout=CLOSE_TIMEOUT_S) as fresh:
        assert fresh.api_versions()[ApiKey.PRODUCE][1] >= 3
        idle.sendall(framing.encode_request_frame(ApiKey.API_VERSIONS, 0, 1, "idle", b""))
        idle.settimeout(CLOSE_TIMEOUT_S)
        assert len(idle.recv(65536)) > 4, "the bystander connection was closed"


def test_a_corrupt_batch_is_answered_and_the_connection_stays_open(bootstrap: str, topic: str) -> None:
    ck.create_topic(bootstrap, topic, partitions=1)
    host, port = bootstrap.rsplit(":", 1)
    good = some_records()
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # the CRC-32C no longer matches
    with BrokerConnection(host, int(port), "corrupt-batch", timeout=CLOSE_TIMEOUT_S) as conn:
        for records, want in (
            (bytes(bad), (CORRUPT_MESSAGE, -1)),
            (good, (0, 0)),
            (bytes(bad), (CORRUPT_MESSAGE, -1)),
        ):
            resp = conn.send(
                ApiKey.PRODUCE,
                PRODUCE_VERSION,
                {
                    "transactional_id": None,
                    "acks": 1,
                    "timeout_ms": 10_000,
                    "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
                },
            )
            assert resp is not None and conn.connected
            part = resp.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == want
