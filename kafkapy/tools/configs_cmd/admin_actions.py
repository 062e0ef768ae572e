"""kafkapy-configs through --bootstrap-server (Kafka 2.8's ConfigCommand over the Admin API):
DescribeConfigs for --describe, IncrementalAlterConfigs for a topic's --alter, AlterConfigs
(the whole dynamic layer) for a broker's; users and clients go to quota_actions.py."""

from __future__ import annotations

from collections.abc import Callable

from kafkapy.client.admin import AdminClient
from kafkapy.client.configs import (
    BROKER,
    TOPIC,
    DescribedConfig,
    alter_configs,
    describe_configs,
    incremental_alter_configs,
)
from kafkapy.tools.configs_cmd import quota_actions
from kafkapy.tools.configs_cmd.options import DEFAULT_ENTITY, CommandError, Options, check_deletable

Printer = Callable[[str], None]
_RESOURCE = {"topics": TOPIC, "brokers": BROKER}
QUOTA_ENTITY_TYPES = ("users", "clients")  # DescribeClientQuotas / AlterClientQuotas (quota_actions.py)


def _resource(options: Options) -> tuple[int, str]:
    entity = options.entity
    resource_type = _RESOURCE.get(entity.entity_type)
    if resource_type is None:
        raise CommandError(f"Unsupported entity type: {entity.entity_type}")
    return resource_type, "" if entity.name in (None, DEFAULT_ENTITY) else str(entity.name)


def _dynamic_source(resource_type: int, name: str) -> str:
    """Kafka's getResourceConfig filter when --all is not given."""
    if resource_type == TOPIC:
        return "DYNAMIC_TOPIC_CONFIG"
    return "DYNAMIC_BROKER_CONFIG" if name else "DYNAMIC_DEFAULT_BROKER_CONFIG"


def resource_configs(
    admin: AdminClient, resource_type: int, name: str, describe_all: bool
) -> list[DescribedConfig]:
    configs = describe_configs(admin, resource_type, name)
    if not describe_all:
        source = _dynamic_source(resource_type, name)
        configs = [c for c in configs if c.source == source]
    return sorted(configs, key=lambda c: c.name)


def format_entry(entry: DescribedConfig) -> str:
    """Kafka's line: `  name=value sensitive=false synonyms={SOURCE:name=value, ...}`."""
    synonyms = ", ".join(f"{s.source}:{s.name}={_value(s.value)}" for s in entry.synonyms)
    return f"  {entry.name}={_value(entry.value)} sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"


def _value(value: str | None) -> str:
    return "null" if value is None else value


def describe(admin: AdminClient, options: Options, out: Printer) -> None:
    if options.entity.entity_type in QUOTA_ENTITY_TYPES:
        quota_actions.describe(admin, options, out)
        return
    resource_type, name = _resource(options)
    entity_type = options.entity.entity_type
    if options.entity.name is not None:
        names = [name]
    elif resource_type == TOPIC:
        names = admin.list_topics(include_internal=True)
    else:
        names = [str(b) for b in sorted(admin.live_brokers())] + [""]
    for entity in names:
        if resource_type == BROKER and entity == "":
            out(f"Default configs for {entity_type} in the cluster are:")
        else:
            out(
                f"{'All' if options.describe_all else 'Dynamic'} configs for {entity_type[:-1]} {entity} are:"
            )
        for entry in resource_configs(admin, resource_type, entity, options.describe_all):
            out(format_entry(entry))


def alter(admin: AdminClient, options: Options, out: Printer) -> None:
    if options.entity.entity_type in QUOTA_ENTITY_TYPES:
        quota_actions.alter(admin, options, out)
        return
    resource_type, name = _resource(options)
    old = {c.name: c for c in resource_configs(admin, resource_type, name, describe_all=False)}
    check_deletable(old, options.to_delete)
    if resource_type == TOPIC:
        incremental_alter_configs(admin, resource_type, name, options.to_add, options.to_delete)
    else:
        configs = {k: c.value for k, c in old.items() if c.value is not None}
        configs.update(options.to_add)
        for k in options.to_delete:
            configs.pop(k, None)
        alter_configs(admin, resource_type, name, configs)
    if name:
        out(f"Completed updating config for {options.entity.singular} {name}.")
    else:
        out(f"Completed updating default config for {options.entity.entity_type} in the cluster.")
