"""The schema-driven codec: round trips, wire compatibility with kafka-python, bounds."""

from __future__ import annotations

import importlib
import uuid

import pytest
from protocol_samples import assert_subset, sample

from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException
from kafkapy.protocol.schema import all_specs, get_spec

# kafka-python's own spec loader uses a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CASES = [
    (key, kind, v)
    for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
    for kind in ("request", "response")
    for v in range(low, high + 1)
]


def _ids(case: tuple[ApiKey, str, int]) -> str:
    return f"{case[0].name}-{case[1]}-v{case[2]}"


def _codec(kind: str):  # type: ignore[no-untyped-def]
    if kind == "request":
        return messages.encode_request, messages.decode_request
    return messages.encode_response, messages.decode_response


@pytest.mark.parametrize("case", CASES, ids=_ids)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_supported_version_round_trips(case: tuple[ApiKey, str, int], seed: int) -> None:
    key, kind, version = case
    encode, decode = _codec(kind)
    spec = get_spec(key, kind)
    assert spec is not None
    data = sample(spec, version, seed)
    wire = encode(key, version, data)
    decoded = decode(key, version, wire)
    assert_subset(data, decoded.to_dict())
    assert encode(key, version, decoded) == wire
    # Trailing bytes after a body are tolerated (librdkafka sends some).
    assert decode(key, version, wire + b"\x00\x01\x02") == decoded


def test_supported_versions_lie_within_the_specs() -> None:
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        for kind in ("request", "response"):
            spec = get_spec(key, kind)
            assert spec is not None, key
            assert low in spec.valid and high in spec.valid, (key, kind)


def _kafka_python_classes() -> dict[str, type]:
    from kafka.protocol.api_message import ApiMessage

    for mod in ("metadata", "consumer", "producer", "admin"):
        importlib.import_module(f"kafka.protocol.{mod}")
    found: dict[str, type] = {}
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None:
            found.setdefault(cls.__name__, cls)
    return found


KP_CASES = [c for c in CASES if c[0] not in (4, 5, 6, 7)]  # kafka-python lacks the inter-broker APIs


@pytest.mark.parametrize("case", KP_CASES, ids=_ids)
def test_bytes_match_kafka_python(case: tuple[ApiKey, str, int]) -> None:
    """kafka-python reads our bytes and writes the very same bytes back: one wire format."""
    key, kind, version = case
    spec = get_spec(key, kind)
    assert spec is not None
    cls = _kafka_python_classes().get(spec.name)
    if cls is None:
        pytest.skip(f"kafka-python has no {spec.name}")
    encode, _ = _codec(kind)
    data = sample(spec, version, 0)
    if key == ApiKey.API_VERSIONS and kind == "response":
        data["error_code"] = 0  # clients read an ApiVersions error body as v0, whatever the version
    wire = encode(key, version, data)
    theirs = cls.decode(wire, version=version)
    object.__setattr__(theirs, "_header", None)  # its decode leaves the header slot unset
    assert theirs.encode(version=version) == wire


def test_metadata_null_topics_means_all_topics() -> None:
    for v in (1, 9, 12):
        req = messages.decode_request(3, v, messages.encode_request(3, v, {"topics": None}))
        assert req.topics is None
    assert messages.decode_request(3, 0, messages.encode_request(3, 0, {})).topics == []


def test_missing_fields_take_spec_defaults() -> None:
    req = messages.decode_request(3, 3, messages.encode_request(3, 3, {"topics": []}))
    assert req.allow_auto_topic_creation is True  # v4+ field, default "true"
    resp = messages.decode_response(
        0,
        9,
        messages.encode_response(
            0, 9, {"responses": [{"name": "t", "partition_responses": [{"index": 0, "base_offset": 5}]}]}
        ),
    )
    part = resp.responses[0].partition_responses[0]
    assert (part.log_append_time_ms, part.log_start_offset, part.error_message) == (-1, -1, None)


