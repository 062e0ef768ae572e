"""ProducerConfig: Kafka's producer config names and defaults (2.8, the ZooKeeper era), plus the
old Scala producer's names as aliases so its properties files keep working.

Values arrive as strings (properties files, --producer-property) or Python values (the API);
`ProducerConfig.parse` converts both and rejects unknown names with Kafka's wording. Names may
also be given with underscores (`bootstrap_servers=`), as Python keyword arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kafkapy.protocol.compression import codec_for
from kafkapy.protocol.record_batch import CompressionType

log = logging.getLogger("kafkapy.producer.ProducerConfig")

INT32_MAX = 2**31 - 1


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"expected true or false, got {v!r}")
    return s == "true"


def _acks(v: Any) -> int:
    s = str(v).strip().lower()
    return -1 if s in ("all", "-1") else int(s)


def _block_ms(v: Any) -> int:
    # The old producer's queue.enqueue.timeout.ms used -1 for "block forever".
    n = int(v)
    return INT32_MAX if n < 0 else n


def _serializer(v: Any) -> Callable[[Any], bytes | None] | None:
    # A Java class name from a properties file (e.g. ...StringSerializer): records arrive as
    # bytes or str here already, so there is nothing to apply.
    return None if isinstance(v, str) else v


def _servers(v: Any) -> str:
    return v if isinstance(v, str) else ",".join(v)


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    bootstrap_servers: str = ""
    client_id: str = ""
    acks: int = 1
    batch_size: int = 16_384
    linger_ms: int = 0
    buffer_memory: int = 33_554_432
    max_block_ms: int = 60_000
    compression_type: CompressionType = CompressionType.NONE
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    max_in_flight_requests_per_connection: int = 5
    max_request_size: int = 1_048_576
    enable_idempotence: bool = False
    transactional_id: str | None = None  # set: a transactional producer (idempotent, acks=all)
    transaction_timeout_ms: int = 60_000
    metadata_max_age_ms: int = 300_000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    partitioner_class: Any = None  # None: murmur2 for keys, sticky for null keys
    key_serializer: Callable[[Any], bytes | None] | None = None
    value_serializer: Callable[[Any], bytes | None] | None = None
    allow_auto_create_topics: bool = True
    # The old producer's limits with no new-producer equivalent (None: no limit).
    batch_num_messages: int | None = None
    queue_buffering_max_messages: int | None = None
    producer_type: str = "async"  # sync: send() waits for the acknowledgement
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def sync(self) -> bool:
        return self.producer_type == "sync"

    @classmethod
    def parse(cls, props: Mapping[str, Any] | None = None, **kwargs: Any) -> ProducerConfig:
        merged = {**(props or {}), **kwargs}
        values: dict[str, Any] = {}
        for raw_name, value in merged.items():
            name = raw_name.replace("_", ".") if "." not in raw_name else raw_name
            name = ALIASES.get(name, name)
            if name in IGNORED:
                continue
            attr = name.replace(".", "_")
            if attr not in CONVERTERS:
                raise ValueError(f"Unknown producer config: {raw_name}")
            try:
                values[attr] = CONVERTERS[attr](value)
            except (TypeError, ValueError) as e:
                raise ValueError(f"Invalid value {value!r} for configuration {raw_name}: {e}") from e
        config = cls(**values)
        return config._validated()

    def _validated(self) -> ProducerConfig:
        if not self.bootstrap_servers:
            raise ValueError('Missing required configuration "bootstrap.servers" which has no default value.')
        if self.acks not in (-1, 0, 1):
            raise ValueError(
                f"Invalid value {self.acks} for configuration acks: String must be one of: all, -1, 0, 1"
            )
        if self.producer_type not in ("sync", "async"):
            raise ValueError(f"producer.type must be sync or async, not {self.producer_type!r}")
        config = self
        if self.transactional_id is not None:
            # Kafka's producer: a transactional id turns idempotence on, which needs acks=all.
            if self.acks == 0:
                raise ValueError("Must set acks to all in order to use the transactional producer.")
            config = self = replace(self, enable_idempotence=True, acks=-1)
        if self.enable_idempotence:
            # Kafka's checks: idempotence needs acks=all, retries and at most 5 requests in flight.
            if self.acks != -1:
                raise ValueError("Must set acks to all in order to use the idempotent producer.")
            if self.max_in_flight_requests_per_connection > 5:
                raise ValueError(
                    "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."
                )
            if self.retries == 0:
                raise ValueError("Must set retries to non-zero when using the idempotent producer.")
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            config = replace(config, delivery_timeout_ms=self.linger_ms + self.request_timeout_ms)
        return config


_INT = int
CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "bootstrap_servers": _servers,
    "client_id": str,
    "acks": _acks,
    "batch_size": _INT,
    "linger_ms": _INT,
    "buffer_memory": _INT,
    "max_block_ms": _block_ms,
    "compression_type": codec_for,
    "retries": _INT,
    "retry_backoff_ms": _INT,
    "request_timeout_ms": _INT,
    "delivery_timeout_ms": _INT,
    "max_in_flight_requests_per_connection": _INT,
    "max_request_size": _INT,
    "enable_idempotence": _bool,
    "transactional_id": lambda v: None if v is None else str(v),
    "transaction_timeout_ms": _INT,
    "metadata_max_age_ms": _INT,
    "reconnect_backoff_ms": _INT,
    "reconnect_backoff_max_ms": _INT,
    "partitioner_class": lambda v: v,
    "key_serializer": lambda v: _serializer(v),
    "value_serializer": lambda v: _serializer(v),
    "allow_auto_create_topics": _bool,
    "batch_num_messages": _INT,
    "queue_buffering_max_messages": _INT,
    "producer_type": lambda v: str(v).strip().lower(),
}
assert set(CONVERTERS) == {f.name for f in fields(ProducerConfig)} - {"extra"}

# The old (Scala) producer's names -> the new producer's (or our extra limits).
ALIASES: dict[str, str] = {
    "metadata.broker.list": "bootstrap.servers",
    "request.required.acks": "acks",
    "queue.buffering.max.ms": "linger.ms",
    "queue.enqueue.timeout.ms": "max.block.ms",
    "compression.codec": "compression.type",
    "message.send.max.retries": "retries",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms",
    "batch.num.messages": "batch.num.messages",
    "queue.buffering.max.messages": "queue.buffering.max.messages",
    "producer.type": "producer.type",
    "request.timeout.ms": "request.timeout.ms",
    "send.buffer.bytes": "send.buffer.bytes",
}

# Accepted and without effect here (Java-only settings, or the old producer's serializer classes).
IGNORED: frozenset[str] = frozenset(
    {
        "key.serializer.class", "serializer.class", "partitioner.class.legacy", "send.buffer.bytes",
        "receive.buffer.bytes", "connections.max.idle.ms", "security.protocol", "metrics.num.samples",
        "metric.reporters", "metrics.sample.window.ms", "metrics.recording.level", "interceptor.classes",
        "compressed.topics", "client.dns.lookup", "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "key.serializer.java", "value.serializer.java",
    }
)  # fmt: skip
