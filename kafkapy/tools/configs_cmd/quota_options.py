"""kafkapy-configs' quota entities: a user, a client id, or a user's client id (Kafka 2.8's
parseQuotaEntity), with names paired to their --entity-type options in command-line order."""

from __future__ import annotations

from kafkapy.tools.configs_cmd.options import (
    DEFAULT_ENTITY,
    CommandError,
    Entity,
    Options,
    parse_configs_to_add,
    parse_configs_to_delete,
)

# The raw command line (set by kafkapy.tools.configs.main): click keeps --entity-name and
# --entity-default apart, Kafka pairs them with the entity types in the order they were given.
COMMAND_LINE: list[str] = []


def name_order(args: list[str]) -> list[bool] | None:
    """Where --entity-name (True) and --entity-default (False) stood; None without a command line."""
    if not args:
        return None
    order: list[bool] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--entity-name":
            order.append(True)
            skip = True
        elif arg.startswith("--entity-name="):
            order.append(True)
        elif arg == "--entity-default":
            order.append(False)
    return order


def ordered_names(names: list[str], entity_default: bool, order: list[bool] | None = None) -> list[str]:
    """The entity names in command-line order, DEFAULT_ENTITY where --entity-default stood.
    `order`: True for each --entity-name, False for --entity-default; without it the default
    comes last."""
    if order is None or order.count(True) != len(names):
        return [*names, DEFAULT_ENTITY] if entity_default else list(names)
    given = iter(names)
    return [next(given) if is_name else DEFAULT_ENTITY for is_name in order]


def quota_entity(types: list[str], names: list[str], alter: bool) -> Entity:
    """A user, a client id, or a user's client id (users first, as Kafka's parseQuotaEntity)."""
    if alter and len(types) != len(names):
        raise CommandError(
            "--entity-name or --entity-default must be specified with each --entity-type for --alter"
        )
    if len(names) > len(types):
        raise CommandError("More entity names specified than entity types")
    named = list(zip(types, [*names, *([None] * (len(types) - len(names)))], strict=True))
    if len(named) == 2 and named[0][0] == "clients":
        named.reverse()
    root = Entity(named[0][0], named[0][1])
    if len(named) == 2:
        return Entity(root.entity_type, root.name, Entity(named[1][0], named[1][1]))
    return root


def quota_options(
    alter: bool,
    zookeeper: str | None,
    types: list[str],
    names: list[str],
    entity_default: bool,
    add_config: str | None,
    delete_config: tuple[str, ...],
    describe_all: bool,
) -> Options:
    """The rest of checkArgs for users and clients (what the generic part has not checked)."""
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise CommandError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise CommandError("Only 'users' and 'clients' entity types may be specified together")
    names = ordered_names(names, entity_default, name_order(COMMAND_LINE))
    if alter and not names:
        raise CommandError(
            "an entity-name or default entity must be specified with --alter of users, clients, "
            "brokers or ips"
        )
    if alter and add_config is None and not delete_config:
        raise CommandError(
            "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"
        )
    return Options(
        "alter" if alter else "describe", quota_entity(types, names, alter), bool(zookeeper),
        parse_configs_to_add(add_config), parse_configs_to_delete(delete_config), describe_all,
        Entity(types[0], names[0] if names else None),
    )  # fmt: skip
