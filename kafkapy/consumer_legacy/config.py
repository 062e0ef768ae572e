"""ConsumerConfig: the legacy (0.8-era) high-level consumer's settings, with Kafka's names and defaults.

Built from a properties mapping (`ConsumerConfig.from_props({"group.id": "g", ...})`) or with
keywords. Only ZooKeeper offset storage exists here (`offsets.storage=zookeeper`, Kafka's
default), which is what the legacy consumer is kept for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SMALLEST = "smallest"
LARGEST = "largest"
RANGE = "range"
ROUNDROBIN = "roundrobin"


class InvalidConfigException(ValueError):
    pass


# property name -> (dataclass field, type)
_KEYS: dict[str, tuple[str, type]] = {
    "group.id": ("group_id", str),
    "zookeeper.connect": ("zookeeper_connect", str),
    "consumer.id": ("consumer_id", str),
    "client.id": ("client_id", str),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", int),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", int),
    "zookeeper.sync.time.ms": ("zookeeper_sync_time_ms", int),
    "socket.timeout.ms": ("socket_timeout_ms", int),
    "fetch.message.max.bytes": ("fetch_message_max_bytes", int),
    "num.consumer.fetchers": ("num_consumer_fetchers", int),
    "auto.commit.enable": ("auto_commit_enable", bool),
    "auto.commit.interval.ms": ("auto_commit_interval_ms", int),
    "queued.max.message.chunks": ("queued_max_message_chunks", int),
    "rebalance.max.retries": ("rebalance_max_retries", int),
    "fetch.min.bytes": ("fetch_min_bytes", int),
    "fetch.wait.max.ms": ("fetch_wait_max_ms", int),
    "rebalance.backoff.ms": ("rebalance_backoff_ms", int),
    "refresh.leader.backoff.ms": ("refresh_leader_backoff_ms", int),
    "auto.offset.reset": ("auto_offset_reset", str),
    "consumer.timeout.ms": ("consumer_timeout_ms", int),
    "exclude.internal.topics": ("exclude_internal_topics", bool),
    "partition.assignment.strategy": ("partition_assignment_strategy", str),
    "offsets.storage": ("offsets_storage", str),
}


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    group_id: str
    zookeeper_connect: str
    consumer_id: str | None = None  # Kafka: "for testing only"; generated when absent
    client_id: str | None = None  # defaults to the group id
    zookeeper_session_timeout_ms: int = 6000
    zookeeper_connection_timeout_ms: int | None = None  # defaults to the session timeout
    zookeeper_sync_time_ms: int = 2000
    socket_timeout_ms: int = 30 * 1000
    fetch_message_max_bytes: int = 1024 * 1024
    num_consumer_fetchers: int = 1
    auto_commit_enable: bool = True
    auto_commit_interval_ms: int = 60 * 1000
    queued_max_message_chunks: int = 2
    rebalance_max_retries: int = 4
    fetch_min_bytes: int = 1
    fetch_wait_max_ms: int = 100
    rebalance_backoff_ms: int | None = None  # defaults to zookeeper.sync.time.ms
    refresh_leader_backoff_ms: int = 200
    auto_offset_reset: str = LARGEST
    consumer_timeout_ms: int = -1
    exclude_internal_topics: bool = True
    partition_assignment_strategy: str = RANGE
    offsets_storage: str = "zookeeper"

    def __post_init__(self) -> None:
        if not self.group_id:
            raise InvalidConfigException(
                'Missing required configuration "group.id" which has no default value.'
            )
        if not self.zookeeper_connect:
            raise InvalidConfigException(
                'Missing required configuration "zookeeper.connect" which has no default value.'
            )
        if self.auto_offset_reset not in (SMALLEST, LARGEST):
            raise InvalidConfigException(
                f"Wrong value {self.auto_offset_reset} of auto.offset.reset in ConsumerConfig; "
                f"Valid values are {SMALLEST} and {LARGEST}"
            )
        if self.partition_assignment_strategy not in (RANGE, ROUNDROBIN):
            raise InvalidConfigException(
                f"Wrong value {self.partition_assignment_strategy} of partition.assignment.strategy in "
                "consumer config; Valid values are 'range' and 'roundrobin'"
            )
        if self.offsets_storage != "zookeeper":
            raise InvalidConfigException(
                f"Wrong value {self.offsets_storage} of offsets.storage in consumer config; "
                "kafkapy's legacy consumer stores offsets in 'zookeeper' only"
            )
        if self.fetch_wait_max_ms > self.socket_timeout_ms:
            raise InvalidConfigException(
                "socket.timeout.ms should always be at least fetch.wait.max.ms to prevent unnecessary socket timeouts"
            )
        if self.queued_max_message_chunks < 1:
            raise InvalidConfigException("queued.max.message.chunks must be at least 1")

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> ConsumerConfig:
        kwargs: dict[str, Any] = {}
        for key, value in props.items():
            known = _KEYS.get(key)
            if known is None:
                continue  # Kafka's VerifiableProperties only warns about unknown keys
            name, typ = known
            kwargs[name] = _convert(key, value, typ)
        kwargs.setdefault("group_id", "")
        kwargs.setdefault("zookeeper_connect", "")
        return cls(**kwargs)

    def with_overrides(self, **changes: Any) -> ConsumerConfig:
        return dataclasses.replace(self, **changes)

    @property
    def effective_client_id(self) -> str:
        return self.client_id if self.client_id is not None else self.group_id

    @property
    def effective_rebalance_backoff_ms(self) -> int:
        return self.zookeeper_sync_time_ms if self.rebalance_backoff_ms is None else self.rebalance_backoff_ms


def _convert(key: str, value: Any, typ: type) -> Any:
    if typ is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise InvalidConfigException(f"{key} must be true or false, not {value!r}")
        return text == "true"
    if typ is int:
        try:
            return int(str(value).strip())
        except ValueError:
            raise InvalidConfigException(f"{key} must be an integer, not {value!r}") from None
    return str(value).strip()
