"""LogConfig: the topic-level configs of a log, with Kafka's names, types, defaults and checks.

`TOPIC_CONFIG_DEF` is the table (DescribeConfigs lists it with sources); `BROKER_TO_TOPIC_CONFIG`
maps the broker-wide names in server.properties to the topic names they default. Every Kafka
2.8 topic config is accepted so that `--config` lines written for Kafka keep working; those the
log does not act on yet (throttling, down-conversion, preallocate) are only stored; compaction is the log
cleaner's (log/cleaner/).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from kafkapy.common.config_def import (
    LONG_MAX,
    ConfigDef,
    ConfigException,
    ConfigType,
    at_least,
    between,
    each_one_of,
    one_of,
)

__all__ = ["BROKER_TO_TOPIC_CONFIG", "TOPIC_CONFIG_DEF", "ConfigException", "LogConfig"]

_T = ConfigType


def _throttled_replicas(name: str, value: Any) -> None:
    """Kafka's ThrottledReplicaListValidator: '*' or [partitionId]:[brokerId] pairs."""
    from kafkapy.server.replication_quota import validate_throttled_replicas

    text = ",".join(value) if isinstance(value, list | tuple) else str(value)
    try:
        validate_throttled_replicas(name, text)
    except ValueError as e:
        raise ConfigException(str(e)) from None


TOPIC_CONFIG_DEF = (
    ConfigDef()
    .define("segment.bytes", _T.INT, 1073741824, at_least(14), doc="The size of a log segment file.")
    .define("segment.ms", _T.LONG, 604800000, at_least(1), doc="Roll a new segment after this time even if not full.")
    .define("segment.jitter.ms", _T.LONG, 0, at_least(0), doc="Maximum random jitter subtracted from segment.ms.")
    .define("segment.index.bytes", _T.INT, 10485760, at_least(4), doc="Size of the offset and time index files.")
    .define("index.interval.bytes", _T.INT, 4096, at_least(0), doc="Bytes between two offset index entries.")
    .define("flush.messages", _T.LONG, LONG_MAX, at_least(1), doc="fsync after this many messages.")
    .define("flush.ms", _T.LONG, LONG_MAX, at_least(0), doc="fsync after this much time.")
    .define("retention.bytes", _T.LONG, -1, doc="Delete old segments when the log is larger than this; -1 is unlimited.")
    .define("retention.ms", _T.LONG, 604800000, at_least(-1), doc="Delete segments older than this; -1 is unlimited.")
    .define("max.message.bytes", _T.INT, 1048588, at_least(0), doc="Largest record batch size allowed.")
    .define("message.timestamp.type", _T.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
            doc="Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).")
    .define("message.timestamp.difference.max.ms", _T.LONG, LONG_MAX, at_least(0),
            doc="With CreateTime, largest allowed difference between a record's timestamp and the broker's clock.")
    .define("cleanup.policy", _T.LIST, "delete", each_one_of("compact", "delete"),
            doc="'delete' drops old segments by retention; 'compact' has the log cleaner keep each key's latest record.")
    .define("min.insync.replicas", _T.INT, 1, at_least(1), doc="Replicas that must acknowledge an acks=all write.")
    .define("unclean.leader.election.enable", _T.BOOLEAN, False, doc="Allow a replica out of the ISR to lead.")
    .define("compression.type", _T.STRING, "producer",
            one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
            doc="Final compression of the topic; 'producer' keeps the producer's (the only one applied now).")
    .define("preallocate", _T.BOOLEAN, False, doc="Preallocate segment files (stored, not applied).")
    .define("file.delete.delay.ms", _T.LONG, 60000, at_least(0), doc="Delay before deleting a file from disk.")
    .define("delete.retention.ms", _T.LONG, 86400000, at_least(0), doc="Retention of delete tombstones (compaction).")
    .define("min.compaction.lag.ms", _T.LONG, 0, at_least(0), doc="Minimum age of a record before compaction.")
    .define("max.compaction.lag.ms", _T.LONG, LONG_MAX, at_least(1), doc="Maximum age of a record before compaction.")
    .define("min.cleanable.dirty.ratio", _T.DOUBLE, 0.5, between(0, 1), doc="Dirty ratio that triggers compaction.")
    .define("message.format.version", _T.STRING, "2.8-IV1", doc="Message format version (v2 is always written).")
    .define("message.downconversion.enable", _T.BOOLEAN, True, doc="Down-convert for old consumers (not applied).")
    .define("leader.replication.throttled.replicas", _T.LIST, "", _throttled_replicas,
            doc="Replicas throttled on the leader side.")
    .define("follower.replication.throttled.replicas", _T.LIST, "", _throttled_replicas,
            doc="Replicas throttled on the follower side.")
)  # fmt: skip

_MINUTE_MS, _HOUR_MS = 60_000, 3_600_000


