"""ClientQuotas following ZooKeeper with a fake store: every entity loaded at start-up (SCRAM
keys ignored), one entity re-read per change notification, Kafka's log lines, and the znode
paths AlterClientQuotas writes."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from kafkapy.server.quota.client_quota_manager import QuotaWindow
from kafkapy.server.quota.quota_entity import DEFAULT, QuotaEntity
from kafkapy.server.quota.quota_managers import ClientQuotas, QuotaSettings
from kafkapy.server.quota.quota_znodes import entity_path, write_entity


class FakeZk:
    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.notifications: list[str] = []

    def get_children(self, path: str) -> list[str]:
        prefix = path.removeprefix("/config/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.configs if p.startswith(prefix)})

    def get_entity_configs(self, entity_type: str, sanitized_name: str) -> dict[str, str]:
        return dict(self.configs.get(f"{entity_type}/{sanitized_name}", {}))

    def set_or_create_entity_configs(
        self, entity_type: str, sanitized_name: str, config: Mapping[str, str]
    ) -> None:
        self.configs[f"{entity_type}/{sanitized_name}"] = dict(config)

    def create_config_change_notification(self, sanitized_entity_path: str) -> str:
        self.notifications.append(sanitized_entity_path)
        return f"/config/changes/config_change_{len(self.notifications):010d}"


@pytest.mark.timeout(5)
def test_entities_are_loaded_then_followed_one_notification_at_a_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    zk = FakeZk()
    write_entity(zk, QuotaEntity("CN=bob", "app 1"), {"producer_byte_rate": "1024"})
    write_entity(zk, QuotaEntity("alice", None), {"SCRAM-SHA-256": "salt=x", "consumer_byte_rate": "2048"})
    write_entity(zk, QuotaEntity(None, DEFAULT), {"request_percentage": "25.0"})
    assert zk.notifications == ["users/CN%3Dbob/clients/app%201", "users/alice", "clients/<default>"]
    quotas = ClientQuotas(QuotaSettings(QuotaWindow(11, 1.0)))
    quotas.load(zk)
    assert quotas.quotas() == {
        QuotaEntity("CN=bob", "app 1"): {"producer_byte_rate": 1024.0},
        QuotaEntity("alice", None): {"consumer_byte_rate": 2048.0},
        QuotaEntity(None, DEFAULT): {"request_percentage": 25.0},
    }
    assert quotas.produce.enabled and quotas.fetch.enabled and quotas.request.enabled
    with caplog.at_level(logging.INFO, "kafkapy.server.ClientQuotaManager"):
        write_entity(zk, QuotaEntity("alice", None), {"SCRAM-SHA-256": "salt=x", "producer_byte_rate": "10"})
        quotas.update_entity(zk, zk.notifications[-1])
    assert quotas.quotas()[QuotaEntity("alice", None)] == {"producer_byte_rate": 10.0}
    assert [r.getMessage() for r in caplog.records] == [
        "Changing Produce quota for user alice to 10.0",
        "Removing Fetch quota for user alice",
    ]
    assert quotas.produce.quota("alice", "x") is not None and not quotas.fetch.enabled
    write_entity(zk, QuotaEntity(None, DEFAULT), {})
    quotas.update_entity(zk, "clients/<default>")
    assert QuotaEntity(None, DEFAULT) not in quotas.quotas() and not quotas.request.enabled


@pytest.mark.timeout(5)
def test_entity_paths_are_sanitized_except_default() -> None:
    assert entity_path(QuotaEntity(DEFAULT, DEFAULT)) == "users/<default>/clients/<default>"
    assert entity_path(QuotaEntity("a*b", None)) == "users/a%2Ab"
    assert entity_path(QuotaEntity(None, "c")) == "clients/c"
