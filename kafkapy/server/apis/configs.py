"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics and brokers.

Topic overrides live in /config/topics/<topic>; a change is written there with a
/config/changes notification, and every broker's DynamicConfigManager applies it to its logs.
Each described value carries its source as Kafka reports it: a topic override
(DYNAMIC_TOPIC_CONFIG), a dynamic broker config (per broker or cluster default), a
server.properties setting (STATIC_BROKER_CONFIG) or the default. BROKER resources (dynamic
broker configs) are handled in broker_configs.py.

Authorization as Kafka's: DescribeConfigs / AlterConfigs on the topic (TOPIC_AUTHORIZATION_FAILED)
or, for a broker resource, on the cluster (CLUSTER_AUTHORIZATION_FAILED), per resource.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    InvalidConfigurationException,
    InvalidRequestException,
    KafkaError,
    TopicAuthorizationException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.generated.alter_configs_request import AlterConfigsRequest
from kafkapy.protocol.generated.alter_configs_request import AlterConfigsResource as AlterResource
from kafkapy.protocol.generated.alter_configs_response import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from kafkapy.protocol.generated.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kafkapy.protocol.generated.describe_configs_response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from kafkapy.protocol.generated.incremental_alter_configs_request import (
    AlterConfigsResource as IncrementalResource,
)
from kafkapy.protocol.generated.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from kafkapy.protocol.generated.incremental_alter_configs_response import (
    AlterConfigsResourceResponse as IncrementalResourceResponse,
)
from kafkapy.protocol.generated.incremental_alter_configs_response import IncrementalAlterConfigsResponse
from kafkapy.server.apis.auth_helper import authorize, authorize_cluster
from kafkapy.server.apis.broker_configs import (
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    alter_broker,
    apply_ops,
    describe_broker,
    incremental_alter_broker,
    topic_synonyms,
)
from kafkapy.server.apis.broker_configs import to_string as _to_string
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.dynamic_broker_config import DynamicBrokerConfig
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType

TOPIC, BROKER = 2, 4


def _check_authorized(
    apis: KafkaApis,
    request: Request,
    r: DescribeConfigsResource | AlterResource | IncrementalResource,
    operation: Operation,
) -> None:
    """Raises the resource's authorization error when `operation` is not allowed on it."""
    if r.resource_type == TOPIC:
        if not authorize(apis, request, operation, ResourceType.TOPIC, r.resource_name):
            raise TopicAuthorizationException()
    elif r.resource_type == BROKER and not authorize_cluster(apis, request, operation):
        raise ClusterAuthorizationException()


def _dynamic(apis: KafkaApis) -> DynamicBrokerConfig:
    return apis.dynamic_broker_config


def describe_topic(
    apis: KafkaApis, topic: str, keys: set[str] | None, synonyms: bool, docs: bool
) -> list[DescribeConfigsResourceResult]:
    from kafkapy.server.log.log_config import TOPIC_CONFIG_DEF, LogConfig

    if not apis.metadata_cache.contains_topic(topic):
        raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
    overrides = apis.zk.get_entity_configs("topics", topic) or {}
    broker_defaults = LogConfig.from_props(apis.config.log_config_props()).to_props()
    out = []
    for name, key in TOPIC_CONFIG_DEF.keys.items():
        if keys is not None and name not in keys:
            continue
        syns = []
        inherited = topic_synonyms(name, apis.config, _dynamic(apis))
        value: str | None
        if name in overrides:
            value, source = overrides[name], DYNAMIC_TOPIC_CONFIG
            syns.append(DescribeConfigsSynonym(name=name, value=value, source=DYNAMIC_TOPIC_CONFIG))
        elif inherited:
            value, source = _to_string(broker_defaults[name]), inherited[0][2]
        else:
            value, source = _to_string(broker_defaults[name]), DEFAULT_CONFIG
        syns += [DescribeConfigsSynonym(name=n, value=v, source=src) for n, v, src in inherited]
        out.append(
            DescribeConfigsResourceResult(
                name=name,
                value=value,
                read_only=False,
                is_default=source == DEFAULT_CONFIG,
                config_source=source,
                is_sensitive=False,
                synonyms=syns if synonyms else [],
                config_type=CONFIG_TYPES.get(key.type.value, 0),
                documentation=key.doc if docs else None,
            )
        )
    return out


