"""__consumer_offsets keys and values in Kafka's schemas: exact bytes and round trips."""

from __future__ import annotations

import struct

import pytest

from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.server.coordinator import offsets_codec as codec


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_key_is_version_1_group_topic_partition() -> None:
    assert codec.offset_key("g", "t", 3) == b"\x00\x01" + s16("g") + s16("t") + struct.pack(">i", 3)
    assert codec.read_key(codec.offset_key("g", "t", 3)) == codec.OffsetKey("g", "t", 3, 1)


def test_group_key_is_version_2() -> None:
    assert codec.group_metadata_key("grp") == b"\x00\x02" + s16("grp")
    assert codec.read_key(b"\x00\x02" + s16("grp")) == codec.GroupMetadataKey("grp")


def test_offset_key_version_0_is_read_too() -> None:
    key = b"\x00\x00" + s16("g") + s16("t") + struct.pack(">i", 0)
    assert codec.read_key(key) == codec.OffsetKey("g", "t", 0, 0)


def test_offset_value_v3_layout() -> None:
    om = codec.OffsetAndMetadata(42, 7, "meta", 1000)
    value = codec.offset_value(om)
    assert value == b"\x00\x03" + struct.pack(">qi", 42, 7) + s16("meta") + struct.pack(">q", 1000)
    assert codec.read_offset_value(value) == om


def test_offset_value_with_expire_timestamp_is_v1() -> None:
    om = codec.OffsetAndMetadata(5, -1, "", 1000, 2000)
    value = codec.offset_value(om)
    assert value[:2] == b"\x00\x01"
    assert codec.read_offset_value(value) == om


@pytest.mark.parametrize("version", [0, 2])
def test_old_offset_values_are_read(version: int) -> None:
    value = struct.pack(">hq", version, 9) + s16("m") + struct.pack(">q", 77)
    assert codec.read_offset_value(value) == codec.OffsetAndMetadata(9, -1, "m", 77)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_value_round_trips_in_every_version(version: int) -> None:
    member = codec.MemberRecord(
        "m-1",
        "inst" if version >= 3 else None,
        "client",
        "/127.0.0.1",
        300 if version else 10,
        10,
        b"sub",
        b"asg",
    )
    value = codec.GroupMetadataValue("consumer", 4, "range", "m-1", 123 if version >= 2 else -1, (member,))
    assert codec.read_group_value(codec.group_metadata_value(value, version)) == value


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = codec.GroupMetadataValue("consumer", 2, None, None, 5, ())
    data = codec.group_metadata_value(value)
    assert data == b"\x00\x03" + s16("consumer") + struct.pack(">ihhqi", 2, -1, -1, 5, 0)
    assert codec.read_group_value(data) == value


def test_unknown_versions_and_short_records_are_corrupt() -> None:
    with pytest.raises(CorruptRecordException):
        codec.read_key(b"\x00\x07")
    with pytest.raises(CorruptRecordException):
        codec.read_offset_value(b"\x00\x03\x00")
