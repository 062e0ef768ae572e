"""kafkapy.testing itself: what the pytest plugin promises the tests that use it."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

import kafkapy.testing as testing
from kafkapy.client.connection import BrokerConnection


@pytest.mark.timeout(120)
def test_ports_taken_before_zookeeper_or_a_broker_binds_are_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """free_port() is a guess: another process can bind the port before the broker does. The
    cluster then starts ZooKeeper, or restarts that broker, on another port instead of failing."""
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        taken = squatter.getsockname()[1]
        real = testing.free_port
        # The taken port for ZooKeeper, a free one for its second try, the taken one for broker 0.
        ports: Iterator[int] = iter([taken, real(), taken])

        def rigged() -> int:
            return next(ports, None) or real()

        monkeypatch.setattr(testing, "free_port", rigged)
        with testing.kafkapy_cluster_context(1, base_dir=tmp_path) as cluster:
            broker = cluster.brokers[0]
            assert broker.port != taken and cluster.zookeeper.port != taken
            with contextlib.closing(BrokerConnection("127.0.0.1", broker.port, "plugin-test", 5.0)) as conn:
                md = conn.send(3, 1, {"topics": []})
            assert [b.node_id for b in md.brokers] == [0]
            assert md.controller_id == 0


@pytest.mark.timeout(120)
def test_a_taken_port_named_by_broker_overrides_is_replaced_too(tmp_path: Path) -> None:
    """Clusters whose per-broker overrides name the listeners (SASL, TLS, inter-broker ports) get
    them picked again on the retry: reusing the first overrides would bind the taken port again."""
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        taken = squatter.getsockname()[1]
        sasl_ports: dict[int, int] = {}
        picks: Iterator[int] = iter([taken])

        def overrides(broker_id: int, port: int) -> dict[str, str]:
            sasl_ports[broker_id] = next(picks, None) or testing.free_port()
            return {
                "listeners": f"PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:{sasl_ports[broker_id]}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
            }

        cluster = testing.KafkapyCluster(tmp_path, 1, broker_overrides=overrides)
        try:
            cluster.start()
            assert sasl_ports[0] != taken
            with contextlib.closing(BrokerConnection("127.0.0.1", sasl_ports[0], "plugin-test", 5.0)) as conn:
                md = conn.send(3, 1, {"topics": []})
            assert [b.node_id for b in md.brokers] == [0]
        finally:
            cluster.stop()
