"""kafkapy-configs for users and clients through --bootstrap-server (Kafka 2.6+'s ConfigCommand):
DescribeClientQuotas for --describe, AlterClientQuotas for --alter, with Kafka's lines:

    Quota configs for user-principal 'u', client-id 'c' are producer_byte_rate=1048576.0
    Completed updating config for user u.
"""

from __future__ import annotations

import re
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
from kafkapy.client.scram_credentials import (
    Upsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from kafkapy.tools.configs_cmd.options import (
    CLIENT_QUOTA_CONFIGS,
    DEFAULT_ENTITY,
    CommandError,
    Entity,
    Options,
    check_deletable,
    scala_set,
)

Printer = Callable[[str], None]
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS = DEFAULT_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations and the tool's default
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)")
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
            texts.append(
                f"{_TYPE_NAME[wire]} '{name}'" if name is not None else f"the default {_TYPE_NAME[wire]}"
            )
    return ", ".join(texts)


def describe(admin: AdminClient, options: Options, out: Printer) -> None:
    # Kafka asks with ClientQuotaFilter.containsOnly: only entities of exactly these types.
    entity = options.entity
    for described, values in describe_client_quotas(admin, _components(entity), strict=True):
        entries = ", ".join(f"{k}={java_double(v)}" for k, v in values.items())
        out(f"Quota configs for {_entity_text(described)} are {entries}")
    # Then the users' SCRAM credentials, unless a client id or a default entity is described.
    if entity.entity_type == "users" and entity.child is None and entity.name != DEFAULT_ENTITY:
        users = None if entity.name is None else [entity.name]
        for user in describe_user_scram_credentials(admin, users):
            if user.error is not None:
                out(
                    f"Error retrieving SCRAM credential configs for user-principal '{user.user}': "
                    f"{type(user.error).__name__}: {user.error.message}"
                )
                continue
            text = ", ".join(f"{m}=iterations={n}" for m, n in user.credentials)
            out(f"SCRAM credential configs for user-principal '{user.user}' are {text}")


def _check_names(options: Options) -> tuple[dict[str, str], list[str], dict[str, str], list[str]]:
    """Kafka's ConfigCommand.alterConfig checks for users and clients: (quota configs to add,
    to delete, SCRAM credentials to add, to delete)."""
    entity = options.entity
    to_add, to_delete = options.to_add, options.to_delete
    scram_add = {k: v for k, v in to_add.items() if k in SCRAM_MECHANISMS}
    scram_delete = [k for k in to_delete if k in SCRAM_MECHANISMS]
    unknown_add = [k for k in to_add if k not in SCRAM_MECHANISMS and k not in CLIENT_QUOTA_CONFIGS]
    unknown_delete = [k for k in to_delete if k not in SCRAM_MECHANISMS and k not in CLIENT_QUOTA_CONFIGS]
    first = options.first_entity or entity
    if first.entity_type == "clients" or entity.child is not None:
        if unknown_add or scram_add:
            raise CommandError(
                "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
                f"config names: {scala_set([*unknown_add, *scram_add])}"
            )
        if unknown_delete or scram_delete:
            raise CommandError(
                "Only quota configs can be deleted for 'clients' using --bootstrap-server. Unexpected "
                f"config names: {scala_set([*unknown_delete, *scram_delete])}"
            )
    else:
        if unknown_add:
            raise CommandError(
                "Only quota and SCRAM credential configs can be added for 'users' using "
                f"--bootstrap-server. Unexpected config names: {scala_set(unknown_add)}"
            )
        if unknown_delete:
            raise CommandError(
                "Only quota and SCRAM credential configs can be deleted for 'users' using "
                f"--bootstrap-server. Unexpected config names: {scala_set(unknown_delete)}"
            )
        if scram_add or scram_delete:
            if entity.name == DEFAULT_ENTITY:
                raise CommandError(
                    "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                    "Credentials using --bootstrap-server."
                )
            if len(scram_add) != len(to_add) or len(scram_delete) != len(to_delete):
                raise CommandError(
                    "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                    "using --bootstrap-server."
                )
    quota_add = {k: v for k, v in to_add.items() if k not in scram_add}
    quota_delete = [k for k in to_delete if k not in scram_delete]
    return quota_add, quota_delete, scram_add, scram_delete


def alter(admin: AdminClient, options: Options, out: Printer) -> None:
    entity = options.entity
    quota_add, quota_delete, scram_add, scram_delete = _check_names(options)
    if scram_add or scram_delete:
        _alter_scram(admin, str(entity.name), scram_add, scram_delete)
    else:
        _alter_quotas(admin, entity, quota_add, quota_delete)
    # Kafka names the first entity type and name given on the command line.
    head = options.first_entity or entity
    if head.name != DEFAULT_ENTITY:
        out(f"Completed updating config for {head.singular} {head.name}.")
    else:
        out(f"Completed updating default config for {head.entity_type} in the cluster.")


def _alter_quotas(admin: AdminClient, entity: Entity, to_add: dict[str, str], to_delete: list[str]) -> None:
    ops: dict[str, float | None] = {}
    for key, value in to_add.items():
        try:
            ops[key] = float(value)
        except ValueError:
            raise CommandError(f"Cannot parse quota configuration value for {key}: {value}") from None
    old = describe_client_quotas(admin, _components(entity), strict=True)
    current = old[0][1] if old else {}
    check_deletable(current, to_delete)
    for key in to_delete:
        ops[key] = None
    wire_entity = {
        _WIRE_TYPE[p.entity_type]: (None if p.name == DEFAULT_ENTITY else p.name) for p in _parts(entity)
    }
    alter_client_quotas(admin, wire_entity, ops)


def _alter_scram(admin: AdminClient, user: str, to_add: dict[str, str], to_delete: list[str]) -> None:
    """Kafka's alterUserScramCredentials: `[iterations=N,]password=P` per mechanism."""
    upsertions = []
    for mechanism, text in to_add.items():
        match = _CREDENTIAL.fullmatch(text)
        if match is None:
            raise CommandError(f"Invalid credential property {mechanism}={text}")
        iterations = int(match.group(1)) if match.group(1) not in (None, "", "-1") else DEFAULT_ITERATIONS
        if iterations < MIN_ITERATIONS:
            raise CommandError(
                f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}"
            )
        upsertions.append(Upsertion(user, mechanism, iterations, match.group(2)))
    alter_user_scram_credentials(admin, upsertions, [(user, m) for m in to_delete])
