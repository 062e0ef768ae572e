"""Client quota arithmetic (Kafka's ClientQuotaManager, QuotaUtils, DefaultQuotaCallback) on a
fake clock: KIP-55's precedence, the throttle-time formula, the burst a quiet client may send,
fetch sizes bounded by the window, request-quota caps, live config swaps."""

from __future__ import annotations

import pytest

from kafkapy.server.quota.client_quota_manager import ClientQuotaManager, QuotaWindow, throttle_time_ms
from kafkapy.server.quota.quota_entity import (
    DEFAULT,
    QuotaEntity,
    QuotaMatch,
    QuotaType,
    entity_from_path,
    quota_values,
    resolve,
)
from kafkapy.server.quota.throttling import client_throttles

KEY = "producer_byte_rate"
MB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def manager(
    clock: Clock, quotas: dict[QuotaEntity, dict[str, float]], **kwargs: object
) -> ClientQuotaManager:
    m = ClientQuotaManager(QuotaType.PRODUCE, QuotaWindow(11, 1.0), clock=clock, **kwargs)  # type: ignore[arg-type]
    m.update(quotas)
    return m


@pytest.mark.timeout(5)
def test_throttle_time_is_the_time_the_rate_needs_to_fall_back_to_the_bound() -> None:
    assert throttle_time_ms(100.0, 100.0, 10.0) == 0
    assert throttle_time_ms(90.0, 100.0, 10.0) == 0
    # 10% over a 10 s window: 1 s.
    assert throttle_time_ms(110.0, 100.0, 10.0) == 1000
    assert throttle_time_ms(300.0, 100.0, 11.0) == 22000


@pytest.mark.timeout(5)
def test_kip55_precedence_most_specific_entity_wins_and_names_who_shares_the_rate() -> None:
    quotas = {
        QuotaEntity("u", "c"): {KEY: 1.0},
        QuotaEntity("u", DEFAULT): {KEY: 2.0},
        QuotaEntity("u", None): {KEY: 3.0},
        QuotaEntity(DEFAULT, "c"): {KEY: 4.0},
        QuotaEntity(DEFAULT, DEFAULT): {KEY: 5.0},
        QuotaEntity(DEFAULT, None): {KEY: 6.0},
        QuotaEntity(None, "c"): {KEY: 7.0},
        QuotaEntity(None, DEFAULT): {KEY: 8.0},
    }
    expected = [
        (QuotaEntity("u", "c"), QuotaMatch(1.0, "u", "c")),
        (QuotaEntity("u", DEFAULT), QuotaMatch(2.0, "u", "c")),
        (QuotaEntity("u", None), QuotaMatch(3.0, "u", "")),
        (QuotaEntity(DEFAULT, "c"), QuotaMatch(4.0, "u", "c")),
        (QuotaEntity(DEFAULT, DEFAULT), QuotaMatch(5.0, "u", "c")),
        (QuotaEntity(DEFAULT, None), QuotaMatch(6.0, "u", "")),
        (QuotaEntity(None, "c"), QuotaMatch(7.0, "", "c")),
        (QuotaEntity(None, DEFAULT), QuotaMatch(8.0, "", "c")),
    ]
    for entity, match in expected:
        assert resolve(quotas, KEY, "u", "c") == match
        del quotas[entity]
    assert resolve(quotas, KEY, "u", "c") is None
    assert resolve(quotas, KEY, "u", "c", static_client_default=9.0) == QuotaMatch(9.0, "", "c")


@pytest.mark.timeout(5)
def test_a_quota_of_another_type_does_not_apply() -> None:
    quotas = {QuotaEntity("u", None): {"consumer_byte_rate": 10.0}, QuotaEntity(None, "c"): {KEY: 20.0}}
    assert resolve(quotas, KEY, "u", "c") == QuotaMatch(20.0, "", "c")


