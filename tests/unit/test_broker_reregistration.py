"""After a ZooKeeper session expiry the broker registers /brokers/ids/<id> again, retrying
through ZooKeeper failures: without it the controller takes a running broker for dead."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NodeExistsError

from kafkapy.server import kafka_server
from kafkapy.server.kafka_server import BrokerState, KafkaServer


class FlakyRegistration:
    def __init__(
        self, failures: list[Exception], zk: Any = None, new_session_after: int | None = None
    ) -> None:
        self.failures = failures
        self.calls = 0
        self.zk = zk
        self.new_session_after = new_session_after

    def register(self) -> None:
        self.calls += 1
        if self.new_session_after is not None and self.calls >= self.new_session_after:
            self.zk.session_id += 1  # the session expired again meanwhile
        if self.failures:
            raise self.failures.pop(0)


def _server(registration: FlakyRegistration, zk: Any) -> KafkaServer:
    server = KafkaServer(SimpleNamespace(broker_id=3))
    server.zk.client = zk
    server.registration = registration  # type: ignore[assignment]
    server.state = BrokerState.RunningAsBroker
    return server


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_server, "REREGISTER_BACKOFF_S", 0.01)


@pytest.mark.timeout(10)
def test_reregistration_is_retried_until_it_lands() -> None:
    zk = SimpleNamespace(session_id=7)
    registration = FlakyRegistration([ConnectionLoss(), ConnectionLoss()])
    _server(registration, zk)._on_new_zk_session()
    assert registration.calls == 3


@pytest.mark.timeout(10)
def test_a_newer_session_takes_over_and_a_taken_id_is_not_retried() -> None:
    zk = SimpleNamespace(session_id=7)
    replaced = FlakyRegistration([ConnectionLoss()] * 5, zk, new_session_after=2)
    _server(replaced, zk)._on_new_zk_session()
    assert replaced.calls == 2  # the newer session's own handler registers

    taken = FlakyRegistration([NodeExistsError()])
    _server(taken, SimpleNamespace(session_id=7))._on_new_zk_session()
    assert taken.calls == 1


@pytest.mark.timeout(10)
def test_a_broker_shutting_down_stops_retrying() -> None:
    zk = SimpleNamespace(session_id=7)
    registration = FlakyRegistration([ConnectionLoss()] * 100)
    server = _server(registration, zk)
    server.state = BrokerState.BrokerShuttingDown
    server._on_new_zk_session()
    assert registration.calls == 0
