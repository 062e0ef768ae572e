"""Dynamic broker configs: Kafka 2.8's DynamicBrokerConfig in ZooKeeper mode.

Two znodes hold them, in Kafka's {"version":1,"config":{...}} format: `/config/brokers/<id>`
for one broker and `/config/brokers/<default>` for the whole cluster. A broker's effective
value of a config is its per-broker value, else the cluster default, else server.properties,
else the built-in default. Only the configs Kafka lets you change at run time are accepted
(anything else is refused with Kafka's "Cannot update these configs dynamically: ..."); the
broker loads both znodes at start-up, before its logs, and re-reads one when a
/config/changes notification names it. Listeners learn which effective values changed (the
log defaults, the replication throttle rates); the rest is read live from KafkaConfig, whose
values are swapped in place as Kafka's KafkaConfig.updateCurrentConfig does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkapy.common.config_def import ConfigException, ConfigType, parse_value
from kafkapy.server.config_keys import BROKER_CONFIG

log = logging.getLogger("kafkapy.server.DynamicBrokerConfig")

DEFAULT_ENTITY = "<default>"  # Kafka's ConfigEntityName.Default
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LOG_DIRS_THROTTLED_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
# Kafka's DynamicConfig.Broker: not server.properties keys, Long.MaxValue (no throttle) by default.
QUOTA_CONFIGS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, LOG_DIRS_THROTTLED_RATE)
QUOTA_DEFAULT = 2**63 - 1
QUOTA_DOC = "A long representing the upper bound (bytes/sec) on replication traffic"

# Kafka 2.8's DynamicLogConfig.ReconfigurableConfigs: the broker-wide defaults of topic configs.
LOG_CONFIGS = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.roll.jitter.ms", "log.roll.jitter.hours",
    "log.index.size.max.bytes", "log.flush.interval.messages", "log.flush.interval.ms",
    "log.retention.bytes", "log.retention.ms", "log.retention.minutes", "log.retention.hours",
    "log.index.interval.bytes", "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio",
    "log.cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
    "log.preallocate", "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
    "log.message.downconversion.enable", "message.max.bytes",
})  # fmt: skip
# LogCleaner, DynamicThreadPool and SocketServer reconfigurables. kafkapy accepts and reports the
# thread pool sizes (its request handlers are tasks on one event loop, not a pool to resize).
OTHER_CONFIGS = frozenset({
    "log.cleaner.threads", "log.cleaner.io.max.bytes.per.second", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.backoff.ms",
    "num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
    "background.threads", "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
})  # fmt: skip
RECONFIGURABLE = frozenset(n for n in LOG_CONFIGS | OTHER_CONFIGS if n in BROKER_CONFIG.keys) | set(
    QUOTA_CONFIGS
)

Listener = Callable[[frozenset[str]], None]


def scala_set(names: Iterable[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def validate_dynamic_configs(props: Mapping[str, str]) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs: only reconfigurable names, each value of its
    type. Raises ConfigException with Kafka's message."""
    non_dynamic = [name for name in props if name not in RECONFIGURABLE]
    if non_dynamic:
        raise ConfigException(f"Cannot update these configs dynamically: {scala_set(non_dynamic)}")
    for name, value in props.items():
        if name in QUOTA_CONFIGS:
            rate = parse_value(name, ConfigType.LONG, value)
            if rate < 0:
                raise ConfigException(name, value, "Value must be at least 0")
            continue
        key = BROKER_CONFIG.keys[name]
        parsed = parse_value(name, key.type, value)
        if key.validator is not None and parsed is not None:
            key.validator(name, parsed)


class DynamicBrokerConfig:
    """The dynamic layers of one broker's config, applied to its KafkaConfig."""

    def __init__(self, config: Any, broker_id: int) -> None:
        self.config = config  # KafkaConfig, updated in place
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._default: dict[str, str] = {}
        self._broker: dict[str, str] = {}
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def default_configs(self) -> dict[str, str]:
        return dict(self._default)

    @property
    def broker_configs(self) -> dict[str, str]:
        return dict(self._broker)

    def initialize(self, zk: Any) -> None:
        """Load both znodes (blocking), before anything reads the config."""
        self._default = self._usable(zk.get_entity_configs("brokers", DEFAULT_ENTITY))
        self._broker = self._usable(zk.get_entity_configs("brokers", str(self.broker_id)))
        self._apply()

    def reload(self, zk: Any, entity_name: str) -> None:
        """A /config/changes notification named /config/brokers/<entity_name> (blocking)."""
        if entity_name == DEFAULT_ENTITY:
            self.update_default(zk.get_entity_configs("brokers", DEFAULT_ENTITY))
        elif entity_name.strip() == str(self.broker_id):
            self.update_broker(zk.get_entity_configs("brokers", entity_name))

    def update_default(self, props: Mapping[str, str]) -> None:
        self._update(lambda: setattr(self, "_default", self._usable(props)))

    def update_broker(self, props: Mapping[str, str]) -> None:
        self._update(lambda: setattr(self, "_broker", self._usable(props)))

    def _update(self, replace_layer: Callable[[], None]) -> None:
        with self._lock:
            before = self._effective_values()
            replace_layer()
            self._apply()
            after = self._effective_values()
        self._notify(frozenset(n for n in before.keys() | after.keys() if before.get(n) != after.get(n)))

    def effective(self) -> dict[str, str]:
        """The dynamic values in force: per-broker over cluster default."""
        return {**self._default, **self._broker}

    def quota_rate(self, name: str) -> int:
        return int(self.effective().get(name, QUOTA_DEFAULT))

    def _usable(self, props: Mapping[str, str]) -> dict[str, str]:
        """Kafka skips (and logs) dynamic values it cannot apply rather than failing the broker."""
        usable = {}
        for name, value in props.items():
            try:
                validate_dynamic_configs({name: value})
            except (ConfigException, ValueError) as e:
                log.warning("Dynamic config %s=%s is not applied: %s", name, value, e)
                continue
            usable[name] = value
        return usable

    def _apply(self) -> None:
        self.config.apply_dynamic({k: v for k, v in self.effective().items() if k in BROKER_CONFIG.keys})

    def _effective_values(self) -> dict[str, Any]:
        values = {n: self.config.get(n) for n in RECONFIGURABLE if n in BROKER_CONFIG.keys}
        values.update({n: self.quota_rate(n) for n in QUOTA_CONFIGS})
        return values

    def _notify(self, changed: frozenset[str]) -> None:
        if not changed:
            return
        log.info("Reconfigured broker %d: %s", self.broker_id, ", ".join(sorted(changed)))
        for listener in self._listeners:
            try:
                listener(changed)
            except Exception:
                log.exception("Failed to apply dynamic broker configs %s", sorted(changed))
