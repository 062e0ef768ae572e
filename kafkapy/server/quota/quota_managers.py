"""The broker's client quotas (Kafka's QuotaManagers.fetch / .produce / .request) and where their
configuration comes from: every `/config/users/...` and `/config/clients/...` entity, read at
start-up and again for each entity a `/config/changes` notification names.

ZooKeeper reads here are blocking: they run on the dynamic config manager's (kazoo's) thread or
an executor, never on the loop; the managers get the whole new table each time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from kafkapy.server.quota.client_quota_manager import UNBOUNDED_STATIC, ClientQuotaManager, QuotaWindow
from kafkapy.server.quota.quota_entity import DEFAULT, QuotaEntity, QuotaType, entity_from_path, quota_values
from kafkapy.server.quota.quota_znodes import QuotaConfigSource, read_all_quotas, read_entity

log = logging.getLogger("kafkapy.server.ClientQuotaManager")


@dataclass(frozen=True, slots=True)
class QuotaSettings:
    window: QuotaWindow
    producer_default: float = UNBOUNDED_STATIC
    consumer_default: float = UNBOUNDED_STATIC


class ClientQuotas:
    """The produce, fetch and request quota managers and the quota table they share."""

    def __init__(self, settings: QuotaSettings) -> None:
        window = settings.window
        self.produce = ClientQuotaManager(QuotaType.PRODUCE, window, settings.producer_default)
        self.fetch = ClientQuotaManager(QuotaType.FETCH, window, settings.consumer_default)
        # Kafka's ClientRequestQuotaManager bounds a throttle to one window.
        self.request = ClientQuotaManager(
            QuotaType.REQUEST, window, max_throttle_ms=round(window.window_size_s * 1000)
        )
        self._quotas: dict[QuotaEntity, dict[str, float]] = {}
        self._lock = threading.Lock()  # start-up load and change notifications may overlap

    @property
    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return (self.produce, self.fetch, self.request)

    def quotas(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return self._quotas

    def load(self, zk: QuotaConfigSource) -> None:
        """Every entity from ZooKeeper (blocking: start-up, off the loop)."""
        quotas = read_all_quotas(zk)
        with self._lock:
            self._publish(quotas)
        if quotas:
            log.info("Loaded client quotas of %d entities", len(quotas))

    def update_entity(self, zk: QuotaConfigSource, path: str) -> None:
        """A change notification named `path` (`users/u`, `clients/c`, `users/u/clients/c`):
        read that entity again (blocking: kazoo's thread). Kafka's UserConfigHandler /
        ClientIdConfigHandler."""
        entity = entity_from_path(path)
        if entity is None:
            log.warning("Ignoring config change of unknown entity %s", path)
            return
        values = quota_values(read_entity(zk, entity))
        with self._lock:
            _log_changes(entity, self._quotas.get(entity, {}), values)
            quotas = dict(self._quotas)
            if values:
                quotas[entity] = values
            else:
                quotas.pop(entity, None)
            self._publish(quotas)

    def _publish(self, quotas: dict[QuotaEntity, dict[str, float]]) -> None:
        self._quotas = quotas
        for manager in self.managers:
            manager.update(quotas)


_QUOTA_NAMES = {
    QuotaType.PRODUCE.value: "Produce",
    QuotaType.FETCH.value: "Fetch",
    QuotaType.REQUEST.value: "Request",
}


def _log_changes(entity: QuotaEntity, old: Mapping[str, float], new: Mapping[str, float]) -> None:
    """Kafka's ClientQuotaManager.updateQuota lines."""
    user = (
        "" if entity.user is None else ("default user " if entity.user == DEFAULT else f"user {entity.user} ")
    )
    client = (
        ""
        if entity.client_id is None
        else ("default client-id" if entity.client_id == DEFAULT else f"client-id {entity.client_id}")
    )
    who = f"{user}{client}".strip()
    for key, name in _QUOTA_NAMES.items():
        if key in new and new[key] != old.get(key):
            log.info("Changing %s quota for %s to %s", name, who, new[key])
        elif key in old and key not in new:
            log.info("Removing %s quota for %s", name, who)
