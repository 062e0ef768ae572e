"""Frames and headers: fed whole, byte by byte, and with trailing bytes."""

from __future__ import annotations

import pytest

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey, advertised_versions
from kafkapy.protocol.errors import ProtocolError


def _request(api_key: int, version: int, corr: int, body: dict) -> bytes:  # type: ignore[type-arg]
    return framing.encode_request_frame(
        api_key, version, corr, "cli", messages.encode_request(api_key, version, body)
    )


def test_header_versions_follow_flexible_versions() -> None:
    assert framing.request_header_version(ApiKey.METADATA, 8) == 1
    assert framing.request_header_version(ApiKey.METADATA, 9) == 2
    assert framing.request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert framing.request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert framing.request_header_version(ApiKey.API_VERSIONS, 77) == 2  # newer than we know
    assert framing.request_header_version(9999, 0) == 1
    assert framing.response_header_version(ApiKey.FETCH, 11) == 0
    assert framing.response_header_version(ApiKey.FETCH, 12) == 1
    assert framing.response_header_version(ApiKey.API_VERSIONS, 3) == 0  # always v0


@pytest.mark.parametrize("version", [0, 8, 9, 12])
def test_request_header_parses_and_points_at_the_body(version: int) -> None:
    wire = _request(ApiKey.METADATA, version, 42, {"topics": [{"name": "t"}]})
    hdr = framing.parse_request_header(wire[4:])
    assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id) == (3, version, 42, "cli")
    assert hdr.header_version == (2 if version >= 9 else 1)
    assert messages.decode_request(3, version, wire[4:], hdr.body_offset).topics[0].name == "t"


def test_header_tagged_fields_are_skipped() -> None:
    head = framing.encode_request_header(3, 12, 7, None)[:-1] + b"\x01\x05\x02hi"
    hdr = framing.parse_request_header(head + b"BODY")
    assert hdr.client_id is None
    assert hdr.body_offset == len(head)


def test_truncated_headers_raise_protocol_error() -> None:
    wire = _request(ApiKey.METADATA, 12, 1, {"topics": []})[4:]
    for cut in range(0, 12):
        with pytest.raises(ProtocolError):
            framing.parse_request_header(wire[:cut])


def test_frame_decoder_all_at_once_byte_by_byte_and_with_trailing_bytes() -> None:
    frames = [_request(3, v, v, {"topics": None if v else []}) for v in range(13)]
    stream = b"".join(frames)
    assert framing.FrameDecoder().feed(stream) == [f[4:] for f in frames]
    dec = framing.FrameDecoder()
    got = []
    for i in range(len(stream)):
        got += dec.feed(stream[i : i + 1])
    assert got == [f[4:] for f in frames]
    dec = framing.FrameDecoder()
    assert dec.feed(stream + b"\x00\x00") == [f[4:] for f in frames]
    assert dec.buffered == 2


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
def test_frame_decoder_refuses_hostile_sizes(prefix: bytes) -> None:
    with pytest.raises(ProtocolError):
        framing.FrameDecoder().feed(prefix)


def test_response_headers() -> None:
    flex = framing.encode_response_frame(ApiKey.FETCH, 12, 9, b"body")
    assert flex == b"\x00\x00\x00\x09" + b"\x00\x00\x00\x09\x00" + b"body"
    assert framing.parse_response_header(flex[4:], 1) == (9, 5)
    av = framing.encode_response_frame(ApiKey.API_VERSIONS, 3, 9, b"")
    assert av == b"\x00\x00\x00\x04\x00\x00\x00\x09"


def test_api_versions_fallback_lists_our_ranges_in_a_v0_body() -> None:
    wire = framing.api_versions_fallback_frame(5)
    corr, offset = framing.parse_response_header(wire[4:], 0)
    body = messages.decode_response(ApiKey.API_VERSIONS, 0, wire[4:], offset)
    assert corr == 5 and body.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == advertised_versions()
    assert (0, 0, 9) in advertised_versions()  # Produce advertised from 0 (KAFKA-18659)
