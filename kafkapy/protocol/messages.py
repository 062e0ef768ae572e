"""Schema-driven codec for every Kafka API body: bytes in, `Message` objects out, and back.

    decode_request(api_key, version, buf, offset=0) -> Message
    encode_response(api_key, version, obj) -> bytes        (body only; see framing.py)
    encode_request(api_key, version, obj) -> bytes          (clients, the controller)
    decode_response(api_key, version, buf, offset=0) -> Message

Messages have snake_case attributes named after the JSON spec's fields
(`req.topics[0].partition_index`); fields a version lacks hold the spec default. Encoding
takes a Message, a plain dict, or any object with those attributes; missing fields take
the spec's defaults, and fields the version does not carry are ignored. Trailing bytes after
a body are not an error (librdkafka 2.16 sends 3 stray bytes after Metadata v9+ all-topics
requests). Any malformed input raises `ProtocolError` only.

Decision: our own compiler over the JSON specs, not kafka-python's generated classes.
Both read the very same spec files (kafka-python's package data, plus the four inter-broker
specs in `schemas/`); ours compiles each (api, version) once into straight-line Python
(codegen.py). Measured with `benchmarks/protocol_codec.py` on the shared 2-core dev machine
(Python 3.11, kafka-python 3.0.12 `Class.decode(data, version=v)` / `obj.encode(version=v)`
against ours; us per call, median of 5 runs; other work was running, so +-30% noise):

    frame                                   decode kp -> ours     encode kp -> ours
    Metadata v12 request, 3 topics              6.2 ->  2.9           7.0 ->  1.5
    ListOffsets v8 request, 1 topic/4 parts     3.2 ->  3.0           8.2 ->  1.7
    CreateTopics v7 request, 2 topics+conf      6.6 ->  6.6          13.4 ->  3.4
    JoinGroup v9 request, 2 protocols           4.2 ->  3.5           7.2 ->  1.8
    Metadata v12 response, 50 partitions      121   ->  65          160   ->  96

kafka-python 3.0's classes are themselves code-generated, so decoding is only 1-2x faster
with ours; encoding (what a broker does for every response) is 2-5x faster. The decision
rests as much on control: every length is bounded against the bytes left before anything
is allocated, `records` stay zero-copy memoryviews, malformed input raises only
`ProtocolError`, UUIDs are built without `uuid.UUID.__init__`'s checks (a third of a
Metadata v12 decode), encoding takes dicts as well as objects, and kafka-python's specs and
ours go through one path. kio is not used: it aborts the process on an array length of
2**32-1 and raises on unknown tags.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kafkapy.protocol.codegen import Decoder, Encoder, compile_spec
from kafkapy.protocol.errors import ProtocolError, UnsupportedVersionException
from kafkapy.protocol.message import Message
from kafkapy.protocol.schema import Spec, get_spec, is_flexible

__all__ = [
    "Message",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "is_flexible",
    "message_class",
    "valid_versions",
]

_CODECS: dict[tuple[int, str, int], tuple[Decoder, Encoder, type[Message]]] = {}


def _spec(api_key: int, kind: str) -> Spec:
    spec = get_spec(api_key, kind)
    if spec is None:
        raise UnsupportedVersionException(f"no {kind} schema for api key {api_key}")
    return spec


def _codec(api_key: int, kind: str, version: int) -> tuple[Decoder, Encoder, type[Message]]:
    key = (api_key, kind, version)
    codec = _CODECS.get(key)
    if codec is None:
        spec = _spec(api_key, kind)
        if version not in spec.valid:
            raise UnsupportedVersionException(
                f"{spec.name} v{version} is outside its schema's versions {spec.valid.low}-{spec.valid.high}"
            )
        codec = _CODECS[key] = compile_spec(spec, version)
    return codec


def valid_versions(api_key: int, kind: str = "request") -> tuple[int, int] | None:
    """The (min, max) versions the spec defines for this API, or None for an unknown key."""
    spec = get_spec(api_key, kind)
    return None if spec is None else (spec.valid.low, spec.valid.high)


def message_class(api_key: int, version: int, kind: str = "response") -> type[Message]:
    """The class of a request/response, for building one with keywords."""
    return _codec(api_key, kind, version)[2]


# kafkapy.request.max.elements' default: array elements one request may decode into. The
# largest legitimate requests are a controller's UpdateMetadata/LeaderAndIsr for a whole
# cluster (~7 elements a partition: 200,000 partitions are 1.4 million).
DEFAULT_MAX_REQUEST_ELEMENTS = 2_000_000
# Responses come from brokers we chose to talk to: bounded by their frame size only.
_UNBOUNDED = 1 << 62


def _decode(
    kind: str, api_key: int, version: int, buf: memoryview | bytes, offset: int, max_elements: int
) -> Message:
    decoder = _codec(api_key, kind, version)[0]
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    try:
        return decoder(view, offset, [max_elements])[0]
    except ProtocolError:
        raise
    except (struct.error, IndexError, ValueError, OverflowError, MemoryError) as e:
        # Short reads surface as struct.error/IndexError and bad UTF-8 as ValueError: all
        # mean the peer sent something that is not this message.
        raise ProtocolError(f"malformed {kind} for api key {api_key} v{version}: {e}") from e


def _encode(kind: str, api_key: int, version: int, obj: Message | Mapping[str, Any] | Any) -> bytes:
    encoder = _codec(api_key, kind, version)[1]
    out = bytearray()
    try:
        encoder(obj, out)
    except (struct.error, TypeError, AttributeError) as e:
        raise ValueError(f"cannot encode {kind} for api key {api_key} v{version}: {e}") from e
    return bytes(out)


def decode_request(
    api_key: int,
    version: int,
    buf: memoryview | bytes,
    offset: int = 0,
    max_elements: int = DEFAULT_MAX_REQUEST_ELEMENTS,
) -> Message:
    """ProtocolError when malformed, or when its arrays hold more than `max_elements` in all."""
    return _decode("request", api_key, version, buf, offset, max_elements)


def decode_response(api_key: int, version: int, buf: memoryview | bytes, offset: int = 0) -> Message:
    return _decode("response", api_key, version, buf, offset, _UNBOUNDED)


def encode_request(api_key: int, version: int, obj: Message | Mapping[str, Any] | Any) -> bytes:
    return _encode("request", api_key, version, obj)


def encode_response(api_key: int, version: int, obj: Message | Mapping[str, Any] | Any) -> bytes:
    return _encode("response", api_key, version, obj)
