"""kafkapy-configs through --zookeeper (Kafka 2.8's alterConfigWithZk / describeConfigWithZk):
the tool reads and writes /config/<entity-type>/<name> and announces each change with a
/config/changes/config_change_ notification, as AdminZkClient.changeConfigs does; brokers
apply it when they see the notification."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafkapy.protocol.errors import InvalidConfigurationException
from kafkapy.server.config_def import ConfigException
from kafkapy.server.dynamic_broker_config import validate_dynamic_configs
from kafkapy.server.zk.admin_zk_client import AdminZkClient
from kafkapy.server.zk.config_znodes import desanitize
from kafkapy.server.zk.kafka_zk_client import KafkaZkClient
from kafkapy.tools.configs_cmd.options import (
    CLIENT_QUOTA_CONFIGS,
    DEFAULT_ENTITY,
    ZK_UPDATABLE_WHILE_RUNNING,
    CommandError,
    Entity,
    Options,
    scala_set,
)

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
        unknown = sorted(set(to_add) - CLIENT_QUOTA_CONFIGS)
        if unknown:
            raise CommandError(f"requirement failed: Unknown Dynamic Configuration: {scala_set(unknown)}.")
        for name, value in to_add.items():
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
                raise CommandError(f"requirement failed: {message} when broker {entity.name} is running. "
                                   f"{_BOOTSTRAP_INFO}")
        elif zk.get_all_brokers_in_cluster():
            raise CommandError(f"requirement failed: {message} for default cluster if any broker is running. "
                               f"{_BOOTSTRAP_INFO}")
    try:
        validate_dynamic_configs(to_add)
    except (ConfigException, ValueError) as e:
        raise CommandError(str(e)) from None


def alter(zk: KafkaZkClient, options: Options, out: Printer) -> None:
    entity = options.entity
    name = str(entity.name)
    _validate(zk, entity, options.to_add)
    admin = AdminZkClient(zk)
    configs = admin.fetch_entity_config(entity.entity_type, name)
    invalid = [k for k in options.to_delete if k not in configs]
    if invalid:
        raise InvalidConfigurationException(f"Invalid config(s): {','.join(invalid)}")
    configs.update(options.to_add)
    for k in options.to_delete:
        configs.pop(k, None)
    admin.change_entity_config(entity.entity_type, name, configs)
    out(f"Completed updating config for entity: {entity}.")


def describe(zk: KafkaZkClient, options: Options, out: Printer) -> None:
    entity = options.entity
    if entity.name is not None:
        entities = [entity]
    else:
        children = sorted(zk.get_children(f"/config/{entity.entity_type}") or [])
        entities = [Entity(entity.entity_type, _display(entity.entity_type, c)) for c in children]
    admin = AdminZkClient(zk)
    for e in entities:
        configs = admin.fetch_entity_config(e.entity_type, str(e.name))
        out(f"Configs for {e} are {','.join(f'{k}={v}' for k, v in configs.items())}")


def _display(entity_type: str, child: str) -> str:
    return desanitize(child) if entity_type in ("clients", "users") and child != DEFAULT_ENTITY else child
