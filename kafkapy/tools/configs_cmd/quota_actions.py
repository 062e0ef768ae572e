"""kafkapy-configs for users and clients through --bootstrap-server (Kafka 2.6+'s ConfigCommand):
DescribeClientQuotas for --describe, AlterClientQuotas for --alter, with Kafka's lines:

    Quota configs for user-principal 'u', client-id 'c' are producer_byte_rate=1048576.0
    Completed updating config for user u.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from kafkapy.client.admin import AdminClient
from kafkapy.client.client_quotas import (
    CLIENT_ID,
    USER,
    FilterComponent,
    alter_client_quotas,
    describe_client_quotas,
)
from kafkapy.tools.configs_cmd.options import (
    CLIENT_QUOTA_CONFIGS,
    DEFAULT_ENTITY,
    CommandError,
    Entity,
    Options,
)

Printer = Callable[[str], None]
_WIRE_TYPE = {"users": USER, "clients": CLIENT_ID}
_TYPE_NAME = {USER: "user-principal", CLIENT_ID: "client-id"}


def java_double(value: float) -> str:
    """Java's Double.toString, which Kafka prints quota values with (1048576.0, 1.048576E7)."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "e" not in text else java_double_scientific(value)
    return java_double_scientific(value)


def java_double_scientific(value: float) -> str:
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    scientific = len(digits) - 1 + exponent
    mantissa = f"{digits[0]}.{''.join(map(str, digits[1:])) or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{scientific}"


def _parts(entity: Entity) -> list[Entity]:
    return [entity] if entity.child is None else [entity, entity.child]


def _components(entity: Entity) -> list[FilterComponent]:
    components = []
    for part in _parts(entity):
        wire = _WIRE_TYPE[part.entity_type]
        if part.name is None:
            components.append(FilterComponent.of_entity_type(wire))
        elif part.name == DEFAULT_ENTITY:
            components.append(FilterComponent.of_default_entity(wire))
        else:
            components.append(FilterComponent.of_entity(wire, part.name))
    return components


def _entity_text(entity: dict[str, str | None]) -> str:
    texts = []
    for wire in (USER, CLIENT_ID):
        if wire in entity:
            name = entity[wire]
            texts.append(f"{_TYPE_NAME[wire]} '{name}'" if name is not None else f"the default {_TYPE_NAME[wire]}")
    return ", ".join(texts)


def describe(admin: AdminClient, options: Options, out: Printer) -> None:
    # Kafka asks with ClientQuotaFilter.containsOnly: only entities of exactly these types.
    for entity, values in describe_client_quotas(admin, _components(options.entity), strict=True):
        entries = ", ".join(f"{k}={java_double(v)}" for k, v in values.items())
        out(f"Quota configs for {_entity_text(entity)} are {entries}")


def alter(admin: AdminClient, options: Options, out: Printer) -> None:
    entity = options.entity
    unknown = sorted(k for k in [*options.to_add, *options.to_delete] if k not in CLIENT_QUOTA_CONFIGS)
    if unknown:
        raise CommandError(f"Only quota configs can be added for '{entity.entity_type}' using --bootstrap-server. "
                           f"Unexpected config names: {','.join(unknown)}")
    ops: dict[str, float | None] = {}
    for key, value in options.to_add.items():
        try:
            ops[key] = float(value)
        except ValueError:
            raise CommandError(f"Cannot parse quota configuration value for {key}: {value}") from None
    old = describe_client_quotas(admin, _components(entity), strict=True)
    current = old[0][1] if old else {}
    invalid = [k for k in options.to_delete if k not in current]
    if invalid:
        raise CommandError(f"Invalid config(s): {','.join(invalid)}")
    for key in options.to_delete:
        ops[key] = None
    wire_entity = {
        _WIRE_TYPE[p.entity_type]: (None if p.name == DEFAULT_ENTITY else p.name) for p in _parts(entity)
    }
    alter_client_quotas(admin, wire_entity, ops)
    # Kafka names the first entity type and name given on the command line.
    head = options.first_entity or entity
    if head.name != DEFAULT_ENTITY:
        out(f"Completed updating config for {head.singular} {head.name}.")
    else:
        out(f"Completed updating default config for {head.entity_type} in the cluster.")