def _scaled(factor: int) -> Callable[[str], str]:
    return lambda value: str(int(value.strip()) * factor)


def _same(value: str) -> str:
    return value


# broker name -> (topic name, conversion of the raw value). Several broker names may feed one
# topic name; like Kafka, the first in this order wins (log.retention.ms over minutes over hours).
BROKER_TO_TOPIC_CONFIG: dict[str, tuple[str, Callable[[str], str]]] = {
    "log.segment.bytes": ("segment.bytes", _same),
    "log.roll.ms": ("segment.ms", _same),
    "log.roll.hours": ("segment.ms", _scaled(_HOUR_MS)),
    "log.roll.jitter.ms": ("segment.jitter.ms", _same),
    "log.roll.jitter.hours": ("segment.jitter.ms", _scaled(_HOUR_MS)),
    "log.index.size.max.bytes": ("segment.index.bytes", _same),
    "log.index.interval.bytes": ("index.interval.bytes", _same),
    "log.flush.interval.messages": ("flush.messages", _same),
    "log.flush.interval.ms": ("flush.ms", _same),
    "log.retention.bytes": ("retention.bytes", _same),
    "log.retention.ms": ("retention.ms", _same),
    "log.retention.minutes": ("retention.ms", _scaled(_MINUTE_MS)),
    "log.retention.hours": ("retention.ms", _scaled(_HOUR_MS)),
    "message.max.bytes": ("max.message.bytes", _same),
    "log.message.timestamp.type": ("message.timestamp.type", _same),
    "log.message.timestamp.difference.max.ms": ("message.timestamp.difference.max.ms", _same),
    "log.cleanup.policy": ("cleanup.policy", _same),
    "min.insync.replicas": ("min.insync.replicas", _same),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", _same),
    "compression.type": ("compression.type", _same),
    "log.preallocate": ("preallocate", _same),
    "log.segment.delete.delay.ms": ("file.delete.delay.ms", _same),
    "log.cleaner.delete.retention.ms": ("delete.retention.ms", _same),
    "log.cleaner.min.compaction.lag.ms": ("min.compaction.lag.ms", _same),
    "log.cleaner.max.compaction.lag.ms": ("max.compaction.lag.ms", _same),
    "log.cleaner.min.cleanable.ratio": ("min.cleanable.dirty.ratio", _same),
    "log.message.format.version": ("message.format.version", _same),
    "log.message.downconversion.enable": ("message.downconversion.enable", _same),
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Typed topic configs; field names are the Kafka names with '.' turned into '_'."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 604800000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    compression_type: str = "producer"
    preallocate: bool = False
    file_delete_delay_ms: int = 60000
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    message_format_version: str = "2.8-IV1"
    message_downconversion_enable: bool = True
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()

    @property
    def delete(self) -> bool:
        """Whether retention by time and size applies (cleanup.policy contains 'delete')."""
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_props(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """Topic overrides `props` over `defaults` (the broker's), each value checked.

        Raises ConfigException naming the key, the value and what is allowed, or the unknown
        topic config name.
        """
        unknown = TOPIC_CONFIG_DEF.unknown(props)
        if unknown:
            raise ConfigException(f"Unknown topic config name: {unknown[0]}")
        base = (defaults or cls()).to_props()
        values = TOPIC_CONFIG_DEF.parse({**base, **props})
        if values["min.compaction.lag.ms"] > values["max.compaction.lag.ms"]:
            raise ConfigException(
                f"conflict topic config setting min.compaction.lag.ms ({values['min.compaction.lag.ms']}) "
                f"> max.compaction.lag.ms ({values['max.compaction.lag.ms']})"
            )
        kwargs = {name.replace(".", "_"): _frozen(value) for name, value in values.items()}
        return cls(**kwargs)

    @classmethod
    def from_broker_props(cls, props: Mapping[str, str]) -> LogConfig:
        """The broker-wide defaults from server.properties names (unrelated keys are ignored)."""
        topic_props: dict[str, str] = {}
        for broker_name, (topic_name, convert) in BROKER_TO_TOPIC_CONFIG.items():
            if broker_name in props and topic_name not in topic_props:
                try:
                    topic_props[topic_name] = convert(str(props[broker_name]))
                except ValueError:
                    raise ConfigException(
                        broker_name, props[broker_name], "Not a number of type LONG"
                    ) from None
        return cls.from_props(topic_props)

    def to_props(self) -> dict[str, Any]:
        """Kafka name -> typed value, for every topic config."""
        return {f.name.replace("_", "."): _thawed(getattr(self, f.name)) for f in fields(self)}

    def overrides(self, defaults: LogConfig) -> dict[str, Any]:
        """The configs whose value differs from `defaults` (DescribeConfigs: TOPIC_CONFIG source)."""
        mine, theirs = self.to_props(), defaults.to_props()
        return {k: v for k, v in mine.items() if theirs[k] != v}


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _thawed(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