@pytest.mark.timeout(5)
def test_entity_paths_and_values_as_zookeeper_holds_them() -> None:
    assert entity_from_path("users/alice") == QuotaEntity("alice", None)
    assert entity_from_path("clients/%3Cdefault%3E") == QuotaEntity(None, "<default>")
    assert entity_from_path("clients/<default>") == QuotaEntity(None, DEFAULT)
    assert entity_from_path("users/CN%3Dbob/clients/app-1") == QuotaEntity("CN=bob", "app-1")
    assert entity_from_path("topics/t") is None
    assert entity_from_path("users/u/clients") is None
    # A user's znode may hold SCRAM credentials too: only quota keys count.
    assert quota_values(
        {"SCRAM-SHA-256": "salt=...", "producer_byte_rate": "1024", "request_percentage": "x"}
    ) == {"producer_byte_rate": 1024.0}


@pytest.mark.timeout(5)
def test_a_quiet_client_may_burst_samples_minus_one_windows_then_is_throttled() -> None:
    clock = Clock()
    m = manager(clock, {QuotaEntity(None, "c"): {KEY: float(MB)}})
    # A young rate is measured over (11 - 1) windows: 10 MB pass at once.
    for _ in range(10):
        assert m.record_and_get_throttle_time_ms("u", "c", MB) == 0
    # The 11th puts the rate at 1.1 MB/s over 10 s: 1 s of throttle.
    assert m.record_and_get_throttle_time_ms("u", "c", MB) == 1000
    # Other client ids have their own sensors under a <default> quota, not this one's.
    assert m.record_and_get_throttle_time_ms("u", "other", MB) == 0


@pytest.mark.timeout(5)
def test_a_steady_client_converges_on_the_bound() -> None:
    clock = Clock()
    m = manager(clock, {QuotaEntity(None, DEFAULT): {KEY: float(MB)}})
    start, sent = clock.now, 0
    while clock.now - start < 110:
        throttle = m.record_and_get_throttle_time_ms("u", "c", 64 * 1024)
        sent += 64 * 1024
        clock.now += 0.001 + throttle / 1000
    # Over ten quota periods the burst allowance is a tenth of the total.
    assert 0.95 * MB <= sent / (clock.now - start) <= 1.15 * MB


@pytest.mark.timeout(5)
def test_unrecord_takes_back_what_a_throttled_fetch_did_not_send() -> None:
    clock = Clock()
    m = manager(clock, {QuotaEntity(None, "c"): {KEY: 100.0}})
    assert m.record_and_get_throttle_time_ms("u", "c", 1100) > 0
    m.unrecord("u", "c", 1100)
    assert m.rate("u", "c") == 0.0
    assert m.max_value_in_quota_window("u", "c") == 1000.0  # bound x (11 - 1) x 1 s
    assert m.max_value_in_quota_window("u", "nobody") is None


@pytest.mark.timeout(5)
def test_request_quota_throttle_is_capped_at_one_window() -> None:
    clock = Clock()
    m = manager(clock, {QuotaEntity(None, "c"): {KEY: 1.0}}, max_throttle_ms=1000)
    assert m.record_and_get_throttle_time_ms("u", "c", 1000.0) == 1000


@pytest.mark.timeout(5)
def test_a_config_swap_applies_at_once_and_no_quota_costs_nothing() -> None:
    clock = Clock()
    m = manager(clock, {})
    assert not m.enabled
    assert m.record_and_get_throttle_time_ms("u", "c", 10**9) == 0
    m.update({QuotaEntity("u", None): {KEY: 10.0}})
    assert m.enabled
    assert m.record_and_get_throttle_time_ms("u", "c", 1000) > 0
    m.update({QuotaEntity("u", None): {KEY: 10.0**9}})
    assert m.record_and_get_throttle_time_ms("u", "c", 1000) == 0
    # The static quota.producer.default applies per client id when nothing is configured.
    static = ClientQuotaManager(QuotaType.PRODUCE, QuotaWindow(11, 1.0), static_default=10.0, clock=clock)
    assert static.enabled and static.quota("u", "c") == QuotaMatch(10.0, "", "c")


@pytest.mark.timeout(5)
def test_kip219_versions_throttle_on_the_client_older_ones_wait() -> None:
    assert client_throttles(0, 6) and not client_throttles(0, 5)  # Produce
    assert client_throttles(1, 8) and not client_throttles(1, 7)  # Fetch
    assert client_throttles(48, 0) and client_throttles(60, 0)  # born after KIP-219
