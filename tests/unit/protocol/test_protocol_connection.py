"""BrokerConnection against a small fake broker speaking our own framing over a real socket."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kafkapy.client.connection import BrokerConnection, ConnectionClosedError, RequestTimeoutError
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException

Reply = Callable[[framing.RequestHeader, bytes], bytes | None]


class FakeBroker:
    """Answers each request frame with `reply(header, frame)` (a whole response frame, or None)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.requests: list[framing.RequestHeader] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        decoder = framing.FrameDecoder()
        with conn:
            while data := conn.recv(65536):
                for frame in decoder.feed(data):
                    header = framing.parse_request_header(frame)
                    self.requests.append(header)
                    answer = self.reply(header, frame)
                    if answer is None:
                        continue
                    if answer == b"CLOSE":
                        return
                    conn.sendall(answer)

    def close(self) -> None:
        self.server.close()


def kafka_like(header: framing.RequestHeader, frame: bytes) -> bytes | None:
    if header.api_key == ApiKey.API_VERSIONS:
        if header.api_version > 2:  # pretend to be an older broker: ApiVersions 0-2 only
            return framing.api_versions_fallback_frame(header.correlation_id, [(18, 0, 2), (3, 0, 9)])
        body = messages.encode_response(
            18,
            header.api_version,
            {
                "api_keys": [
                    {"api_key": 18, "min_version": 0, "max_version": 2},
                    {"api_key": 3, "min_version": 0, "max_version": 9},
                ]
            },
        )
        return framing.encode_response_frame(18, header.api_version, header.correlation_id, body)
    if header.api_key == ApiKey.METADATA:
        req = messages.decode_request(3, header.api_version, frame, header.body_offset)
        names = [t.name for t in req.topics or []]
        body = messages.encode_response(
            3,
            header.api_version,
            {
                "brokers": [{"node_id": 1, "host": "h", "port": 1}],
                "topics": [{"name": n, "error_code": 3} for n in names],
            },
        )
        return framing.encode_response_frame(3, header.api_version, header.correlation_id, body)
    return None


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    b = FakeBroker(kafka_like)
    yield b
    b.close()


def test_api_versions_negotiation_retries_lower_and_picks_highest_common(broker: FakeBroker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, client_id="t", timeout=5) as conn:
        assert conn.api_versions() == {18: (0, 2), 3: (0, 9)}
        assert [r.api_version for r in broker.requests] == [3, 2]
        assert conn.pick_version(ApiKey.METADATA) == 9
        with pytest.raises(UnsupportedVersionException):
            conn.pick_version(ApiKey.FETCH)


def test_send_decodes_the_response_and_uses_fresh_correlation_ids(broker: FakeBroker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, client_id="tool", timeout=5) as conn:
        for v in (1, 9):
            resp = conn.send(ApiKey.METADATA, v, {"topics": [{"name": "a"}, {"name": "b"}]})
            assert resp is not None and [t.name for t in resp.topics] == ["a", "b"]
        assert [r.client_id for r in broker.requests] == ["tool", "tool"]
        assert len({r.correlation_id for r in broker.requests}) == 2


def test_threads_share_one_connection(broker: FakeBroker) -> None:
    errors: list[BaseException] = []
    with BrokerConnection("127.0.0.1", broker.port, timeout=5) as conn:

        def worker(i: int) -> None:
            try:
                for _ in range(20):
                    resp = conn.send(ApiKey.METADATA, 9, {"topics": [{"name": f"t{i}"}]})
                    assert resp is not None and resp.topics[0].name == f"t{i}"
            except BaseException as e:  # reported below, in the test thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


def test_a_silent_broker_times_out_and_the_next_send_reconnects() -> None:
    calls = []

    def reply(header: framing.RequestHeader, frame: bytes) -> bytes | None:
        calls.append(header)
        return None if len(calls) == 1 else kafka_like(header, frame)

    b = FakeBroker(reply)
    try:
        conn = BrokerConnection("127.0.0.1", b.port, timeout=0.3)
        with pytest.raises(RequestTimeoutError, match="no response"):
            conn.send(ApiKey.METADATA, 9, {"topics": []})
        assert not conn.connected
        assert conn.send(ApiKey.METADATA, 9, {"topics": []}) is not None
        conn.close()
    finally:
        b.close()


def test_a_closed_connection_is_a_clear_error() -> None:
    b = FakeBroker(lambda h, f: b"CLOSE")
    try:
        conn = BrokerConnection("127.0.0.1", b.port, timeout=2)
        with pytest.raises(ConnectionClosedError, match="closed the connection"):
            conn.send(ApiKey.METADATA, 9, {"topics": []})
    finally:
        b.close()


def test_nothing_listening_is_a_clear_error() -> None:
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(ConnectionClosedError, match="cannot connect"):
        BrokerConnection("127.0.0.1", port, timeout=2).connect()


def test_a_wrong_correlation_id_is_a_protocol_error() -> None:
    def reply(header: framing.RequestHeader, frame: bytes) -> bytes:
        body = messages.encode_response(3, 9, {})
        return framing.encode_response_frame(3, 9, header.correlation_id + 1, body)

    b = FakeBroker(reply)
    try:
        with pytest.raises(ProtocolError, match="correlation id"):
            BrokerConnection("127.0.0.1", b.port, timeout=2).send(ApiKey.METADATA, 9, {})
    finally:
        b.close()