def test_api_versions_v3_carries_client_software() -> None:
    wire = messages.encode_request(
        18, 3, {"client_software_name": "kafkapy", "client_software_version": "0.1"}
    )
    req = messages.decode_request(18, 3, wire)
    assert (req.client_software_name, req.client_software_version) == ("kafkapy", "0.1")


def test_message_objects_encode_like_dicts() -> None:
    cls = messages.message_class(3, 12, "request")
    topic_cls = type(
        messages.decode_request(3, 12, messages.encode_request(3, 12, {"topics": [{}]})).topics[0]
    )
    obj = cls(topics=[topic_cls(name="a", topic_id=uuid.UUID(int=5))], allow_auto_topic_creation=False)
    as_dict = {"topics": [{"name": "a", "topic_id": uuid.UUID(int=5)}], "allow_auto_topic_creation": False}
    assert messages.encode_request(3, 12, obj) == messages.encode_request(3, 12, as_dict)
    assert obj == messages.decode_request(3, 12, messages.encode_request(3, 12, obj))


def test_unknown_tags_are_skipped() -> None:
    wire = bytearray(messages.encode_request(3, 12, {"topics": []}))
    assert wire[-1] == 0  # empty top-level tagged fields
    wire[-1:] = bytes([2, 7, 3, 0xAA, 0xBB, 0xCC, 9, 0])  # tags 7 (3 bytes) and 9 (empty)
    assert messages.decode_request(3, 12, bytes(wire)).topics == []


def test_known_tags_are_read() -> None:
    wire = messages.encode_response(
        0, 10, {"responses": [], "node_endpoints": [{"node_id": 1, "host": "h", "port": 9, "rack": None}]}
    )
    resp = messages.decode_response(0, 10, wire)
    assert resp.node_endpoints[0].host == "h"


@pytest.mark.parametrize(
    "junk",
    [
        b"\x7f\xff\xff\xff",  # array count 2**31-1
        b"\xff\xff\xff\xff\xff\xff",  # count -1 for a non-nullable array, then more junk
        b"\xff\xff\xff\xfe",  # count -2
        b"",
    ],
)
def test_hostile_lengths_raise_protocol_error(junk: bytes) -> None:
    with pytest.raises(ProtocolError):
        messages.decode_request(19, 4, junk)  # CreateTopics v4: topics array first


def test_huge_varints_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        messages.decode_request(3, 12, b"\xff\xff\xff\xff\xff\xff\x01")
    with pytest.raises(ProtocolError):
        messages.decode_request(3, 12, b"\xff\xff\xff\xff\x0f")  # 2**32-1: count beyond frame


def test_versions_outside_the_spec_are_unsupported() -> None:
    with pytest.raises(UnsupportedVersionException):
        messages.decode_request(18, 99, b"")
    with pytest.raises(UnsupportedVersionException):
        messages.decode_request(999, 0, b"")


def test_every_spec_version_compiles_and_round_trips_defaults() -> None:
    for (key, kind), spec in all_specs().items():
        encode, decode = _codec(kind)
        for v in range(spec.valid.low, spec.valid.high + 1):
            wire = encode(key, v, {})
            assert encode(key, v, decode(key, v, wire)) == wire, (spec.name, v)


def test_inter_broker_specs_have_kafka_3_9_layout() -> None:
    """Byte layout of LeaderAndIsr v7 pinned by hand from Kafka's field order."""
    wire = messages.encode_request(
        4,
        7,
        {
            "controller_id": 1,
            "is_k_raft_controller": False,
            "controller_epoch": 2,
            "broker_epoch": 3,
            "type": 0,
            "topic_states": [],
            "live_leaders": [],
        },
    )
    assert wire == (
        b"\x00\x00\x00\x01"
        + b"\x00"
        + b"\x00\x00\x00\x02"
        + (3).to_bytes(8, "big")
        + b"\x00"
        + b"\x01"
        + b"\x01"
        + b"\x00"
    )
