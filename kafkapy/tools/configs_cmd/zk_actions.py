"""kafkapy-configs through --zookeeper (Kafka 2.8's alterConfigWithZk / describeConfigWithZk):
the tool reads and writes /config/<entity-type>/<name> and announces each change with a
/config/changes/config_change_ notification, as AdminZkClient.changeConfigs does; brokers
apply it when they see the notification."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafkapy.common.config_def import ConfigException
from kafkapy.server.dynamic_broker_config import validate_dynamic_configs
from kafkapy.server.quota.quota_entity import QuotaEntity
from kafkapy.server.quota.quota_znodes import read_entity, write_entity
from kafkapy.tools.configs_cmd.options import (
    CLIENT_QUOTA_CONFIGS,
    DEFAULT_ENTITY,
    ZK_UPDATABLE_WHILE_RUNNING,
    CommandError,
    Entity,
    Options,
    check_deletable,
    scala_set,
)
from kafkapy.tools.configs_cmd.quota_actions import SCRAM_MECHANISMS
from kafkapy.zk.admin_zk_client import AdminZkClient
from kafkapy.zk.config_znodes import desanitize, sanitize
from kafkapy.zk.kafka_zk_client import KafkaZkClient

Printer = Callable[[str], None]
_BOOTSTRAP_INFO = (
    "Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers are started "
    "to enable encrypted password configs to be stored in ZooKeeper."
)


def _validate(zk: KafkaZkClient, entity: Entity, to_add: Mapping[str, str]) -> None:
    """What AdminZkClient.changeConfigs and ConfigCommand check before writing."""
    if entity.entity_type == "topics":
        from kafkapy.server.log.log_config import LogConfig

        if not zk.topic_exists(str(entity.name)):
            raise CommandError(f"Topic '{entity.name}' does not exist.")
        try:
            LogConfig.from_props(to_add)
        except ConfigException as e:
            raise CommandError(str(e)) from None
    elif entity.entity_type in ("clients", "users"):
        # A user (not a user's client id) may also hold SCRAM credentials (Kafka's DynamicConfig.User).
        scram = SCRAM_MECHANISMS if entity.entity_type == "users" and entity.child is None else ()
        unknown = sorted(set(to_add) - CLIENT_QUOTA_CONFIGS - set(scram))
        if unknown:
            raise CommandError(f"requirement failed: Unknown Dynamic Configuration: {scala_set(unknown)}.")
        for name, value in to_add.items():
            if name in scram:
                continue
            try:
                float(value)
            except ValueError:
                raise CommandError(f"Invalid value {value} for configuration {name}: Not a number") from None
    else:
        _validate_broker(zk, entity, to_add)


def _validate_broker(zk: KafkaZkClient, entity: Entity, to_add: Mapping[str, str]) -> None:
    """Replication throttle rates may change through ZooKeeper at any time; other dynamic broker
    configs only while the broker (any broker, for the cluster default) is down."""
    others = sorted(set(to_add) - ZK_UPDATABLE_WHILE_RUNNING)
    if others:
        message = f"--bootstrap-server option must be specified to update broker configs {scala_set(others)}."
        if entity.name != DEFAULT_ENTITY:
            if zk.get_broker(int(str(entity.name))) is not None:
                raise CommandError(
                    f"requirement failed: {message} when broker {entity.name} is running. {_BOOTSTRAP_INFO}"
                )
        elif zk.get_all_brokers_in_cluster():
            raise CommandError(
                f"requirement failed: {message} for default cluster if any broker is running. "
                f"{_BOOTSTRAP_INFO}"
            )
    try:
        validate_dynamic_configs(to_add)
    except (ConfigException, ValueError) as e:
        raise CommandError(str(e)) from None


def quota_entity(entity: Entity) -> QuotaEntity:
    """A users/clients entity (with its child client id) as the quota znodes name it."""
    parts = {entity.entity_type: entity.name}
    if entity.child is not None:
        parts[entity.child.entity_type] = entity.child.name
    return QuotaEntity(parts.get("users"), parts.get("clients"))


def _fetch(zk: KafkaZkClient, entity: Entity) -> dict[str, str]:
    if entity.entity_type in ("users", "clients"):
        return read_entity(zk, quota_entity(entity))
    return AdminZkClient(zk).fetch_entity_config(entity.entity_type, str(entity.name))


def _stored(to_add: Mapping[str, str]) -> dict[str, str]:
    """What the znode holds: a SCRAM password becomes Kafka's salted credential string."""
    from kafkapy.server.security.scram import ScramError, credential_config, parse_scram_config_value

    stored = {}
    for name, value in to_add.items():
        if name in SCRAM_MECHANISMS:
            try:
                password, iterations = parse_scram_config_value(value)
                stored.update(credential_config(name, password, iterations))
            except (ValueError, ScramError) as e:
                raise CommandError(str(e)) from None
        else:
            stored[name] = value
    return stored


def alter(zk: KafkaZkClient, options: Options, out: Printer) -> None:
    entity = options.entity
    name = str(entity.name)
    _validate(zk, entity, options.to_add)
    admin = AdminZkClient(zk)
    configs = _fetch(zk, entity)
    check_deletable(configs, options.to_delete)
    configs.update(_stored(options.to_add))
    for k in options.to_delete:
        configs.pop(k, None)
    if entity.entity_type in ("users", "clients"):
        write_entity(zk, quota_entity(entity), configs)
    else:
        admin.change_entity_config(entity.entity_type, name, configs)
    out(f"Completed updating config for entity: {entity}.")


def _all_entities(zk: KafkaZkClient, entity: Entity) -> list[Entity]:
    """Kafka's ConfigEntity.getAllEntities: names left out are every name ZooKeeper has."""
    if entity.name is not None:
        roots = [entity]
    else:
        children = sorted(zk.get_children(f"/config/{entity.entity_type}") or [])
        roots = [Entity(entity.entity_type, _display(entity.entity_type, c)) for c in children]
    child = entity.child
    if child is None:
        return roots
    if child.name is not None:
        return [Entity(r.entity_type, r.name, child) for r in roots]
    out = []
    for r in roots:
        user = str(r.name) if r.name == DEFAULT_ENTITY else sanitize(str(r.name))
        for c in sorted(zk.get_children(f"/config/users/{user}/clients") or []):
            out.append(Entity(r.entity_type, r.name, Entity("clients", _display("clients", c))))
    return out


def describe(zk: KafkaZkClient, options: Options, out: Printer) -> None:
    for e in _all_entities(zk, options.entity):
        configs = _fetch(zk, e)
        out(f"Configs for {e} are {','.join(f'{k}={v}' for k, v in configs.items())}")


def _display(entity_type: str, child: str) -> str:
    return desanitize(child) if entity_type in ("clients", "users") and child != DEFAULT_ENTITY else child
