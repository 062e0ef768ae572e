"""Dynamic broker configs: Kafka's layering (per broker > cluster default > server.properties >
default), its refusal of configs that cannot change at run time, and listeners told what changed."""

from __future__ import annotations

import pytest

from kafkapy.common.config_def import ConfigException
from kafkapy.server.config import KafkaConfig
from kafkapy.server.dynamic_broker_config import (
    DEFAULT_ENTITY,
    DynamicBrokerConfig,
    validate_dynamic_configs,
)


class FakeZk:
    def __init__(self, configs: dict[str, dict[str, str]]) -> None:
        self.configs = configs

    def get_entity_configs(self, entity_type: str, name: str) -> dict[str, str]:
        assert entity_type == "brokers"
        return dict(self.configs.get(name, {}))


def make(static: dict[str, str] | None = None) -> tuple[KafkaConfig, DynamicBrokerConfig]:
    config = KafkaConfig({"zookeeper.connect": "localhost:2181", "broker.id": "1", **(static or {})})
    return config, DynamicBrokerConfig(config, 1)


def test_per_broker_overrides_default_overrides_static() -> None:
    config, dynamic = make({"log.retention.ms": "100000", "log.segment.bytes": "2000000"})
    zk = FakeZk(
        {
            DEFAULT_ENTITY: {"log.retention.ms": "5000", "log.segment.bytes": "3000000"},
            "1": {"log.retention.ms": "7000"},
        }
    )
    dynamic.initialize(zk)
    assert config.get("log.retention.ms") == 7000
    assert config.get("log.segment.bytes") == 3000000
    assert config.log_config_props()["retention.ms"] == "7000"
    assert config.originals["log.retention.ms"] == "100000"  # server.properties is unchanged
    zk.configs["1"] = {}
    dynamic.reload(zk, "1")
    assert config.get("log.retention.ms") == 5000
    zk.configs[DEFAULT_ENTITY] = {}
    dynamic.reload(zk, DEFAULT_ENTITY)
    assert config.get("log.retention.ms") == 100000


def test_another_brokers_layer_is_ignored() -> None:
    config, dynamic = make()
    dynamic.reload(FakeZk({"2": {"log.retention.ms": "1"}}), "2")
    assert config.get("log.retention.ms") is None


def test_listeners_learn_which_values_changed() -> None:
    _, dynamic = make()
    seen: list[frozenset[str]] = []
    dynamic.add_listener(seen.append)
    dynamic.update_broker({"leader.replication.throttled.rate": "1000", "num.io.threads": "8"})
    assert seen == [frozenset({"leader.replication.throttled.rate"})]  # 8 is already the default
    assert dynamic.quota_rate("leader.replication.throttled.rate") == 1000
    assert dynamic.quota_rate("follower.replication.throttled.rate") == 2**63 - 1


def test_unusable_values_in_zookeeper_are_skipped() -> None:
    config, dynamic = make()
    dynamic.update_default({"log.retention.ms": "soon", "broker.id": "7", "log.segment.bytes": "2000000"})
    assert config.get("log.segment.bytes") == 2000000
    assert config.get("broker.id") == 1 and config.get("log.retention.ms") is None


def test_configs_that_cannot_change_at_run_time_are_refused() -> None:
    with pytest.raises(
        ConfigException, match=r"^Cannot update these configs dynamically: Set\(broker.id, log.dirs\)$"
    ):
        validate_dynamic_configs({"broker.id": "2", "log.dirs": "/x", "log.retention.ms": "1"})


@pytest.mark.parametrize(
    "props",
    [
        {"log.retention.ms": "soon"},
        {"leader.replication.throttled.rate": "-1"},
        {"log.cleanup.policy": "forever"},
    ],
)
def test_values_are_checked_against_their_type(props: dict[str, str]) -> None:
    with pytest.raises(ConfigException):
        validate_dynamic_configs(props)
