"""Handler work stays proportional to the request: checked on the handlers' pure parts with
small fakes (the broker-level versions are in tests/integration/test_request_bounds.py)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from kafkapy.server.apis import configs
from kafkapy.server.apis.broker_configs import APPEND, SUBTRACT, apply_ops
from kafkapy.server.network.request_channel import Request


def _apis(stored: dict[str, str]) -> Any:
    return SimpleNamespace(
        zk=SimpleNamespace(get_entity_configs=lambda kind, name: stored),
        metadata_cache=SimpleNamespace(contains_topic=lambda topic: True),
        authorizer=None,
    )


@pytest.mark.timeout(30)
def test_incremental_append_of_a_huge_list_value_is_linear() -> None:
    """APPEND of 200,000 distinct items to a list config: list membership tests made this
    quadratic (minutes of CPU holding the GIL); validate_only does not skip it."""
    value = ",".join(f"{i}:0" for i in range(200_000))
    ops = [
        SimpleNamespace(config_operation=APPEND, name="leader.replication.throttled.replicas", value=value)
    ]
    started = time.monotonic()
    out = apply_ops({}, ops, lambda name: "", lambda name: True)
    assert time.monotonic() - started < 5
    assert out["leader.replication.throttled.replicas"] == value


@pytest.mark.timeout(10)
def test_incremental_subtract_keeps_order_and_removes_all_named() -> None:
    ops = [SimpleNamespace(config_operation=SUBTRACT, name="cleanup.policy", value="delete")]
    out = apply_ops({"cleanup.policy": "compact,delete"}, ops, lambda name: "", lambda name: True)
    assert out == {"cleanup.policy": "compact"}


@pytest.mark.timeout(10)
def test_alter_configs_alters_a_repeated_resource_once() -> None:
    calls: list[str] = []
    resource = SimpleNamespace(resource_type=configs.TOPIC, resource_name="t", configs=[])
    request = Request(None, memoryview(b""), 0, "c", "127.0.0.1", "PLAINTEXT")
    response = asyncio.run(
        configs._alter_each(_apis({}), request, [resource] * 1000, lambda r: calls.append(r.resource_name))
    )
    assert calls == ["t"] and len(response) == 1
