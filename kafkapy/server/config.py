"""KafkaConfig: the broker's server.properties, with Kafka's names, defaults and checks.

Values are typed by the table in `config_keys`; this module adds what is derived from
several keys (effective retention, roll and flush times, log dirs, listeners, the ZooKeeper
connect string) and Kafka's cross-key checks. Attribute access uses snake_case names:
`config.num_partitions` is `num.partitions`; for keys with a fallback (log.retention.ms,
log.roll.ms, log.flush.interval.ms, zookeeper.connection.timeout.ms, log.dirs, ...) the
attribute is the effective value, while `config.get(name)` is the key's own (possibly null)
value.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from kafkapy.common import properties
from kafkapy.common.config_def import ConfigException, ConfigKey, Password
from kafkapy.server.config_endpoints import (
    EndPoint,
    ZkConnect,
    is_loopback_host,
    parse_listeners,
    parse_protocol_map,
    parse_zk_connect,
)
from kafkapy.server.config_keys import BROKER_CONFIG

__all__ = [
    "ConfigException",
    "EndPoint",
    "KafkaConfig",
    "ZkConnect",
    "is_loopback_host",
    "parse_connection_overrides",
    "parse_overrides",
    "parse_zk_connect",
]

_MS_PER_MINUTE = 60 * 1000
_MS_PER_HOUR = 60 * _MS_PER_MINUTE


class KafkaConfig:
    def __init__(self, props: Mapping[str, Any]) -> None:
        self._originals: dict[str, Any] = dict(props)
        self._values = BROKER_CONFIG.parse(self._originals)
        # listener.name.<l>.<key> (and <l>.<mechanism>.sasl.jaas.config) are per-listener forms of
        # known keys, read by kafkapy.server.security: not unknown.
        self._unknown = [k for k in BROKER_CONFIG.unknown(self._originals) if not _is_listener_key(k)]
        self._protocol_map = parse_protocol_map(self._values["listener.security.protocol.map"])
        self._listeners = parse_listeners("listeners", self._values["listeners"], self._protocol_map)
        advertised = self._values["advertised.listeners"]
        self._advertised = (
            parse_listeners("advertised.listeners", advertised, self._protocol_map)
            if advertised is not None
            else self._listeners
        )
        self._zk = parse_zk_connect(self._values["zookeeper.connect"])
        self._validate()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], overrides: Iterable[str] = ()) -> KafkaConfig:
        """Reads a properties file, then applies `key=value` overrides (kafka-server-start's --override)."""
        props: dict[str, Any] = properties.load_file(os.fspath(path))
        props.update(parse_overrides(overrides))
        return cls(props)

    # ---- generic access

    def get(self, name: str) -> Any:
        """The typed value of a known key, exactly as configured (None where unset and nullable)."""
        if name not in self._values:
            raise KeyError(f"Unknown configuration {name}")
        return self._values[name]

    @property
    def originals(self) -> dict[str, Any]:
        """Every key given, known or not, as given."""
        return dict(self._originals)

    def apply_dynamic(self, dynamic: Mapping[str, Any]) -> None:
        """Dynamic broker configs over server.properties (DynamicBrokerConfig has validated them).

        The values dict is swapped whole, so a reader on another thread sees the old or the new
        config, never a mix; `originals` stays what server.properties said."""
        self._values = BROKER_CONFIG.parse({**self._originals, **dynamic})

    @property
    def unknown_keys(self) -> list[str]:
        """Given keys this config does not define; Kafka logs each as `supplied but isn't a known config`."""
        return list(self._unknown)

    @property
    def values(self) -> dict[str, Any]:
        return dict(self._values)

    @staticmethod
    def config_keys() -> Mapping[str, ConfigKey]:
        return BROKER_CONFIG.keys

    def __getattr__(self, attr: str) -> Any:
        # Only called when normal lookup fails: maps snake_case to the dotted key.
        values = self.__dict__.get("_values")
        if values is not None:
            name = attr.replace("_", ".")
            if name in values:
                return values[name]
        raise AttributeError(f"{type(self).__name__} has no configuration {attr!r}")

    def __repr__(self) -> str:
        return f"KafkaConfig(broker.id={self.broker_id}, listeners={self.get('listeners')})"

    def describe(self) -> str:
        """`KafkaConfig values:` as Kafka logs them at startup: every key, sorted, secrets hidden."""
        lines = ["KafkaConfig values: "]
        lines += [f"\t{name} = {_show(self._values[name])}" for name in sorted(self._values)]
        return "\n".join(lines)

    # ---- derived values

    @property
    def log_dirs(self) -> list[str]:
        dirs = self._values["log.dirs"]
        if dirs is None:
            dirs = [d.strip() for d in self._values["log.dir"].split(",")]
        return [d for d in dirs if d]

    @property
    def log_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours (Kafka's precedence); negative means -1 (forever)."""
        millis = self._values["log.retention.ms"]
        if millis is None:
            minutes = self._values["log.retention.minutes"]
            if minutes is not None:
                millis = minutes * _MS_PER_MINUTE
            else:
                millis = self._values["log.retention.hours"] * _MS_PER_HOUR
        return -1 if millis < 0 else millis

    @property
    def log_roll_ms(self) -> int:
        millis = self._values["log.roll.ms"]
        result: int = millis if millis is not None else self._values["log.roll.hours"] * _MS_PER_HOUR
        return result

    @property
    def log_roll_jitter_ms(self) -> int:
        millis = self._values["log.roll.jitter.ms"]
        result: int = millis if millis is not None else self._values["log.roll.jitter.hours"] * _MS_PER_HOUR
        return result

    @property
    def log_flush_interval_ms(self) -> int:
        millis = self._values["log.flush.interval.ms"]
        result: int = millis if millis is not None else self._values["log.flush.scheduler.interval.ms"]
        return result

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        millis = self._values["zookeeper.connection.timeout.ms"]
        result: int = millis if millis is not None else self._values["zookeeper.session.timeout.ms"]
        return result

    @property
    def queued_max_request_bytes_effective(self) -> int:
        """The request memory pool's size. kafkapy's default (256 MiB, where Kafka's is -1) grows
        to socket.request.max.bytes when that is raised past it without setting this key, so a
        Kafka configuration that raises only socket.request.max.bytes still starts."""
        value = int(self._values["queued.max.request.bytes"])
        if "queued.max.request.bytes" not in self._originals and value > 0:
            return max(value, int(self._values["socket.request.max.bytes"]))
        return value

    @property
    def max_connections_per_ip_overrides_map(self) -> dict[str, int]:
        return parse_connection_overrides(self._values["max.connections.per.ip.overrides"])

    @property
    def zookeeper(self) -> ZkConnect:
        return self._zk

    @property
    def zookeeper_hosts(self) -> str:
        return self._zk.hosts

    @property
    def zookeeper_chroot(self) -> str | None:
        return self._zk.chroot

    @property
    def kafkapy_zookeeper_embedded_data_dir(self) -> str:
        configured = self._values["kafkapy.zookeeper.embedded.data.dir"]
        if configured:
            result: str = configured
            return result
        # Beside the log dirs: /tmp/kafkapy-logs -> /tmp/zookeeper-data.
        first = os.path.abspath(self.log_dirs[0])
        return os.path.join(os.path.dirname(first.rstrip(os.sep)) or os.sep, "zookeeper-data")

    @property
    def embedded_zookeeper_candidate(self) -> tuple[str, int] | None:
        """The (host, port) an embedded ZooKeeper would serve, if enabled and zookeeper.connect is loopback."""
        if not self._values["kafkapy.zookeeper.embedded.enable"]:
            return None
        for host, port in self._zk.addresses:
            if is_loopback_host(host):
                return host, port
        return None

    @property
    def listeners(self) -> list[EndPoint]:
        return list(self._listeners)

    def listener_endpoints(self) -> list[EndPoint]:
        """The same as `listeners`: what the socket server binds."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[EndPoint]:
        return list(self._advertised)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocol_map)

    @property
    def inter_broker_listener_name(self) -> str:
        name = self._values["inter.broker.listener.name"]
        result: str = name.upper() if name is not None else self._values["security.inter.broker.protocol"]
        return result

    @property
    def inter_broker_security_protocol(self) -> str:
        return self._protocol_map.get(self.inter_broker_listener_name, "PLAINTEXT")

    def advertised_endpoints(self, canonical_hostname: str | None = None) -> list[EndPoint]:
        """What the broker registers in ZooKeeper: advertised.listeners, else listeners, with an
        empty host replaced by this machine's canonical host name, as Kafka's KafkaServer does.
        (A port of 0 stays 0 here: only the running server knows the port it bound.)"""
        hostname = canonical_hostname or socket.getfqdn()
        return [
            ep if ep.host else EndPoint(ep.listener_name, ep.security_protocol, hostname, ep.port)
            for ep in self._advertised
        ]

    def log_config_props(self) -> dict[str, str]:
        """Broker-level log settings under Kafka's topic-level names (LogConfig's defaults)."""
        v = self._values
        props: dict[str, Any] = {
            "segment.bytes": v["log.segment.bytes"],
            "segment.ms": self.log_roll_ms,
            "segment.jitter.ms": self.log_roll_jitter_ms,
            "segment.index.bytes": v["log.index.size.max.bytes"],
            "index.interval.bytes": v["log.index.interval.bytes"],
            "retention.ms": self.log_retention_ms,
            "retention.bytes": v["log.retention.bytes"],
            "max.message.bytes": v["message.max.bytes"],
            "message.timestamp.type": v["log.message.timestamp.type"],
            "message.timestamp.difference.max.ms": v["log.message.timestamp.difference.max.ms"],
            "message.format.version": v["log.message.format.version"],
            "message.downconversion.enable": v["log.message.downconversion.enable"],
            "cleanup.policy": ",".join(v["log.cleanup.policy"]),
            "flush.messages": v["log.flush.interval.messages"],
            "flush.ms": self.log_flush_interval_ms,
            "file.delete.delay.ms": v["log.segment.delete.delay.ms"],
            "delete.retention.ms": v["log.cleaner.delete.retention.ms"],
            "min.compaction.lag.ms": v["log.cleaner.min.compaction.lag.ms"],
            "max.compaction.lag.ms": v["log.cleaner.max.compaction.lag.ms"],
            "min.cleanable.dirty.ratio": v["log.cleaner.min.cleanable.ratio"],
            "min.insync.replicas": v["min.insync.replicas"],
            "unclean.leader.election.enable": v["unclean.leader.election.enable"],
            "compression.type": v["compression.type"],
            "preallocate": v["log.preallocate"],
        }
        return {name: _show(value) for name, value in props.items()}

    # ---- parsing and cross-key checks

    def _validate(self) -> None:
        v = self._values
        broker_id, max_id = v["broker.id"], v["reserved.broker.max.id"]
        if v["broker.id.generation.enable"]:
            _require(
                -1 <= broker_id <= max_id,
                "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id",
            )
        else:
            _require(broker_id >= 0, "broker.id must be greater than or equal to 0")
        _require(self.log_roll_ms >= 1, "log.roll.ms must be greater than or equal to 1")
        _require(self.log_roll_jitter_ms >= 0, "log.roll.jitter.ms must be greater than or equal to 0")
        _require(
            self.log_retention_ms >= 1 or self.log_retention_ms == -1,
            "log.retention.ms must be unlimited (-1) or, greater than or equal to 1",
        )
        _require(bool(self.log_dirs), "At least one log directory must be defined via log.dirs or log.dir.")
        threads = v["log.cleaner.threads"]
        _require(
            threads == 0 or v["log.cleaner.dedupe.buffer.size"] / threads > 1024 * 1024,
            "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
        )
        _require(
            v["replica.fetch.wait.max.ms"] <= v["replica.socket.timeout.ms"],
            "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"
            " to prevent unnecessary socket timeouts",
        )
        _require(
            v["replica.fetch.wait.max.ms"] <= v["replica.lag.time.max.ms"],
            "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"
            " to prevent frequent changes in ISR",
        )
        _require(
            -1 <= v["offsets.commit.required.acks"] <= v["offsets.topic.replication.factor"],
            "offsets.commit.required.acks must be greater or equal -1 and less or equal to"
            " offsets.topic.replication.factor",
        )
        _require(
            v["group.min.session.timeout.ms"] <= v["group.max.session.timeout.ms"],
            "group.min.session.timeout.ms must not be greater than group.max.session.timeout.ms",
        )
        _require(
            self.queued_max_request_bytes_effective <= 0
            or self.queued_max_request_bytes_effective >= v["socket.request.max.bytes"],
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes",
        )
        overrides = self.max_connections_per_ip_overrides_map  # raises on a malformed entry
        _require(
            v["max.connections.per.ip"] != 0 or bool(overrides),
            "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.",
        )
        _require(
            not (
                v["inter.broker.listener.name"] is not None
                and "security.inter.broker.protocol" in self._originals
            ),
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
        )
        advertised = [ep.listener_name for ep in self._advertised]
        _require(bool(advertised), "There must be at least one advertised listener.")
        _require(
            self.inter_broker_listener_name in advertised,
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
            f"The valid options based on currently configured listeners are {','.join(advertised)}",
        )
        names = [ep.listener_name for ep in self._listeners]
        _require(
            set(advertised) <= set(names),
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
            f"Found {','.join(advertised)}. The valid options based on the current configuration are {','.join(names)}",
        )
        _require(
            all(ep.host != "0.0.0.0" for ep in self._advertised),
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
        )
        control = v["control.plane.listener.name"]
        if control is not None:
            _require(
                control.upper() in advertised,
                "control.plane.listener.name must be a listener name defined in advertised.listeners. "
                f"The valid options based on currently configured listeners are {','.join(advertised)}",
            )
            _require(
                control.upper() != self.inter_broker_listener_name,
                "control.plane.listener.name, when defined, should have a different value from the inter broker"
                f" listener name. Currently they both have the value {control}",
            )


def _is_listener_key(name: str) -> bool:
    if not name.startswith("listener.name."):
        return False
    rest = name[len("listener.name.") :].partition(".")[2]
    return rest in BROKER_CONFIG.keys or rest.endswith(".sasl.jaas.config")


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """`key=value` strings from the command line; the value may itself contain '='."""
    props: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigException(f"Invalid override {item!r}: expected key=value")
        props[key.strip()] = value
    return props


def parse_connection_overrides(value: str) -> dict[str, int]:
    """max.connections.per.ip.overrides as Kafka's parseCsvMap reads it: `host:count,host:count`,
    split at the last colon (so IPv6 hosts work), blanks around the separators ignored."""
    overrides: dict[str, int] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        try:
            if not sep or not host.strip():
                raise ValueError(f"expected host:count, got {item!r}")
            overrides[host.strip()] = int(count.strip())
        except ValueError as e:
            raise ConfigException(
                f"Error parsing configuration property 'max.connections.per.ip.overrides': {e}"
            ) from e
    return overrides


def _require(condition: bool, message: str) -> None:
    # Kafka's `require(...)` failures; we keep them ConfigExceptions so callers catch one type.
    if not condition:
        raise ConfigException(message)


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, Password):
        return str(value)
    return str(value)
