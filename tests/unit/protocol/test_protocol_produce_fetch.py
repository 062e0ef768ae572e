"""The hand-written Produce and Fetch paths give the generic codec's bytes, without copies."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator

import pytest

from kafkapy.protocol import fetch, framing, messages, produce
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.file_region import FileRegion

PRODUCE_VERSIONS = range(produce.MIN_VERSION, produce.MAX_VERSION + 1)
FETCH_VERSIONS = range(fetch.MIN_VERSION, fetch.MAX_VERSION + 1)


def _produce_body(version: int, tid: str | None = "tx", acks: int = -1) -> bytes:
    return messages.encode_request(0, version, {
        "transactional_id": tid, "acks": acks, "timeout_ms": 1500,
        "topic_data": [
            {"name": "a", "partition_data": [{"index": 0, "records": b"R0" * 10}, {"index": 3, "records": None}]},
            {"name": "b\u00e9", "partition_data": []},
        ],
    })  # fmt: skip


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_request_decodes_like_the_generic_codec(version: int) -> None:
    body = _produce_body(version)
    req = produce.decode_produce_request(version, body + b"\x01\x02\x03")
    assert (req.transactional_id, req.acks, req.timeout_ms) == ("tx", -1, 1500)
    assert [t.name for t in req.topics] == ["a", "b\u00e9"]
    p0, p3 = req.topics[0].partitions
    assert p0.index == 0 and isinstance(p0.records, memoryview) and bytes(p0.records) == b"R0" * 10
    assert p3 == (3, None)


def test_produce_records_are_views_into_the_buffer() -> None:
    buf = bytearray(_produce_body(9))
    rec = produce.decode_produce_request(9, buf).topics[0].partitions[0].records
    assert rec is not None
    buf[buf.index(b"R0R0")] = ord("X")
    assert bytes(rec)[:1] == b"X"


def test_produce_acks_zero_and_null_transactional_id_are_exposed() -> None:
    req = produce.decode_produce_request(7, _produce_body(7, tid=None, acks=0))
    assert req.acks == 0 and req.transactional_id is None


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_request_refuses_every_truncation(version: int) -> None:
    body = _produce_body(version)
    for cut in range(len(body) - 1):
        try:
            produce.decode_produce_request(version, body[:cut])
        except ProtocolError:
            continue
        # A cut inside trailing tagged fields of the last level may still parse; nothing else.
        assert version >= produce.FIRST_FLEXIBLE and cut >= len(body) - 2, cut


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_response_matches_the_generic_codec(version: int) -> None:
    results = [
        ("a", [produce.ProducePartitionResponse(0, 0, 42, -1, 7),
               produce.ProducePartitionResponse(1, 10, -1, 5, 0, [(2, "bad"), (3, None)], "too big")]),
        ("b", []),
    ]  # fmt: skip
    ours = produce.encode_produce_response(version, results, throttle_time_ms=9)
    generic = messages.encode_response(0, version, {
        "throttle_time_ms": 9,
        "responses": [{"name": n, "partition_responses": [
            {"index": r.index, "error_code": r.error_code, "base_offset": r.base_offset,
             "log_append_time_ms": r.log_append_time_ms, "log_start_offset": r.log_start_offset,
             "record_errors": [{"batch_index": i, "batch_index_error_message": m} for i, m in r.record_errors],
             "error_message": r.error_message} for r in parts]} for n, parts in results],
    })  # fmt: skip
    assert ours == generic


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@pytest.mark.parametrize("name", ["t", "x" * 200])  # a one- and a two-byte compact length
@pytest.mark.parametrize(
    "row",
    [produce.ProducePartitionResponse(0, 0, 42, -1, 7), produce.ProducePartitionResponse(3, 6, -1, 5, 0)],
)
def test_produce_response_frame_is_header_plus_body(
    version: int, name: str, row: produce.ProducePartitionResponse
) -> None:
    """The framed answer (one-partition fast path included) is exactly size + header + body."""
    for results in ([(name, [row])], [(name, [row, row._replace(index=9)])]):
        frame = bytes(produce.encode_produce_response_frame(version, 1234, results))
        body = produce.encode_produce_response(version, results)
        header = framing.encode_response_header(1234, framing.response_header_version(0, version))
        assert frame == framing.frame(header, body)


@pytest.fixture
def segment_file() -> Iterator[tuple[int, bytes]]:
    data = bytes(range(256)) * 4
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        yield f.fileno(), data


def _materialize(segments: list[fetch.Segment], data: bytes) -> bytes:
    out = b""
    for s in segments:
        out += data[s.position : s.position + s.length] if isinstance(s, FileRegion) else bytes(s)
    return out


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_response_segments_match_the_generic_codec(
    version: int, segment_file: tuple[int, bytes]
) -> None:
    fd, data = segment_file
    tid = uuid.UUID(int=77)
    regions = [FileRegion(fd, 10, 100), FileRegion(fd, 500, 24)]
    topics = [
        fetch.FetchTopicData("events", tid, [
            fetch.FetchPartitionData(0, 0, 120, 120, 3, regions),
            fetch.FetchPartitionData(1, 1, -1, -1, -1, None, [(5, 6)], 2),
            fetch.FetchPartitionData(2, 0, 9, 9, 0, b"inline-records"),
        ]),
        fetch.FetchTopicData("empty", uuid.UUID(int=78), []),
    ]  # fmt: skip
    segments = fetch.encode_fetch_response(version, 31, topics, throttle_time_ms=4, session_id=12)
    assert any(s is regions[0] for s in segments) and any(s is regions[1] for s in segments)
    wire = _materialize(segments, data)
    assert fetch.total_size(segments) == len(wire)
    assert int.from_bytes(wire[:4], "big") == len(wire) - 4
    body = messages.encode_response(1, version, {
        "throttle_time_ms": 4, "error_code": 0, "session_id": 12,
        "responses": [{"topic": t.topic, "topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code, "high_watermark": p.high_watermark,
             "last_stable_offset": p.last_stable_offset, "log_start_offset": p.log_start_offset,
             "aborted_transactions": None if p.aborted_transactions is None else [
                 {"producer_id": a, "first_offset": b} for a, b in p.aborted_transactions],
             "preferred_read_replica": p.preferred_read_replica,
             # An errored partition carries empty records, never null ones (librdkafka refuses
             # a whole response over a null record set), as Kafka's answers do.
             "records": b"" if p.records is None else (
                 b"".join(data[r.position:r.position + r.length] for r in p.records)
                 if isinstance(p.records, list) else p.records)}
            for p in t.partitions]} for t in topics],
    })  # fmt: skip
    assert wire == framing.encode_response_frame(1, version, 31, body)


def test_fetch_request_decodes_through_the_generic_codec() -> None:
    body = messages.encode_request(
        1,
        16,
        {
            "max_wait_ms": 500,
            "min_bytes": 1,
            "topics": [{"topic_id": uuid.UUID(int=1), "partitions": [{"partition": 0, "fetch_offset": 10}]}],
        },
    )
    req = fetch.decode_fetch_request(16, body)
    assert req.topics[0].partitions[0].fetch_offset == 10 and req.max_wait_ms == 500


def test_fetch_versions_outside_range_are_refused() -> None:
    with pytest.raises(Exception, match="outside"):
        fetch.encode_fetch_response(17, 0, [])
