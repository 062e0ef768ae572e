"""BROKER resources of DescribeConfigs / AlterConfigs / IncrementalAlterConfigs (dynamic broker
configs, Kafka 2.8's ZooKeeper mode).

A resource named after this broker's id is its per-broker layer (`/config/brokers/<id>`); an
empty name is the cluster-wide default (`/config/brokers/<default>`). An alteration is
validated (only dynamically updatable configs, each value of its type), written to ZooKeeper
with a /config/changes notification for every broker, and applied here at once. A description
gives each config's value and source with its synonyms, most specific first: per-broker,
cluster default, server.properties, built-in default.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from kafkapy.common.config_def import ConfigException
from kafkapy.protocol.errors import InvalidConfigurationException, InvalidRequestException
from kafkapy.protocol.generated.describe_configs_response import (
    DescribeConfigsResourceResult,
    DescribeConfigsSynonym,
)
from kafkapy.server.dynamic_broker_config import (
    DEFAULT_ENTITY,
    QUOTA_CONFIGS,
    QUOTA_DOC,
    RECONFIGURABLE,
    DynamicBrokerConfig,
    validate_dynamic_configs,
)

# DescribeConfigs config sources (Kafka's DescribeConfigsResponse.ConfigSource ids).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
CONFIG_TYPES = {
    "boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7, "class": 8,
    "password": 9,
}  # fmt: skip

Synonym = tuple[str, str | None, int]  # (name, value, source)


def to_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def entity_name(broker_id: int, resource_name: str) -> str:
    """The /config/brokers child a resource names; another broker's id is refused as Kafka does
    (the client sends a per-broker resource to that broker)."""
    if resource_name == "":
        return DEFAULT_ENTITY
    if resource_name != str(broker_id):
        raise InvalidRequestException(
            f"Unexpected broker id, expected {broker_id} or empty string, but received {resource_name}"
        )
    return resource_name


def synonym_names(name: str) -> list[str]:
    """Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the broker names that set one value,
    most precise first."""
    for group in (
        ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
        ["log.roll.ms", "log.roll.hours"],
        ["log.roll.jitter.ms", "log.roll.jitter.hours"],
        ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    ):
        if name == group[0]:
            return group
    return [name]


def broker_synonyms(
    name: str, config: Any, dynamic: DynamicBrokerConfig, per_broker: bool = True
) -> list[Synonym]:
    """Kafka's configSynonyms: every layer (per-broker, cluster default, server.properties,
    built-in default) of every synonym name, then everything before the first entry named
    `name` dropped (Kafka's dropWhile: log.retention.hours=168 alone does not describe
    log.retention.ms). The cluster-default resource keeps only DYNAMIC_DEFAULT_BROKER_CONFIG."""
    names = synonym_names(name)
    keys = config.config_keys()
    layers: list[tuple[Mapping[str, Any], int]] = [
        (dynamic.broker_configs, DYNAMIC_BROKER_CONFIG),
        (dynamic.default_configs, DYNAMIC_DEFAULT_BROKER_CONFIG),
        (config.originals, STATIC_BROKER_CONFIG),
        ({n: k.default for n, k in keys.items() if k.default is not None}, DEFAULT_CONFIG),
    ]
    found = [(n, to_string(layer[n]), source) for layer, source in layers for n in names if n in layer]
    while found and found[0][0] != name:
        found.pop(0)
    return [s for s in found if per_broker or s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]


def topic_synonyms(topic_name: str, config: Any, dynamic: DynamicBrokerConfig) -> list[Synonym]:
    """The broker-level synonyms of a topic config (Kafka's LogConfig.TopicConfigSynonyms: the
    most precise broker name, e.g. log.retention.ms for retention.ms)."""
    from kafkapy.server.log.log_config import BROKER_TO_TOPIC_CONFIG

    names = [b for b, (t, _) in BROKER_TO_TOPIC_CONFIG.items() if t == topic_name]
    if not names:
        return []
    precise = next((n for n in names if len(synonym_names(n)) > 1), names[0])
    return broker_synonyms(precise, config, dynamic)


def _entry(
    name: str,
    value: str | None,
    source: int,
    syns: list[Synonym],
    key: Any,
    include_synonyms: bool,
    docs: bool,
) -> DescribeConfigsResourceResult:
    sensitive = key is not None and key.type.value == "password"
    return DescribeConfigsResourceResult(
        name=name,
        value=None if sensitive else value,
        read_only=name not in RECONFIGURABLE,
        is_default=source == DEFAULT_CONFIG,
        config_source=source,
        is_sensitive=sensitive,
        synonyms=[DescribeConfigsSynonym(name=n, value=None if sensitive else v, source=s) for n, v, s in syns]
        if include_synonyms else [],
        config_type=CONFIG_TYPES.get(key.type.value, 0) if key is not None else 5,
        documentation=(key.doc if key is not None else QUOTA_DOC) if docs else None,
    )  # fmt: skip


def describe_broker(
    apis: Any, resource_name: str, keys: Collection[str] | None, include_synonyms: bool, docs: bool
) -> list[DescribeConfigsResourceResult]:
    """Every config of this broker (its id), or the cluster-wide dynamic defaults ("")."""
    config = apis.config
    dynamic: DynamicBrokerConfig = apis.dynamic_broker_config
    per_broker = entity_name(apis.broker_id, resource_name) != DEFAULT_ENTITY
    config_keys = config.config_keys()
    if per_broker:
        names = list(config_keys) + [n for n in QUOTA_CONFIGS if n in dynamic.effective()]
    else:
        names = sorted(dynamic.default_configs)  # Kafka shows only the dynamic defaults here
    out = []
    for name in names:
        if keys is not None and name not in keys:
            continue
        syns = broker_synonyms(name, config, dynamic, per_broker)
        source = syns[0][2] if syns else DEFAULT_CONFIG
        if not per_broker:
            value: str | None = dynamic.default_configs.get(name)
        elif name in config_keys:
            value = to_string(config.get(name))  # the effective value, dynamic layers included
        else:
            value = str(dynamic.quota_rate(name))
        out.append(_entry(name, value, source, syns, config_keys.get(name), include_synonyms, docs))
    return out


def _validated(resource_name: str, configs: Mapping[str, str]) -> None:
    try:
        validate_dynamic_configs(configs)
    except (ConfigException, ValueError) as e:
        raise InvalidRequestException(
            f"Invalid config value for resource ConfigResource(type=BROKER, name='{resource_name}'): {e}"
        ) from None


def _write(apis: Any, name: str, configs: Mapping[str, str]) -> None:
    """Write the layer and notify every broker; apply it here at once so a describe that
    follows the answer sees it (the notification then changes nothing)."""
    from kafkapy.zk.admin_zk_client import AdminZkClient

    AdminZkClient(apis.zk).change_entity_config("brokers", name, configs)
    apis.dynamic_broker_config.reload(apis.zk, name)


def alter_broker(apis: Any, resource_name: str, configs: Mapping[str, str], validate_only: bool) -> None:
    """AlterConfigs: the given configs replace the whole layer (blocking)."""
    name = entity_name(apis.broker_id, resource_name)
    _validated(resource_name, configs)
    if not validate_only:
        _write(apis, name, configs)


def incremental_alter_broker(apis: Any, resource_name: str, ops: Iterable[Any], validate_only: bool) -> None:
    """IncrementalAlterConfigs: the operations applied to the layer in ZooKeeper (blocking)."""
    name = entity_name(apis.broker_id, resource_name)
    current = dict(apis.zk.get_entity_configs("brokers", name) or {})
    keys = apis.config.config_keys()
    updated = apply_ops(
        current,
        ops,
        lambda n: to_string(keys[n].default) if n in keys else None,
        lambda n: n in keys and keys[n].type.value == "list",
    )
    _validated(resource_name, {k: v for k, v in updated.items() if current.get(k) != v})
    if not validate_only:
        _write(apis, name, updated)


def apply_ops(current: dict[str, str], ops: Iterable[Any], default_of: Any, is_list: Any) -> dict[str, str]:
    """Kafka's incremental operations (SET, DELETE, APPEND, SUBTRACT) on one config layer."""
    for op in ops:
        if op.config_operation == SET:
            current[op.name] = op.value
        elif op.config_operation == DELETE:
            current.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            if not is_list(op.name):
                raise InvalidConfigurationException(
                    f"Config value append is not allowed for config key: {op.name}"
                )
            # Ordered sets (dict keys): the value is client bytes, and list membership tests made
            # a 1 MB value of distinct items quadratic, minutes of CPU holding the GIL.
            items = dict.fromkeys(
                v for v in (current.get(op.name) or default_of(op.name) or "").split(",") if v
            )
            added = dict.fromkeys(v for v in (op.value or "").split(",") if v)
            if op.config_operation == APPEND:
                items.update(added)
            else:
                items = {v: None for v in items if v not in added}
            current[op.name] = ",".join(items)
        else:
            raise InvalidRequestException(f"Unknown config operation {op.config_operation}")
    return current
