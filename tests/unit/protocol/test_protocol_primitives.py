"""Property tests: flexible-version primitives round-trip and refuse what Kafka refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkapy.protocol import primitives as prim
from kafkapy.protocol.errors import ProtocolError


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trips(n: int) -> None:
    data = prim.write_uvarint(n)
    assert len(data) <= 5
    assert prim.read_uvarint(data + b"\xff", 0) == (n, len(data))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trips(n: int) -> None:
    data = prim.write_varint(n)
    assert prim.read_varint(data, 0) == (n, len(data))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trips(n: int) -> None:
    data = prim.write_varlong(n)
    assert len(data) <= 10
    assert prim.read_varlong(data, 0) == (n, len(data))


@given(st.one_of(st.none(), st.text()), st.booleans())
def test_strings_round_trip(value: str | None, compact: bool) -> None:
    data = prim.write_string(value, compact)
    assert prim.read_string(data, 0, compact) == (value, len(data))


@given(st.one_of(st.none(), st.binary()), st.booleans())
def test_bytes_round_trip_as_views(value: bytes | None, compact: bool) -> None:
    data = prim.write_bytes(value, compact)
    got, end = prim.read_bytes(data, 0, compact)
    assert end == len(data)
    assert (None if got is None else bytes(got)) == value


@given(st.binary(max_size=12))
def test_readers_only_raise_protocol_error(data: bytes) -> None:
    for reader in (prim.read_uvarint, prim.read_varint, prim.read_varlong, prim.skip_tagged_fields):
        try:
            reader(data, 0)
        except ProtocolError:
            pass
    for compact in (True, False):
        for reader2 in (prim.read_string, prim.read_bytes):
            try:
                reader2(data, 0, compact)
            except (ProtocolError, prim.struct.error, UnicodeDecodeError):
                pass


def test_varints_longer_than_allowed_are_refused() -> None:
    with pytest.raises(ProtocolError):
        prim.read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(ProtocolError):
        prim.read_uvarint(b"\xff\xff\xff\xff\x7f", 0)  # 35 bits
    with pytest.raises(ProtocolError):
        prim.read_varint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(ProtocolError):
        prim.read_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(ProtocolError):
        prim.read_uvarint(b"\x80", 0)  # truncated


def test_lengths_beyond_the_buffer_are_refused() -> None:
    with pytest.raises(ProtocolError):
        prim.read_string(b"\x7f\xff" + b"a" * 10, 0, compact=False)
    with pytest.raises(ProtocolError):
        prim.read_bytes(b"\xff\xff\xff\xfe", 0, compact=False)  # -2
    with pytest.raises(ProtocolError):
        prim.skip_tagged_fields(b"\x01\x00\x7f", 0)
