"""The consumer protocol's embedded payloads: what a "consumer" group member puts in JoinGroup's
protocol metadata (its subscription) and what the leader puts in SyncGroup (each assignment).

Both are `int16 version` followed by a struct from Kafka's JSON specs
(ConsumerProtocolSubscription / ConsumerProtocolAssignment, "type": "data", shipped with
kafka-python like the API specs), compiled by the same code generator as the API bodies. Kafka's
rule for these payloads: a newer version than we know is read with the newest format we know,
since later versions only append fields. librdkafka sends subscription v3 (with rack), Kafka 2.8
v1; we send v1 (owned partitions, no generation or rack, which only the sticky assignors read).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafkapy.protocol.codegen import Decoder, Encoder, compile_spec
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.schema import data_spec

SUBSCRIPTION_VERSION: Final = 1
ASSIGNMENT_VERSION: Final = 1
_VERSION: Final = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: tuple[tuple[str, int], ...]
    user_data: bytes | None = None


@functools.cache
def _codec(name: str, version: int) -> tuple[Decoder, Encoder, int]:
    spec = data_spec(name)
    version = min(version, spec.valid.high)
    decoder, encoder, _ = compile_spec(spec, version)
    return decoder, encoder, version


def _encode(name: str, version: int, body: Mapping[str, Any]) -> bytes:
    _, encoder, version = _codec(name, version)
    out = bytearray(_VERSION.pack(version))
    encoder(body, out)
    return bytes(out)


# Client bytes (a member's subscription): the same element bound as a request's.
MAX_ELEMENTS = 2_000_000


def _decode(name: str, data: bytes | memoryview) -> Any:
    view = memoryview(data).cast("B")
    try:
        (version,) = _VERSION.unpack_from(view, 0)
        if version < 0:
            raise ProtocolError(f"{name} version {version} is negative")
        return _codec(name, version)[0](view, 2, [MAX_ELEMENTS])[0]
    except (struct.error, IndexError, ValueError) as e:
        raise ProtocolError(f"malformed {name}: {e}") from e


def _grouped(partitions: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def _flat(entries: Sequence[Any] | None) -> tuple[tuple[str, int], ...]:
    return tuple((e.topic, p) for e in entries or () for p in e.partitions)


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None,
                        owned: Iterable[tuple[str, int]] = ()) -> bytes:  # fmt: skip
    body = {"topics": sorted(topics), "user_data": user_data, "owned_partitions": _grouped(owned)}
    return _encode("ConsumerProtocolSubscription", SUBSCRIPTION_VERSION, body)


def decode_subscription(data: bytes | memoryview) -> Subscription:
    m = _decode("ConsumerProtocolSubscription", data)
    return Subscription(
        topics=tuple(m.topics or ()),
        user_data=None if m.user_data is None else bytes(m.user_data),
        owned_partitions=_flat(m.owned_partitions),
        generation_id=m.generation_id,
        rack_id=m.rack_id,
    )


def encode_assignment(partitions: Iterable[tuple[str, int]], user_data: bytes | None = None) -> bytes:
    body = {"assigned_partitions": _grouped(partitions), "user_data": user_data}
    return _encode("ConsumerProtocolAssignment", ASSIGNMENT_VERSION, body)


def decode_assignment(data: bytes | memoryview) -> Assignment:
    if len(data) == 0:
        return Assignment(())  # Kafka's coordinator hands out empty bytes to members left out
    m = _decode("ConsumerProtocolAssignment", data)
    return Assignment(_flat(m.assigned_partitions), None if m.user_data is None else bytes(m.user_data))


# -- the group coordinator's and the tools' lenient reads -----------------------------------------
# A member's bytes are the client's business: a coordinator or a tool that cannot parse them
# treats the member as subscribed to nothing it knows, as Kafka's GroupMetadata does.


def subscribed_topics(data: bytes | memoryview) -> set[str] | None:
    """The topics of a subscription; None if it cannot be parsed."""
    try:
        return set(decode_subscription(data).topics)
    except ProtocolError:
        return None


def assigned_partitions(data: bytes | memoryview) -> list[tuple[str, int]]:
    """(topic, partition) pairs of an assignment; [] if empty or unparsable."""
    try:
        return list(decode_assignment(data).partitions)
    except ProtocolError:
        return []
