"""The consumer protocol's subscription and assignment payloads: round trips, the bytes other
clients write (aiokafka's v0 encoder, librdkafka's v3 layout), newer versions read with the
newest format we know, and malformed input raising ProtocolError only."""

from __future__ import annotations

import struct

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from hypothesis import given
from hypothesis import strategies as st

from kafkapy.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    assigned_partitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscribed_topics,
)
from kafkapy.protocol.errors import ProtocolError


def kstr(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_our_subscription_is_v1_with_sorted_topics_and_owned_partitions() -> None:
    data = encode_subscription(["b", "a"], b"ud", owned=[("a", 1), ("a", 0)])
    assert data == (
        b"\x00\x01" + struct.pack(">i", 2) + kstr("a") + kstr("b") + struct.pack(">i", 2) + b"ud"
        + struct.pack(">i", 1) + kstr("a") + struct.pack(">iii", 2, 0, 1)
    )  # fmt: skip
    assert decode_subscription(data) == Subscription(("a", "b"), b"ud", (("a", 0), ("a", 1)))


def test_aiokafka_v0_payloads_decode_and_ours_decode_in_aiokafka() -> None:
    sub = ConsumerProtocolMemberMetadata(0, ["t1", "t2"], b"").encode()
    assert decode_subscription(sub) == Subscription(("t1", "t2"), b"")
    assignment = ConsumerProtocolMemberAssignment(0, [("t", [0, 2])], b"").encode()
    assert decode_assignment(assignment) == Assignment((("t", 0), ("t", 2)), b"")
    ours = ConsumerProtocolMemberAssignment.decode(encode_assignment([("t", 3), ("s", 1)]))
    assert sorted(ours.partitions()) == [("s", 1), ("t", 3)]


def test_librdkafka_style_v3_subscription_with_generation_and_rack() -> None:
    data = (
        b"\x00\x03" + struct.pack(">i", 1) + kstr("t") + struct.pack(">i", -1)  # no user data
        + struct.pack(">i", 0) + struct.pack(">i", 7) + kstr("rack-1")
    )  # fmt: skip
    assert decode_subscription(data) == Subscription(("t",), None, (), 7, "rack-1")


def test_a_newer_version_is_read_with_the_newest_format_we_know() -> None:
    v3 = encode_subscription(["t"])[2:] + struct.pack(">i", -1) + struct.pack(">h", -1)
    assert decode_subscription(b"\x00\x09" + v3 + b"future fields").topics == ("t",)


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    assert decode_assignment(b"") == Assignment(())


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff\x00\x00\x00\x00", b"\x00\x01\x7f\xff\xff\xff"])
def test_malformed_subscriptions_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(data)


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5), st.sets(st.integers(0, 2**31 - 1), max_size=4), max_size=4
    ),
    st.one_of(st.none(), st.binary(max_size=8)),
)
def test_assignment_round_trips(partitions: dict[str, set[int]], user_data: bytes | None) -> None:
    flat = sorted((t, p) for t, ps in partitions.items() for p in ps)
    got = decode_assignment(encode_assignment(flat, user_data))
    assert sorted(got.partitions) == flat and got.user_data == user_data


def test_the_coordinators_lenient_reads_give_nothing_for_bytes_they_cannot_parse() -> None:
    assert subscribed_topics(encode_subscription(["b", "a"])) == {"a", "b"}
    assert assigned_partitions(encode_assignment([("t", 1), ("t", 0)])) == [("t", 0), ("t", 1)]
    assert subscribed_topics(b"\x00\x00\x7f\xff\xff\xff") is None
    assert assigned_partitions(b"") == []
    assert assigned_partitions(b"\x00\x00\x00\x00\x00\x01\x00") == []
