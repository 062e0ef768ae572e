"""Handler work stays proportional to the request: checked on the handlers' pure parts with
small fakes (the broker-level versions are in tests/integration/test_request_bounds.py)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from kafkapy.protocol.errors import InvalidConfigurationException
from kafkapy.server.apis import configs


def _apis(stored: dict[str, str]) -> Any:
    return SimpleNamespace(
        zk=SimpleNamespace(get_entity_configs=lambda kind, name: stored),
        metadata_cache=SimpleNamespace(contains_topic=lambda topic: True),
    )


@pytest.mark.timeout(30)
def test_incremental_append_of_a_huge_list_value_is_linear() -> None:
    """APPEND of 200,000 distinct items to a list config: list membership tests made this
    quadratic (minutes of CPU holding the GIL); validate_only does not skip it."""
    value = ",".join(f"{i}:0" for i in range(200_000))
    ops = [
        SimpleNamespace(
            config_operation=configs.APPEND, name="leader.replication.throttled.replicas", value=value
        )
    ]
    started = time.monotonic()
    try:
        configs._incremental(_apis({}), "t", ops, validate_only=True)
    except InvalidConfigurationException:
        pass  # whether the value validates is not the point: the time is
    assert time.monotonic() - started < 5


@pytest.mark.timeout(10)
def test_incremental_subtract_keeps_order_and_removes_all_named(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(configs, "_alter_topic", lambda apis, topic, new, validate_only: seen.update(new))
    ops = [SimpleNamespace(config_operation=configs.SUBTRACT, name="cleanup.policy", value="delete")]
    configs._incremental(_apis({"cleanup.policy": "compact,delete"}), "t", ops, validate_only=True)
    assert seen == {"cleanup.policy": "compact"}


@pytest.mark.timeout(10)
def test_alter_configs_alters_a_repeated_resource_once() -> None:
    calls: list[str] = []
    resource = SimpleNamespace(resource_type=configs.TOPIC, resource_name="t", configs=[])
    body = SimpleNamespace(resources=[resource] * 1000)
    response = asyncio.run(configs._alter_each(_apis({}), body, lambda r: calls.append(r.resource_name)))
    assert calls == ["t"] and len(response["responses"]) == 1
