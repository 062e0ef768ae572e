"""A client that connects the moment a fresh broker registers is answered with a controller.

Issue 12: an AdminClient created right when /brokers/ids/<id> appeared got Metadata with
controller_id -1 (the metadata cache was still empty) and librdkafka waited its whole request
timeout "for controller". The broker now serves clients only after the election is decided and
the controller's first UpdateMetadata arrived (Kafka's order), so each creation below is quick.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import BrokerHandle, free_port
from kafkapy.zkserver.launcher import ZooKeeperProcess
from tests.zk_server import zookeeper_server

ROUNDS = 5
REQUEST_TIMEOUT_S = 15.0
# Far below the request timeout: the failure mode waited all of it.
MAX_CREATE_S = 5.0


@pytest.fixture
def zookeeper() -> Iterator[ZooKeeperProcess]:
    with zookeeper_server() as zk:
        yield zk


def _start_and_await_registration(
    zk: KazooClient, broker_id: int, tmp_path: Path, zk_connect: str
) -> BrokerHandle:
    """Start broker `broker_id` and return the moment /brokers/ids/<id> exists. A port picked
    free can be taken before the broker binds it (other processes share the machine): retry."""
    for attempt in range(3):
        base = tmp_path / f"broker-{broker_id}-{attempt}"
        broker = BrokerHandle(broker_id, free_port(), base, zk_connect, {})
        broker.start()
        deadline = time.monotonic() + 60
        while not zk.exists(f"/brokers/ids/{broker_id}"):
            if not broker.is_running():
                log = broker.server_log()
                assert "address already in use" in log, log[-3000:]
                break
            assert time.monotonic() < deadline, "the broker never registered"
            time.sleep(0.005)
        else:
            return broker
    raise AssertionError("no free port after 3 attempts")


@pytest.mark.timeout(150)
def test_create_topics_right_after_registration_finds_the_controller(
    zookeeper: ZooKeeperProcess, tmp_path: Path
) -> None:
    zk = KazooClient(hosts=zookeeper.connect_string, timeout=10)
    zk.start(timeout=15)
    durations: list[float] = []
    try:
        for i in range(ROUNDS):
            # A fresh broker (new id, new data) each round: the state the race needs.
            broker = _start_and_await_registration(zk, i, tmp_path, zookeeper.connect_string)
            try:
                admin = AdminClient({"bootstrap.servers": broker.bootstrap})
                topic = f"race-{i}"
                started = time.monotonic()
                futures = admin.create_topics(
                    [NewTopic(topic, 1, 1)], request_timeout=REQUEST_TIMEOUT_S, operation_timeout=10
                )
                futures[topic].result(REQUEST_TIMEOUT_S + 5)
                durations.append(time.monotonic() - started)
            finally:
                broker.stop()
    finally:
        zk.stop()
        zk.close()
    print(f"create_topics right after registration took {[round(d, 2) for d in durations]} s")
    assert max(durations) < MAX_CREATE_S, durations
