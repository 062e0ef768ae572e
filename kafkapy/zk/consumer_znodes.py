"""The legacy (ZooKeeper-based) consumer's znodes under /consumers/<group>."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkapy.zk._json import decode_json, encode_json, now_ms
from kafkapy.zk.errors import ZkDataError


class ConsumerPathZNode:
    @staticmethod
    def path() -> str:
        return "/consumers"


class ConsumerGroupZNode:
    @staticmethod
    def path(group: str) -> str:
        return f"{ConsumerPathZNode.path()}/{group}"


class ConsumerIdsZNode:
    """/consumers/<group>/ids: one ephemeral child per live consumer of the group."""

    @staticmethod
    def path(group: str) -> str:
        return f"{ConsumerGroupZNode.path(group)}/ids"


class ConsumerOwnersZNode:
    @staticmethod
    def path(group: str, topic: str) -> str:
        return f"{ConsumerGroupZNode.path(group)}/owners/{topic}"


class ConsumerOwnerZNode:
    """Ephemeral /consumers/<group>/owners/<topic>/<partition> holding the owning thread id."""

    @staticmethod
    def path(group: str, topic: str, partition: int) -> str:
        return f"{ConsumerOwnersZNode.path(group, topic)}/{partition}"

    @staticmethod
    def encode(consumer_thread_id: str) -> bytes:
        return consumer_thread_id.encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> str:
        return data.decode("utf-8")


class ConsumerOffsetsZNode:
    @staticmethod
    def path(group: str, topic: str) -> str:
        return f"{ConsumerGroupZNode.path(group)}/offsets/{topic}"


class ConsumerOffsetZNode:
    """/consumers/<group>/offsets/<topic>/<partition>: the committed offset as decimal text."""

    @staticmethod
    def path(group: str, topic: str, partition: int) -> str:
        return f"{ConsumerOffsetsZNode.path(group, topic)}/{partition}"

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(offset).encode("utf-8")

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        return int(data.decode("utf-8")) if data else None


# Subscription patterns of the legacy consumer's TopicCount.
PATTERN_STATIC = "static"
PATTERN_WHITE_LIST = "white_list"
PATTERN_BLACK_LIST = "black_list"


@dataclass(frozen=True, slots=True)
class ConsumerRegistration:
    """What a consumer writes into /consumers/<group>/ids/<consumer id>.

    `subscription` maps a topic (static) or a regex (white/black list) to its stream count.
    """

    subscription: dict[str, int] = field(default_factory=dict)
    pattern: str = PATTERN_STATIC
    timestamp: int | None = None


class ConsumerIdZNode:
    @staticmethod
    def path(group: str, consumer_id: str) -> str:
        return f"{ConsumerIdsZNode.path(group)}/{consumer_id}"

    @staticmethod
    def encode(reg: ConsumerRegistration) -> bytes:
        ts = now_ms() if reg.timestamp is None else reg.timestamp
        return encode_json(
            {
                "version": 1,
                "subscription": dict(reg.subscription),
                "pattern": reg.pattern,
                "timestamp": str(ts),
            }
        )

    @staticmethod
    def decode(data: bytes) -> ConsumerRegistration:
        js = decode_json(data)
        if not isinstance(js, dict):
            raise ZkDataError(f"Invalid consumer registration {data!r}")
        sub: Mapping[str, int] = js.get("subscription") or {}
        ts = js.get("timestamp")
        return ConsumerRegistration(
            {k: int(v) for k, v in sub.items()},
            str(js.get("pattern", PATTERN_STATIC)),
            int(ts) if ts is not None else None,
        )
