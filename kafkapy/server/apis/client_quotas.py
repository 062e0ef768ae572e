"""DescribeClientQuotas (48) and AlterClientQuotas (49), KIP-546, as a ZooKeeper-era broker
answers them (Kafka 2.8's ZkAdminManager): quotas are read from and written to
`/config/users/...` and `/config/clients/...` (server/quota/quota_znodes.py), a write announced
under `/config/changes` so every broker's quota managers follow. ZooKeeper I/O runs off the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import InvalidRequestException
from kafkapy.protocol.generated.alter_client_quotas_request import AlterClientQuotasRequest
from kafkapy.protocol.generated.alter_client_quotas_response import AlterClientQuotasResponse
from kafkapy.protocol.generated.alter_client_quotas_response import EntityData as AlterEntityData
from kafkapy.protocol.generated.alter_client_quotas_response import EntryData as AlterEntryData
from kafkapy.protocol.generated.describe_client_quotas_request import DescribeClientQuotasRequest
from kafkapy.protocol.generated.describe_client_quotas_response import (
    DescribeClientQuotasResponse,
    EntityData,
    EntryData,
    ValueData,
)
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.quota.quota_entity import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaEntity,
)
from kafkapy.server.quota.quota_znodes import read_all_quotas, read_entity, write_entity

USER = "user"  # Kafka's ClientQuotaEntity.USER
CLIENT_ID = "client-id"
IP = "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
# Kafka's DynamicConfig.Client/User quota keys and whether each is an integer (LONG) config.
_INTEGER_KEYS = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False,
                 CONTROLLER_MUTATION_RATE: False}  # fmt: skip

T = TypeVar("T")


async def _off_loop(fn: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(None, fn)


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: str
    match_type: int
    match: str | None


def _entity_parts(entity: QuotaEntity) -> dict[str, str | None]:
    """The entity as {type: name}, None naming the default (the wire form)."""
    parts: dict[str, str | None] = {}
    if entity.user is not None:
        parts[USER] = None if entity.user == DEFAULT else entity.user
    if entity.client_id is not None:
        parts[CLIENT_ID] = None if entity.client_id == DEFAULT else entity.client_id
    return parts


def _check_components(components: Sequence[FilterComponent]) -> None:
    seen: set[str] = set()
    for c in components:
        if c.entity_type in seen:
            raise InvalidRequestException(f"Duplicate {c.entity_type} filter component entity type")
        seen.add(c.entity_type)
        if c.entity_type == IP:
            raise InvalidRequestException("IP connection rate quotas are not supported by kafkapy")
        if c.entity_type not in (USER, CLIENT_ID):
            raise InvalidRequestException(f"Custom entity type '{c.entity_type}' not supported")
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidRequestException(f"Unexpected match type: {c.match_type}")
        if c.match_type == MATCH_EXACT and c.match is None:
            raise InvalidRequestException("Unexpected null match for an exact match filter component")


def matches(entity: QuotaEntity, components: Sequence[FilterComponent], strict: bool) -> bool:
    """Kafka's filter: every component matches the entity's part of its type; strict also
    refuses entities with parts no component names."""
    parts = _entity_parts(entity)
    for c in components:
        if c.entity_type not in parts:
            return False
        name = parts[c.entity_type]
        if c.match_type == MATCH_EXACT and name != c.match:
            return False
        if c.match_type == MATCH_DEFAULT and name is not None:
            return False
        if c.match_type == MATCH_SPECIFIED and name is None:
            return False
    return not strict or set(parts) <= {c.entity_type for c in components}


def _order(item: tuple[QuotaEntity, Mapping[str, float]]) -> tuple[bool, str, bool, str]:
    """Users before their clients, names in order."""
    entity = item[0]
    return (entity.user is not None, entity.user or "", entity.client_id is not None, entity.client_id or "")


def describe_entries(
    quotas: Mapping[QuotaEntity, Mapping[str, float]], components: Sequence[FilterComponent], strict: bool
) -> list[EntryData]:
    _check_components(components)
    entries = []
    for entity, values in sorted(quotas.items(), key=_order):
        if values and matches(entity, components, strict):
            entries.append(EntryData(
                entity=[EntityData(entity_type=t, entity_name=n) for t, n in _entity_parts(entity).items()],
                values=[ValueData(key=k, value=v) for k, v in sorted(values.items())],
            ))  # fmt: skip
    return entries


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS)
async def handle_describe_client_quotas(
    apis: KafkaApis, request: Request, body: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    components = [FilterComponent(c.entity_type, c.match_type, c.match) for c in body.components]
    try:
        quotas = await _off_loop(lambda: read_all_quotas(apis.zk))
        entries = describe_entries(quotas, components, body.strict)
    except InvalidRequestException as e:
        return DescribeClientQuotasResponse(
            throttle_time_ms=0, error_code=e.code, error_message=e.message or str(e), entries=None
        )
    return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=0, error_message=None, entries=entries)


def entity_of(parts: Sequence[tuple[str, str | None]]) -> QuotaEntity:
    """A wire entity [(type, name or None)] as a QuotaEntity (Kafka's validation)."""
    if not parts:
        raise InvalidRequestException("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for entity_type, name in parts:
        if entity_type in names:
            raise InvalidRequestException(f"Duplicate {entity_type} entity type")
        if entity_type == IP:
            raise InvalidRequestException("IP connection rate quotas are not supported by kafkapy")
        if entity_type not in (USER, CLIENT_ID):
            raise InvalidRequestException(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise InvalidRequestException(f"Empty {entity_type} not supported")
        names[entity_type] = DEFAULT if name is None else name
    return QuotaEntity(names.get(USER), names.get(CLIENT_ID))


def apply_ops(config: Mapping[str, str], ops: Sequence[tuple[str, float, bool]]) -> dict[str, str]:
    """The entity's new config after (key, value, remove) ops; other keys (SCRAM) are kept.
    Integer quotas are stored as integers, as Kafka writes them."""
    new = dict(config)
    for key, value, remove in ops:
        integer = _INTEGER_KEYS.get(key)
        if integer is None:
            raise InvalidRequestException(f"Invalid configuration key {key}")
        if remove:
            new.pop(key, None)
            continue
        if integer:
            if abs(round(value) - value) > 1e-6:
                raise InvalidRequestException(f"Configuration {key} must be a Long value")
            new[key] = str(round(value))
        else:
            new[key] = repr(float(value))
    return new


@handles(ApiKey.ALTER_CLIENT_QUOTAS)
async def handle_alter_client_quotas(
    apis: KafkaApis, request: Request, body: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    zk = apis.zk
    validate_only = bool(body.validate_only)

    def alter(parts: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]]) -> None:
        entity = entity_of(parts)
        current = read_entity(zk, entity)
        new = apply_ops(current, ops)
        if not validate_only and new != current:
            write_entity(zk, entity, new)

    results = []
    for entry in body.entries:
        parts = [(e.entity_type, e.entity_name) for e in entry.entity]
        ops = [(op.key, op.value, bool(op.remove)) for op in entry.ops]
        try:
            await _off_loop(lambda p=parts, o=ops: alter(p, o))  # type: ignore[misc]
            code, message = 0, None
        except InvalidRequestException as e:
            code, message = e.code, e.message or str(e)
        results.append(AlterEntryData(
            error_code=code, error_message=message,
            entity=[AlterEntityData(entity_type=t, entity_name=n) for t, n in parts],
        ))  # fmt: skip
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=results)