def test_acks_zero_produce_expects_no_response(broker: FakeBroker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, timeout=2) as conn:
        body = {"acks": 0, "timeout_ms": 100, "topic_data": []}
        assert conn.send(ApiKey.PRODUCE, 9, body, expect_response=False) is None
        assert conn.send(ApiKey.METADATA, 9, {"topics": []}) is not None


class DribblingBroker:
    """Answers the first request with a Metadata response sent in `pieces`, `gap_s` apart; with
    `stop_after`, sends only that many pieces and then stays silent (a frame cut short)."""

    def __init__(self, topics: int, pieces: int, gap_s: float, stop_after: int | None = None) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.topics, self.pieces, self.gap_s, self.stop_after = topics, pieces, gap_s, stop_after
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            decoder = framing.FrameDecoder()
            frames: list[bytes] = []
            while not frames and (data := conn.recv(65536)):
                frames = list(decoder.feed(data))
            header = framing.parse_request_header(frames[0])
            body = messages.encode_response(
                3,
                9,
                {
                    "brokers": [],
                    "topics": [{"name": f"topic-{i:06d}", "error_code": 3} for i in range(self.topics)],
                },
            )
            answer = framing.encode_response_frame(3, 9, header.correlation_id, body)
            step = -(-len(answer) // self.pieces)
            for n, start in enumerate(range(0, len(answer), step)):
                if self.stop_after is not None and n == self.stop_after:
                    break
                conn.sendall(answer[start : start + step])
                time.sleep(self.gap_s)
            self.done.wait(10)

    def close(self) -> None:
        self.done.set()
        self.server.close()


def test_a_response_arriving_in_pieces_is_read_whole() -> None:
    # A plain socket reads the frame with one MSG_WAITALL recv: the pieces must still add up.
    b = DribblingBroker(topics=20_000, pieces=5, gap_s=0.05)
    try:
        with BrokerConnection("127.0.0.1", b.port, timeout=5) as conn:
            resp = conn.send(ApiKey.METADATA, 9, {"topics": []})
            assert resp is not None and len(resp.topics) == 20_000
            assert resp.topics[-1].name == "topic-019999"
    finally:
        b.close()


def test_a_frame_cut_short_times_out_at_the_deadline() -> None:
    b = DribblingBroker(topics=20_000, pieces=4, gap_s=0.0, stop_after=2)
    try:
        conn = BrokerConnection("127.0.0.1", b.port, timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises(RequestTimeoutError, match="no response"):
            conn.send(ApiKey.METADATA, 9, {"topics": []})
        assert 0.4 < time.monotonic() - t0 < 3
        assert not conn.connected
    finally:
        b.close()


def _fetch_answers(records: list[bytes]) -> Reply:
    """Answers the n-th Fetch (v12) with `records[n]` as partition 0's record set."""
    answered = itertools.count()

    def reply(header: framing.RequestHeader, frame: bytes) -> bytes | None:
        if header.api_key != ApiKey.FETCH:
            return None
        body = messages.encode_response(
            ApiKey.FETCH,
            12,
            {
                "responses": [
                    {"topic": "t", "partitions": [{"partition_index": 0, "records": records[next(answered)]}]}
                ]
            },
        )
        return framing.encode_response_frame(ApiKey.FETCH, 12, header.correlation_id, body)

    return reply


def test_a_reused_response_buffer_holds_each_answer_until_the_next_send() -> None:
    sizes = [300_000, 1000, 2_000_000]  # shrink (the buffer stays), then grow (a new one)
    answers = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
    b = FakeBroker(_fetch_answers(answers))
    request = {"max_wait_ms": 0, "topics": [{"topic": "t", "partitions": [{"partition": 0}]}]}
    try:
        with BrokerConnection("127.0.0.1", b.port, timeout=5, reuse_response_buffer=True) as conn:
            buffers = []
            for expected in answers:
                resp = conn.send(ApiKey.FETCH, 12, request)
                assert resp is not None
                records = resp.responses[0].partitions[0].records
                assert isinstance(records, memoryview) and records.tobytes() == expected
                buffers.append(records.obj)
            assert buffers[0] is buffers[1]  # the smaller answer was read into the same buffer
            assert buffers[2] is not buffers[1]  # a larger one did not resize it under live views
    finally:
        b.close()


def test_without_reuse_every_response_has_a_buffer_of_its_own(broker: FakeBroker) -> None:
    with BrokerConnection("127.0.0.1", broker.port, timeout=5) as conn:
        first = conn.send(ApiKey.METADATA, 9, {"topics": [{"name": "a"}]})
        second = conn.send(ApiKey.METADATA, 9, {"topics": [{"name": "b"}]})
        assert first is not None and second is not None
        assert [t.name for t in first.topics] == ["a"] and [t.name for t in second.topics] == ["b"]
        assert conn._response_buf == bytearray()  # nothing kept between responses
