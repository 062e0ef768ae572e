"""kafkapy-configs' pure rules: which entity the options name, Kafka 2.8's checkArgs, and the
--add-config / --delete-config syntax (ConfigCommand.parseConfigsToBeAdded)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from kafkapy.zk.config_znodes import ConfigType

DEFAULT_ENTITY = "<default>"  # Kafka's ConfigEntityName.Default
BROKER_LOGGERS = "broker-loggers"
ZK_ENTITY_TYPES = ConfigType.ALL  # topics, clients, users, brokers
BOOTSTRAP_ENTITY_TYPES = (*ConfigType.ALL, BROKER_LOGGERS)
# Kafka's DynamicConfig.Client / .User quota configs.
CLIENT_QUOTA_CONFIGS = frozenset({
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
})  # fmt: skip
# Kafka's ConfigCommand.BrokerConfigsUpdatableUsingZooKeeperWhileBrokerRunning.
ZK_UPDATABLE_WHILE_RUNNING = frozenset({
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
})  # fmt: skip
# A comma or '=' outside square brackets (Kafka's "(?=[^\]]*(?:\[|$))" lookahead).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


class CommandError(Exception):
    """Kafka's IllegalArgumentException / InvalidConfigurationException: only the message is
    printed (on stderr), and the command exits 1."""


def check_deletable(current: Collection[str], to_delete: Iterable[str]) -> None:
    """Kafka's ConfigCommand check before an alter: only keys the entity has set can be deleted
    (its InvalidConfigurationException, raised before any request: not a broker's answer)."""
    invalid = [k for k in to_delete if k not in current]
    if invalid:
        raise CommandError(f"Invalid config(s): {','.join(invalid)}")


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity: its type (`topics`, `brokers`, ...) and name; None for every entity of the
    type, DEFAULT_ENTITY for the default (--entity-default)."""

    entity_type: str
    name: str | None
    # A user's client (--entity-type users ... --entity-type clients ...): Kafka's ConfigEntity child.
    child: Entity | None = None

    def __str__(self) -> str:
        """Kafka's ConfigCommand.Entity / ConfigEntity.toString (the --zookeeper output)."""
        type_name = {"users": "user-principal", "clients": "client-id", "topics": "topic"}.get(
            self.entity_type, self.entity_type
        )
        if self.name is None:
            text = type_name
        elif self.name == DEFAULT_ENTITY:
            text = f"default {type_name}"
        else:
            text = f"{type_name} '{self.name}'"
        return text if self.child is None else f"{text}, {self.child}"

    @property
    def singular(self) -> str:
        """Kafka prints `entityType.dropRight(1)`: "topic", "broker", "client", "user"."""
        return self.entity_type[:-1]


@dataclass(frozen=True, slots=True)
class Options:
    """What the command line asked for."""

    action: str  # "alter" or "describe"
    entity: Entity
    use_zookeeper: bool
    to_add: dict[str, str]
    to_delete: list[str]
    describe_all: bool
    # The first --entity-type and its name as given (Kafka's "Completed updating config for ...").
    first_entity: Entity | None = None


def parse_configs_to_add(text: str | None) -> dict[str, str]:
    """`k=v,k2=[a,b]`: split on commas outside brackets, then on the first '=' outside brackets;
    brackets are dropped from values (Kafka's parseConfigsToBeAdded)."""
    if not text:
        return {}
    configs: dict[str, str] = {}
    for pair in re.split("," + _OUTSIDE_BRACKETS, text):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
        if len(parts) != 2:
            raise CommandError(
                'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'
            )
        configs[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    return configs


def parse_configs_to_delete(values: tuple[str, ...]) -> list[str]:
    """--delete-config takes comma-separated names and may be repeated."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def resolve_entity(
    entity_types: tuple[str, ...],
    entity_names: tuple[str, ...],
    entity_default: bool,
    *,
    topic: str | None = None,
    broker: str | None = None,
    broker_defaults: bool = False,
    client: str | None = None,
    user: str | None = None,
) -> tuple[list[str], list[str], bool]:
    """--entity-type/--entity-name plus the shorthands (--topic t is --entity-type topics
    --entity-name t) as lists of types and names, and whether a default was asked for."""
    types, names = list(entity_types), list(entity_names)
    for entity_type, name in (("topics", topic), ("brokers", broker), ("clients", client), ("users", user)):
        if name is not None:
            types.append(entity_type)
            names.append(name)
    if broker_defaults:
        types.append("brokers")
        entity_default = True
    return types, names, entity_default


def check_args(
    alter: bool,
    describe: bool,
    bootstrap_server: str | None,
    zookeeper: str | None,
    types: list[str],
    names: list[str],
    entity_default: bool,
    add_config: str | None,
    delete_config: tuple[str, ...],
    describe_all: bool,
    *,
    entity_options: bool = False,
    entity_flags: bool = False,
) -> Options:
    """Kafka 2.8's ConfigCommandOptions.checkArgs, in its order and words, for one entity or a
    user and a client id together (quota_options.py). `entity_options`: --entity-type/-name/-default were given;
    `entity_flags`: --topic/--client/--user/--broker/--broker-defaults were."""
    if int(alter) + int(describe) != 1:
        raise CommandError("Command must include exactly one action: --describe, --alter")
    if describe and (add_config is not None or delete_config):
        given = "add-config" if add_config is not None else "delete-config"
        raise CommandError(f'Option "[describe]" can\'t be used with option "[{given}]"')
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise CommandError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    allowed, connect = (
        (BOOTSTRAP_ENTITY_TYPES, "--bootstrap-server")
        if bootstrap_server
        else (ZK_ENTITY_TYPES, "--zookeeper")
    )
    for entity_type in types:
        if entity_type not in allowed:
            raise CommandError(
                f"Invalid entity type {entity_type}, the entity type must be one of {','.join(allowed)} "
                f"with the {connect} argument"
            )
    if not types:
        raise CommandError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise CommandError("Only 'users' and 'clients' entity types may be specified together")
    if entity_options and entity_flags:
        raise CommandError(
            "--entity-{type,name,default} should not be used in conjunction with specific entity flags"
        )
    if not bootstrap_server and not zookeeper:
        raise CommandError(
            "One of the required --bootstrap-server or --zookeeper arguments must be specified"
        )
    if bootstrap_server and zookeeper:
        raise CommandError("Only one of --bootstrap-server or --zookeeper must be specified")
    if describe_all and zookeeper:
        raise CommandError("--bootstrap-server must be specified for --all")
    if names and ("brokers" in types or BROKER_LOGGERS in types):
        for broker_id in names:
            if not re.fullmatch(r"[+-]?\d+", broker_id):
                raise CommandError(
                    f"The entity name for {types[0]} must be a valid integer broker id, but it is: {broker_id}"
                )
    if describe and BROKER_LOGGERS in types and not names:
        raise CommandError(f"an entity name must be specified with --describe of {','.join(types)}")
    if alter:
        if any(t in types for t in ("users", "clients", "brokers")):
            if not names and not entity_default:
                raise CommandError(
                    "an entity-name or default entity must be specified with --alter of users, "
                    "clients, brokers or ips"
                )
        elif not names:
            raise CommandError(f"an entity name must be specified with --alter of {','.join(types)}")
        if add_config is None and not delete_config:
            raise CommandError(
                "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"
            )
    if types[0] in ("users", "clients"):  # one user, one client id, or a user's client id
        from kafkapy.tools.configs_cmd.quota_options import quota_options

        return quota_options(
            alter, zookeeper, types, names, entity_default, add_config, delete_config, describe_all
        )
    # What kafkapy does not do (Kafka would go on).
    if len(types) > 1 or len(names) > 1 or (names and entity_default):
        raise CommandError(
            "kafkapy-configs takes one entity: one --entity-type with one --entity-name or --entity-default"
        )
    entity_type = types[0]
    if entity_type == BROKER_LOGGERS:
        raise CommandError("Entity type broker-loggers is not supported by kafkapy")
    name = names[0] if names else (DEFAULT_ENTITY if entity_default else None)
    if entity_default and entity_type == "topics":
        raise CommandError("--entity-default must not be specified with --entity-type topics")
    return Options(
        "alter" if alter else "describe", Entity(entity_type, name), bool(zookeeper),
        parse_configs_to_add(add_config), parse_configs_to_delete(delete_config), describe_all,
    )  # fmt: skip


def scala_set(names: list[str] | set[str]) -> str:
    return f"Set({', '.join(sorted(names))})"
