"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics (and broker descriptions).

Topic overrides live in /config/topics/<topic>; a change is written there with a
/config/changes notification, and every broker's DynamicConfigManager applies it to its logs.
Each described value carries its source as Kafka reports it: a topic override
(DYNAMIC_TOPIC_CONFIG), a server.properties setting (STATIC_BROKER_CONFIG) or the default.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    InvalidConfigurationException,
    InvalidRequestException,
    KafkaError,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request

TOPIC, BROKER = 2, 4
# DescribeConfigs config sources.
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
_CONFIG_TYPES = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _to_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _broker_synonyms(apis: KafkaApis) -> dict[str, list[tuple[str, str]]]:
    """topic config name -> [(server.properties name, value)] set explicitly on this broker."""
    from kafkapy.server.log.log_config import BROKER_TO_TOPIC_CONFIG

    originals = apis.config.originals
    out: dict[str, list[tuple[str, str]]] = {}
    for broker_name, (topic_name, _) in BROKER_TO_TOPIC_CONFIG.items():
        if broker_name in originals:
            out.setdefault(topic_name, []).append((broker_name, str(originals[broker_name])))
    return out


def describe_topic(
    apis: KafkaApis, topic: str, keys: set[str] | None, synonyms: bool, docs: bool
) -> list[dict[str, Any]]:
    from kafkapy.server.log.log_config import TOPIC_CONFIG_DEF, LogConfig

    if not apis.metadata_cache.contains_topic(topic):
        raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
    overrides = apis.zk.get_entity_configs("topics", topic) or {}
    broker_defaults = LogConfig.from_props(apis.config.log_config_props()).to_props()
    static = _broker_synonyms(apis)
    out = []
    for name, key in TOPIC_CONFIG_DEF.keys.items():
        if keys is not None and name not in keys:
            continue
        syns = []
        if name in overrides:
            value, source = overrides[name], DYNAMIC_TOPIC_CONFIG
            syns.append({"name": name, "value": value, "source": DYNAMIC_TOPIC_CONFIG})
        elif name in static:
            value, source = _to_string(broker_defaults[name]), STATIC_BROKER_CONFIG
        else:
            value, source = _to_string(broker_defaults[name]), DEFAULT_CONFIG
        syns += [{"name": n, "value": v, "source": STATIC_BROKER_CONFIG} for n, v in static.get(name, [])]
        syns.append({"name": name, "value": _to_string(key.default), "source": DEFAULT_CONFIG})
        out.append(
            {
                "name": name,
                "value": value,
                "read_only": False,
                "is_default": source == DEFAULT_CONFIG,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": syns if synonyms else [],
                "config_type": _CONFIG_TYPES.get(key.type.value, 0),
                "documentation": key.doc if docs else None,
            }
        )
    return out


def describe_broker(apis: KafkaApis, keys: set[str] | None, docs: bool) -> list[dict[str, Any]]:
    config = apis.config
    originals = config.originals
    out = []
    for name, key in config.config_keys().items():
        if keys is not None and name not in keys:
            continue
        sensitive = key.type.value == "password"
        source = STATIC_BROKER_CONFIG if name in originals else DEFAULT_CONFIG
        out.append(
            {
                "name": name,
                "value": None if sensitive else _to_string(config.get(name)),
                "read_only": True,
                "is_default": source == DEFAULT_CONFIG,
                "config_source": source,
                "is_sensitive": sensitive,
                "synonyms": [],
                "config_type": _CONFIG_TYPES.get(key.type.value, 0),
                "documentation": key.doc if docs else None,
            }
        )
    return out