@handles(ApiKey.DESCRIBE_CONFIGS)
async def handle_describe_configs(
    apis: KafkaApis, request: Request, body: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    loop = asyncio.get_running_loop()
    version = request.header.api_version
    results = []
    seen: set[tuple[int, str]] = set()
    for r in body.resources:
        # A set: each described config is looked up in the client's key list, which may be long.
        keys = set(r.configuration_keys) if r.configuration_keys is not None else None
        result = DescribeConfigsResult(
            error_code=0,
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
            configs=[],
        )
        try:
            # A resource's description is a few hundred entries for seven request bytes: a
            # request repeating it would build a response thousands of times its own size.
            # The repeats are refused (kafkapy's bound; Kafka 2.x describes every copy).
            if (r.resource_type, r.resource_name) in seen:
                raise InvalidRequestException(f"Duplicate resource {r.resource_name!r} in request")
            seen.add((r.resource_type, r.resource_name))
            _check_authorized(apis, request, r, Operation.DESCRIBE_CONFIGS)
            if r.resource_type == TOPIC:
                result.configs = await loop.run_in_executor(
                    None,
                    describe_topic,
                    apis,
                    r.resource_name,
                    keys,
                    version >= 1 and body.include_synonyms,
                    version >= 3 and body.include_documentation,
                )
            elif r.resource_type == BROKER:
                result.configs = describe_broker(
                    apis, r.resource_name, keys, version >= 1 and body.include_synonyms,
                    version >= 3 and body.include_documentation,
                )  # fmt: skip
            else:
                raise InvalidRequestException(f"Unsupported resource type {r.resource_type}")
        except KafkaError as e:
            result.error_code, result.error_message = e.code, e.message
        results.append(result)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def _validate_topic_configs(configs: dict[str, str]) -> None:
    from kafkapy.server.log.log_config import ConfigException, LogConfig

    try:
        LogConfig.from_props(configs)
    except ConfigException as e:
        raise InvalidConfigurationException(str(e)) from None


def _alter_topic(apis: KafkaApis, topic: str, new_configs: dict[str, str], validate_only: bool) -> None:
    from kafkapy.zk.admin_zk_client import AdminZkClient

    if not apis.metadata_cache.contains_topic(topic):
        raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
    _validate_topic_configs(new_configs)
    if not validate_only:
        AdminZkClient(apis.zk).change_topic_config(topic, new_configs)


# One resource's answer to AlterConfigs/IncrementalAlterConfigs:
# (error code, error message, resource type, resource name).
_Altered = tuple[int, str | None, int, str]


async def _alter_each(
    apis: KafkaApis,
    request: Request,
    resources: Iterable[AlterResource | IncrementalResource],
    alter: Callable[[AlterResource | IncrementalResource], None],
) -> list[_Altered]:
    """Run `alter(resource)` off the loop for each topic or broker resource; errors per resource.

    Kafka reads the resources into a map, so a resource named twice is altered once (the last
    entry wins) and answered once: repeats cannot multiply ZooKeeper writes and the config
    change notifications every broker acts on."""
    loop = asyncio.get_running_loop()
    responses: list[_Altered] = []
    unique = {(r.resource_type, r.resource_name): r for r in resources}
    for r in unique.values():
        try:
            if r.resource_type not in (TOPIC, BROKER):
                raise InvalidRequestException(f"Unsupported resource type {r.resource_type}")
            _check_authorized(apis, request, r, Operation.ALTER_CONFIGS)
            await loop.run_in_executor(None, alter, r)
        except KafkaError as e:
            responses.append((e.code, e.message, r.resource_type, r.resource_name))
            continue
        responses.append((0, None, r.resource_type, r.resource_name))
    return responses


@handles(ApiKey.ALTER_CONFIGS)
async def handle_alter_configs(
    apis: KafkaApis, request: Request, body: AlterConfigsRequest
) -> AlterConfigsResponse:
    def alter(r: AlterResource | IncrementalResource) -> None:
        configs = {c.name: c.value for c in r.configs if c.value is not None}
        if r.resource_type == BROKER:
            alter_broker(apis, r.resource_name, configs, body.validate_only)
        else:
            _alter_topic(apis, r.resource_name, configs, body.validate_only)

    altered = await _alter_each(apis, request, body.resources, alter)
    return AlterConfigsResponse(
        throttle_time_ms=0,
        responses=[
            AlterConfigsResourceResponse(error_code=c, error_message=m, resource_type=t, resource_name=n)
            for c, m, t, n in altered
        ],
    )


def _incremental(apis: KafkaApis, r: AlterResource | IncrementalResource, validate_only: bool) -> None:
    from kafkapy.server.log.log_config import TOPIC_CONFIG_DEF

    if r.resource_type == BROKER:
        incremental_alter_broker(apis, r.resource_name, list(r.configs), validate_only)
        return
    defs = TOPIC_CONFIG_DEF.keys
    current = apply_ops(
        dict(apis.zk.get_entity_configs("topics", r.resource_name) or {}), list(r.configs),
        lambda n: _to_string(defs[n].default) if n in defs else None,
        lambda n: n in defs and defs[n].type.value == "list",
    )  # fmt: skip
    _alter_topic(apis, r.resource_name, current, validate_only)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def handle_incremental_alter_configs(
    apis: KafkaApis, request: Request, body: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    altered = await _alter_each(
        apis, request, body.resources, lambda r: _incremental(apis, r, body.validate_only)
    )
    return IncrementalAlterConfigsResponse(
        throttle_time_ms=0,
        responses=[
            IncrementalResourceResponse(error_code=c, error_message=m, resource_type=t, resource_name=n)
            for c, m, t, n in altered
        ],
    )
