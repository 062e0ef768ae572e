"""The request fuzzer's seeds and mutations (a test helper, no sockets).

Seeds are real frames: every API the broker answers, at its lowest, middle and highest
version, encoded with kafkapy's own codecs from a body built out of the JSON spec (one element
in each array, plus a "wide" variant with many), and the frames captured from real clients in
tests/data/captured. Mutations are the ones a hostile or broken client produces: bit flips,
truncations, size prefixes that lie, random api keys and versions, random bodies, repeated
slices, counts and lengths overwritten with huge or negative values, splices of two frames.

Seed values keep the broker's state meaningful for the checks that follow the fuzzing: admin
requests validate only, name topics and groups that do not exist, controller requests carry
controller epoch 0 (stale against any live controller, so the broker must refuse them), and
ControlledShutdown names a broker that does not exist. `obeyed_state_change` names the mutants
that a correct broker would legitimately obey (see there); the fuzzer does not send those.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.record_codec import build_batch
from kafkapy.protocol.schema import Field, get_spec

CAPTURED = Path(__file__).resolve().parent.parent / "data" / "captured"
ABSENT = "fuzz-absent"
BATCH = bytes(build_batch([(b"k", b"fuzz-value", [("h", b"v")], 1_700_000_000_000)]))
CONTROLLER_APIS = (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA)
ADMIN_APIS = (
    ApiKey.CREATE_TOPICS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
)

# Field values by attribute name where 0 or "" would not be a meaningful request.
_INTS: dict[str, int] = {
    "timeout_ms": 100, "max_wait_ms": 100, "rebalance_timeout_ms": 100, "session_timeout_ms": 6000,
    "num_partitions": 1, "replication_factor": 1, "count": 2, "max_bytes": 65536,
    "partition_max_bytes": 65536, "acks": 1, "timestamp": -1, "replica_id": -1, "broker_id": 999,
    "leader": 1, "offset": 0, "transaction_timeout_ms": 1000, "producer_id": -1, "producer_epoch": -1,
    "generation_id": -1, "current_leader_epoch": -1, "leader_epoch": -1, "session_epoch": -1,
    "committed_leader_epoch": -1, "log_start_offset": -1, "resource_type": 2, "config_operation": 0,
    "key_type": 0,
}  # fmt: skip
_STRINGS: dict[str, str] = {
    "protocol_type": "consumer", "name": ABSENT, "topic": ABSENT, "group_id": "fuzz-group",
    "key": "fuzz-group", "resource_name": ABSENT, "host": "127.0.0.1", "value": "1000",
    "client_id": "fuzz", "client_software_name": "fuzz", "client_software_version": "1.0",
}  # fmt: skip


def _value(f: Field, version: int, width: int) -> Any:
    t = f.type
    if f.fields or f.is_struct:
        return sample_body(f.fields, version, width)
    if t == "bool":
        return f.attr in ("validate_only", "include_synonyms", "include_documentation")
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return _INTS.get(f.attr, 0)
    if t == "float64":
        return 0.0
    if t == "string":
        return _STRINGS.get(f.attr, "fuzz")
    if t == "uuid":
        return uuid.UUID(int=0)
    if t == "records":
        return BATCH
    return b"\x00\x01"


def sample_body(fields: tuple[Field, ...], version: int, width: int = 1) -> dict[str, Any]:
    """A plausible body: spec defaults, names that exist nowhere, `width` elements per array."""
    body: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if f.is_array:
            if f.type in ("int32", "int64", "int16", "int8"):
                body[f.attr] = [0] * width if f.attr in ("replicas", "isr", "broker_ids") else [1] * width
            else:
                element = _value(f, version, 1 if width > 1 else width)
                body[f.attr] = [element] * width
        else:
            body[f.attr] = _value(f, version, width)
    return body


def _versions(low: int, high: int) -> list[int]:
    return sorted({low, (low + high) // 2, high})


def request_frame(api_key: int, version: int, body: Any, correlation_id: int = 1) -> bytes:
    payload = messages.encode_request(api_key, version, body)
    return framing.encode_request_frame(api_key, version, correlation_id, "fuzz", payload)


def seed_frames(supported: dict[int, tuple[int, int]]) -> list[bytes]:
    """One frame per (api, version) at one and at 50 elements per array, plus follower fetches
    and the captured client frames."""
    frames: list[bytes] = []
    for api_key, (low, high) in sorted(supported.items()):
        spec = get_spec(api_key, "request")
        if spec is None:
            continue
        # Versions the broker advertises that the schema does not know are refused whole.
        for version in _versions(max(low, spec.valid.low), min(high, spec.valid.high)):
            for width in (1, 50):
                body = sample_body(spec.fields, version, width)
                frames.append(request_frame(api_key, version, body))
                if api_key == ApiKey.FETCH:  # the inter-broker form: a follower's fetch
                    frames.append(request_frame(api_key, version, {**body, "replica_id": 1}))
    for path in sorted(CAPTURED.glob("*/*.bin")):
        frames.append(path.read_bytes())
    return frames


# -- mutations ------------------------------------------------------------------------------------

_INTERESTING_32 = (-1, -2, 0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 1 << 20, 1 << 24,
                   0x7FFFFFFF, -0x80000000)  # fmt: skip
_HUGE_UVARINTS = (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x10", b"\xff\xff\x03")


def _reframe(body: bytes | bytearray) -> bytes:
    return struct.pack(">i", len(body)) + bytes(body)


def _flip_bits(rng: random.Random, body: bytearray) -> bytearray:
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(body))
        body[i] ^= 1 << rng.randrange(8)
    return body


def _truncate(rng: random.Random, body: bytearray) -> bytearray:
    return body[: rng.randrange(len(body))]


def _api_key_version(rng: random.Random, body: bytearray) -> bytearray:
    if rng.random() < 0.5:
        struct.pack_into(">h", body, 0, rng.choice((rng.randrange(-2, 80), rng.randrange(-32768, 32768))))
    struct.pack_into(">h", body, 2, rng.choice((rng.randrange(-1, 20), rng.randrange(-32768, 32768))))
    return body


def _random_body(rng: random.Random, body: bytearray) -> bytearray:
    keep = min(len(body), rng.choice((4, 8, 12, 14)))  # keep some of the header
    return body[:keep] + bytearray(rng.randbytes(rng.choice((0, 1, 7, 64, 512, 4096))))


def _repeat_slice(rng: random.Random, body: bytearray) -> bytearray:
    a = rng.randrange(len(body))
    b = min(len(body), a + rng.randrange(1, 64))
    return body[:b] + body[a:b] * rng.choice((1, 2, 16, 200)) + body[b:]


def _huge_count(rng: random.Random, body: bytearray) -> bytearray:
    i = rng.randrange(max(1, len(body) - 3))
    if rng.random() < 0.6:
        struct.pack_into(">i", body, i, rng.choice(_INTERESTING_32))
        return body
    if rng.random() < 0.5:
        struct.pack_into(">h", body, i, rng.choice((-1, -2, 0x7FFF, -0x8000, 0x100)))
        return body
    return body[:i] + bytearray(rng.choice(_HUGE_UVARINTS)) + body[i + 1 :]


def _splice(rng: random.Random, body: bytearray, other: bytes) -> bytearray:
    cut = rng.randrange(len(body))
    start = rng.randrange(4, max(5, len(other)))
    return body[:cut] + bytearray(other[start:])


# Weighted: the ones that keep the frame mostly intact reach deepest into the handlers.
_MUTATIONS: tuple[Callable[[random.Random, bytearray], bytearray], ...] = (
    _flip_bits, _flip_bits, _flip_bits, _huge_count, _huge_count, _huge_count, _truncate,
    _api_key_version, _random_body, _repeat_slice, _repeat_slice,
)  # fmt: skip


def mutate(rng: random.Random, frame: bytes, corpus: list[bytes]) -> tuple[str, bytes]:
    """(mutation name, mutated frame). Most keep a truthful size prefix; 'size-lie' does not."""
    body = bytearray(frame[4:])
    if len(body) < 8:  # too short to mutate in place: give it a random tail
        body += rng.randbytes(8)
    roll = rng.random()
    if roll < 0.04:
        lie = rng.choice((0, 1, len(body) - 1, len(body) + 1, len(body) * 2, 0x7FFFFFFF, -1, 200 << 20))
        return "size-lie", struct.pack(">i", lie) + bytes(body)
    if roll < 0.08:
        return "splice", _reframe(_splice(rng, body, rng.choice(corpus)))
    fn = rng.choice(_MUTATIONS)
    out = fn(rng, body)
    if rng.random() < 0.15 and len(out) >= 8:  # a second mutation on top
        out = rng.choice(_MUTATIONS)(rng, out)
    return fn.__name__.lstrip("_"), _reframe(out)


def obeyed_state_change(frame: bytes, controller_epoch: int, broker_id: int) -> str | None:
    """Why a correct broker would obey this mutant and change state the later checks rely on,
    or None (send it).

    - LeaderAndIsr, UpdateMetadata, StopReplica with a controller epoch at or above the live
      controller's: in Kafka's model that is a (newer) controller speaking, and the broker must
      follow it; a higher epoch even fences the real controller out (DESIGN.md: epochs fence
      everything). Seeds carry epoch 0, so only mutants whose epoch grew are held back.
    - ControlledShutdown naming this broker: the controller would move its leadership away.
    - CreateTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs that are not
      validate-only: an admin's change. A captured CreateTopics whose count became 8194 made a
      topic of 8194 partitions, ~20,000 open segment and index files on one broker: Kafka
      would create it too (kafkapy.topic.max.partitions is 100,000), and the broker then runs
      out of file descriptors, which is the operator's sizing, not a request bound.
    Frames that do not decode are always sent: refusing them is the broker's job.
    """
    try:
        header = framing.parse_request_header(memoryview(frame)[4:])
        if header.api_key not in (*CONTROLLER_APIS, *ADMIN_APIS, ApiKey.CONTROLLED_SHUTDOWN):
            return None
        body = messages.decode_request(
            header.api_key, header.api_version, memoryview(frame)[4:], header.body_offset
        )
    except Exception:  # noqa: BLE001 - anything that does not decode is the broker's to refuse
        return None
    if header.api_key in ADMIN_APIS:
        return None if body.validate_only else f"{ApiKey(header.api_key).name} that is not validate-only"
    if header.api_key == ApiKey.CONTROLLED_SHUTDOWN:
        return "controlled shutdown of this broker" if body.broker_id == broker_id else None
    if body.controller_epoch >= controller_epoch:
        return f"controller epoch {body.controller_epoch} >= the live controller's {controller_epoch}"
    return None