@handles(ApiKey.DESCRIBE_CONFIGS)
async def handle_describe_configs(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    version = request.header.api_version
    results = []
    seen: set[tuple[int, str]] = set()
    for r in body.resources:
        # A set: each described config is looked up in the client's key list, which may be long.
        keys = set(r.configuration_keys) if r.configuration_keys is not None else None
        result = {
            "error_code": 0,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        try:
            # A resource's description is a few hundred entries for seven request bytes: a
            # request repeating it would build a response thousands of times its own size.
            # The repeats are refused (kafkapy's bound; Kafka 2.x describes every copy).
            if (r.resource_type, r.resource_name) in seen:
                raise InvalidRequestException(f"Duplicate resource {r.resource_name!r} in request")
            seen.add((r.resource_type, r.resource_name))
            if r.resource_type == TOPIC:
                result["configs"] = await loop.run_in_executor(
                    None,
                    describe_topic,
                    apis,
                    r.resource_name,
                    keys,
                    version >= 1 and body.include_synonyms,
                    version >= 3 and body.include_documentation,
                )
            elif r.resource_type == BROKER:
                if r.resource_name not in ("", str(apis.broker_id)):
                    raise InvalidRequestException(
                        f"Unexpected broker id, expected {apis.broker_id} or empty string"
                    )
                result["configs"] = describe_broker(apis, keys, version >= 3 and body.include_documentation)
            else:
                raise InvalidRequestException(f"Unsupported resource type {r.resource_type}")
        except KafkaError as e:
            result["error_code"], result["error_message"] = e.code, e.message
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _validate_topic_configs(configs: dict[str, str]) -> None:
    from kafkapy.server.log.log_config import ConfigException, LogConfig

    try:
        LogConfig.from_props(configs)
    except ConfigException as e:
        raise InvalidConfigurationException(str(e)) from None


def _alter_topic(apis: KafkaApis, topic: str, new_configs: dict[str, str], validate_only: bool) -> None:
    from kafkapy.server.zk.admin_zk_client import AdminZkClient

    if not apis.metadata_cache.contains_topic(topic):
        raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
    _validate_topic_configs(new_configs)
    if not validate_only:
        AdminZkClient(apis.zk).change_topic_config(topic, new_configs)


async def _alter_each(apis: KafkaApis, body: Any, alter: Callable[[Any], None]) -> dict[str, Any]:
    """Run `alter(resource)` off the loop for each topic resource; errors per resource, as Kafka.

    Kafka reads the resources into a map, so a resource named twice is altered once (the last
    entry wins) and answered once: repeats cannot multiply ZooKeeper writes and the config
    change notifications every broker acts on."""
    loop = asyncio.get_running_loop()
    responses = []
    unique = {(r.resource_type, r.resource_name): r for r in body.resources}
    for r in unique.values():
        response = {
            "error_code": 0,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }
        try:
            if r.resource_type != TOPIC:
                raise InvalidRequestException(
                    "Only topic configs can be altered (dynamic broker configs are not supported)"
                )
            await loop.run_in_executor(None, alter, r)
        except KafkaError as e:
            response["error_code"], response["error_message"] = e.code, e.message
        responses.append(response)
    return {"throttle_time_ms": 0, "responses": responses}


@handles(ApiKey.ALTER_CONFIGS)
async def handle_alter_configs(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    def alter(r: Any) -> None:
        configs = {c.name: c.value for c in r.configs if c.value is not None}
        _alter_topic(apis, r.resource_name, configs, body.validate_only)

    return await _alter_each(apis, body, alter)


def _incremental(apis: KafkaApis, topic: str, ops: list[Any], validate_only: bool) -> None:
    from kafkapy.server.log.log_config import TOPIC_CONFIG_DEF

    current = dict(apis.zk.get_entity_configs("topics", topic) or {})
    defs = TOPIC_CONFIG_DEF.keys
    for op in ops:
        if op.config_operation == SET:
            current[op.name] = op.value
        elif op.config_operation == DELETE:
            current.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            key = defs.get(op.name)
            if key is None or key.type.value != "list":
                raise InvalidConfigurationException(
                    f"Config value append is not allowed for config key: {op.name}"
                )
            # Ordered sets (dict keys): the value is client bytes, and list membership tests made
            # a 1 MB value of distinct items quadratic, minutes of CPU holding the GIL.
            items = dict.fromkeys(
                v for v in (current.get(op.name) or _to_string(key.default) or "").split(",") if v
            )
            new = dict.fromkeys(v for v in (op.value or "").split(",") if v)
            if op.config_operation == APPEND:
                items.update(new)
            else:
                items = {v: None for v in items if v not in new}
            current[op.name] = ",".join(items)
        else:
            raise InvalidRequestException(f"Unknown config operation {op.config_operation}")
    _alter_topic(apis, topic, current, validate_only)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def handle_incremental_alter_configs(apis: KafkaApis, request: Request, body: Any) -> dict[str, Any]:
    return await _alter_each(
        apis, body, lambda r: _incremental(apis, r.resource_name, list(r.configs), body.validate_only)
    )
