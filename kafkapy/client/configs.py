"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs over the AdminClient: what Kafka's
Admin.describeConfigs, alterConfigs and incrementalAlterConfigs give kafkapy-configs.

A per-broker resource (BROKER named by an id) goes to that broker, as Kafka's admin client
routes it; topics and the cluster-wide default ("") go to any broker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.generated import alter_configs_request as alter
from kafkapy.protocol.generated import incremental_alter_configs_request as incremental
from kafkapy.protocol.generated.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)

TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
# Kafka's ConfigEntry.ConfigSource names, by DescribeConfigs id.
SOURCE_NAMES = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    name: str
    value: str | None
    source: str
    is_sensitive: bool
    read_only: bool
    synonyms: tuple[ConfigSynonym, ...]


def _node(resource_type: int, name: str) -> int | None:
    return int(name) if resource_type == BROKER and name else None


def describe_configs(admin: AdminClient, resource_type: int, name: str) -> list[DescribedConfig]:
    """Every config of one resource, with its source and synonyms."""
    answer = admin.send_to_node(
        _node(resource_type, name), ApiKey.DESCRIBE_CONFIGS, "describeConfigs",
        lambda v: DescribeConfigsRequest(
            resources=[DescribeConfigsResource(resource_type=resource_type, resource_name=name, configuration_keys=None)],
            include_synonyms=True,
            include_documentation=False,
        ),
    )  # fmt: skip
    out = []
    for r in answer.results:
        raise_for_error(r.error_code, r.error_message)
        for c in r.configs:
            synonyms = tuple(
                ConfigSynonym(s.name, s.value, SOURCE_NAMES.get(s.source, "UNKNOWN"))
                for s in (c.synonyms or [])
            )
            out.append(
                DescribedConfig(
                    c.name,
                    c.value,
                    SOURCE_NAMES.get(c.config_source, "UNKNOWN"),
                    bool(c.is_sensitive),
                    bool(c.read_only),
                    synonyms,
                )
            )
    return out


def incremental_alter_configs(
    admin: AdminClient, resource_type: int, name: str, to_set: Mapping[str, str], to_delete: Sequence[str]
) -> None:
    ops = [incremental.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in to_set.items()]
    ops += [incremental.AlterableConfig(name=k, config_operation=DELETE, value=None) for k in to_delete]
    resource = incremental.AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=ops)
    answer = admin.send_to_node(
        _node(resource_type, name), ApiKey.INCREMENTAL_ALTER_CONFIGS, "incrementalAlterConfigs",
        lambda v: incremental.IncrementalAlterConfigsRequest(resources=[resource], validate_only=False),
    )  # fmt: skip
    for r in answer.responses:
        raise_for_error(r.error_code, r.error_message)


def alter_configs(admin: AdminClient, resource_type: int, name: str, configs: Mapping[str, str]) -> None:
    """AlterConfigs: `configs` replace every dynamic config of the resource."""
    entries = [alter.AlterableConfig(name=k, value=v) for k, v in configs.items()]
    resource = alter.AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=entries)
    answer = admin.send_to_node(
        _node(resource_type, name), ApiKey.ALTER_CONFIGS, "alterConfigs",
        lambda v: alter.AlterConfigsRequest(resources=[resource], validate_only=False),
    )  # fmt: skip
    for r in answer.responses:
        raise_for_error(r.error_code, r.error_message)
