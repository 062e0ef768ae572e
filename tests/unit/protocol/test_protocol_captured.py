"""Frames captured from confluent-kafka (librdkafka 2.16), kafka-python 3.0 and aiokafka 0.14.

Recorded by tests/tools/capture_client_frames.py through a proxy in front of Tansu. Each must
decode fed whole, byte by byte, and with trailing bytes; mutated copies must only ever decode
or raise ProtocolError (or UnsupportedVersionException for a mutated version), quickly.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkapy.protocol import framing, messages, produce
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException
from kafkapy.protocol.schema import get_spec

CAPTURED = Path(__file__).parents[2] / "data" / "captured"
FILES = sorted(CAPTURED.rglob("*.bin"))
CLIENTS = sorted({f.parent.name for f in FILES})
FRAMES = [f.read_bytes() for f in FILES]


def decode_like_a_broker(frame: bytes) -> object:
    """Header, then the body if we have a schema for that version: what the server will do."""
    header = framing.parse_request_header(frame)
    spec = get_spec(header.api_key, "request")
    if spec is None or header.api_version not in spec.valid:
        return header  # answered with UNSUPPORTED_VERSION / connection closed by the server
    if header.api_key == ApiKey.PRODUCE and produce.MIN_VERSION <= header.api_version <= produce.MAX_VERSION:
        produce.decode_produce_request(header.api_version, frame, header.body_offset)
    return messages.decode_request(header.api_key, header.api_version, frame, header.body_offset)


def test_captures_cover_the_three_clients_and_stay_small() -> None:
    assert CLIENTS == ["aiokafka", "confluent_kafka", "kafka_python"]
    assert sum(len(f) for f in FRAMES) < 2_000_000
    kinds = {f.stem.rsplit("_", 1)[0] for f in FILES}
    for needed in ("produce", "fetch", "metadata", "list_offsets", "join_group", "create_topics"):
        assert any(k.startswith(needed) for k in kinds), needed


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_captured_frame_decodes_and_reencodes(path: Path) -> None:
    data = path.read_bytes()
    (frame,) = framing.FrameDecoder().feed(data)
    header = framing.parse_request_header(frame)
    assert f"_v{header.api_version}_" in path.name
    spec = get_spec(header.api_key, "request")
    if spec is None:
        # librdkafka's GetTelemetrySubscriptions (71): no spec ships for it, and we never
        # advertise it, so the header must parse and the broker must not claim to serve it.
        assert header.api_key not in SUPPORTED_VERSIONS
        return
    msg = messages.decode_request(header.api_key, header.api_version, frame, header.body_offset)
    body = frame[header.body_offset :]
    reencoded = messages.encode_request(header.api_key, header.api_version, msg)
    # Equal, or a prefix: librdkafka's Metadata v9+ all-topics request carries 3 stray bytes.
    assert body.startswith(reencoded) and len(body) - len(reencoded) in (0, 3)
    assert (
        messages.decode_request(
            header.api_key, header.api_version, frame + b"\x00\x01\x02", header.body_offset
        )
        == msg
    )


@pytest.mark.parametrize("client", CLIENTS)
def test_stream_decodes_whole_and_byte_by_byte(client: str) -> None:
    frames = [f.read_bytes() for f in FILES if f.parent.name == client]
    stream = b"".join(frames)
    assert framing.FrameDecoder().feed(stream) == [f[4:] for f in frames]
    dec = framing.FrameDecoder()
    got: list[bytes] = []
    for i in range(len(stream)):
        got += dec.feed(stream[i : i + 1])
    assert got == [f[4:] for f in frames]
    for frame in got:
        decode_like_a_broker(frame)


def test_librdkafka_metadata_all_topics_has_null_topics_and_trailing_bytes() -> None:
    found = False
    for path in CAPTURED.glob("confluent_kafka/metadata_v*.bin"):
        frame = path.read_bytes()[4:]
        header = framing.parse_request_header(frame)
        req = messages.decode_request(3, header.api_version, frame, header.body_offset)
        if req.topics is None:
            found = True
    assert found


def test_produce_captures_expose_acks_and_record_views() -> None:
    for path in CAPTURED.glob("*/produce_v*.bin"):
        frame = path.read_bytes()[4:]
        header = framing.parse_request_header(frame)
        req = produce.decode_produce_request(header.api_version, frame, header.body_offset)
        assert req.acks in (-1, 0, 1)
        records = [p.records for t in req.topics for p in t.partitions]
        assert records and all(isinstance(r, memoryview) and len(r) >= 61 for r in records)


def _must_fail_cleanly(frame: bytes) -> None:
    start = time.perf_counter()
    try:
        decode_like_a_broker(frame)
    except (ProtocolError, UnsupportedVersionException):
        pass
    assert time.perf_counter() - start < 0.5


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.sampled_from(FRAMES), st.integers(0, 10_000))
def test_truncated_frames_fail_cleanly(data: bytes, cut: int) -> None:
    _must_fail_cleanly(data[4 : 4 + cut % len(data)])


@FUZZ
@given(st.sampled_from(FRAMES), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6))
def test_flipped_bytes_fail_cleanly(data: bytes, flips: list[tuple[int, int]]) -> None:
    frame = bytearray(data[4:])
    for pos, value in flips:
        frame[pos % len(frame)] = value
    _must_fail_cleanly(bytes(frame))


HOSTILE = [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff", b"\x7f\xff",
           b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x80"]  # fmt: skip


@FUZZ
@given(st.sampled_from(FRAMES), st.integers(8, 10_000), st.sampled_from(HOSTILE), st.booleans())
def test_huge_lengths_and_varints_fail_cleanly(data: bytes, pos: int, junk: bytes, insert: bool) -> None:
    frame = bytearray(data[4:])
    pos = 8 + pos % max(1, len(frame) - 8)  # keep api key/version: reach the body decoders
    if insert:
        frame[pos:pos] = junk
    else:
        frame[pos : pos + len(junk)] = junk
    _must_fail_cleanly(bytes(frame))


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_fail_cleanly(data: bytes) -> None:
    _must_fail_cleanly(data)
    for frame in FRAMES[:5]:
        _must_fail_cleanly(frame[4:12] + data)  # a real header, a random body
