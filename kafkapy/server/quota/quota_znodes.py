"""Client quota entities in ZooKeeper: `/config/users/<u>`, `/config/clients/<c>` and
`/config/users/<u>/clients/<c>` (names sanitized, `<default>` kept), Kafka's
`{"version":1,"config":{...}}` payload, and the `/config/changes` notification that tells every
broker (Kafka's AdminZkClient.changeUserOrUserClientIdConfig / changeClientIdConfig).
All blocking: callers run them off the loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kafkapy.server.quota.quota_entity import DEFAULT, QuotaEntity, entity_from_path, quota_values
from kafkapy.zk.config_znodes import ConfigType, sanitize


class QuotaConfigSource(Protocol):
    """The ZooKeeper reads the quotas need (KafkaZkClient has them)."""

    def get_children(self, path: str) -> list[str]: ...

    def get_entity_configs(self, entity_type: str, sanitized_name: str) -> dict[str, str]: ...


class QuotaConfigStore(QuotaConfigSource, Protocol):
    """... and the writes AlterClientQuotas and kafkapy-configs make."""

    def set_or_create_entity_configs(
        self, entity_type: str, sanitized_name: str, config: Mapping[str, str]
    ) -> None: ...

    def create_config_change_notification(self, sanitized_entity_path: str) -> str: ...


def entity_path(entity: QuotaEntity) -> str:
    """The sanitized path under /config of an entity: `users/u`, `clients/c`, `users/u/clients/c`."""

    def part(name: str) -> str:
        return name if name == DEFAULT else sanitize(name)

    if entity.user is not None and entity.client_id is not None:
        return f"{ConfigType.USER}/{part(entity.user)}/{ConfigType.CLIENT}/{part(entity.client_id)}"
    if entity.user is not None:
        return f"{ConfigType.USER}/{part(entity.user)}"
    return f"{ConfigType.CLIENT}/{part(str(entity.client_id))}"


def read_entity(zk: QuotaConfigSource, entity: QuotaEntity) -> dict[str, str]:
    """The entity's whole config znode (a user's may also hold SCRAM credentials)."""
    entity_type, _, name = entity_path(entity).partition("/")
    return zk.get_entity_configs(entity_type, name)


def read_all_quotas(zk: QuotaConfigSource) -> dict[QuotaEntity, dict[str, float]]:
    """Every configured quota entity, with the quota keys only."""
    paths = [f"clients/{c}" for c in zk.get_children("/config/clients")]
    for user in zk.get_children("/config/users"):
        paths.append(f"users/{user}")
        paths.extend(f"users/{user}/clients/{c}" for c in zk.get_children(f"/config/users/{user}/clients"))
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    for path in paths:
        entity = entity_from_path(path)
        if entity is None:
            continue
        values = quota_values(read_entity(zk, entity))
        if values:
            quotas[entity] = values
    return quotas


def write_entity(zk: QuotaConfigStore, entity: QuotaEntity, config: Mapping[str, str]) -> None:
    """Replace the entity's config znode, then announce it under /config/changes."""
    path = entity_path(entity)
    entity_type, _, name = path.partition("/")
    zk.set_or_create_entity_configs(entity_type, name, config)
    zk.create_config_change_notification(path)
