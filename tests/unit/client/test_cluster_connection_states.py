"""Reconnect backoff per node: doubling from reconnect.backoff.ms up to its maximum, with jitter."""

from __future__ import annotations

import pytest

from kafkapy.client.cluster_connection_states import ClusterConnectionStates


def test_backoff_doubles_up_to_the_maximum_within_the_jitter() -> None:
    states = ClusterConnectionStates(reconnect_backoff=0.05, reconnect_backoff_max=1.0)
    delays = [states.failed(1, now=100.0) for _ in range(8)]
    for delay, base in zip(delays, (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0), strict=True):
        assert base * 0.8 <= delay <= base * 1.2
    assert states.is_blacked_out(1, now=100.0 + delays[-1] - 0.001)
    assert not states.is_blacked_out(1, now=100.0 + delays[-1] + 0.001)


def test_a_connection_clears_the_record_and_nodes_are_apart() -> None:
    states = ClusterConnectionStates(reconnect_backoff=0.05, reconnect_backoff_max=1.0)
    for _ in range(5):
        states.failed(1, now=0.0)
    assert states.is_blacked_out(1, now=0.0)
    assert not states.is_blacked_out(2, now=0.0)
    states.connected(1)
    assert not states.is_blacked_out(1, now=0.0)
    assert states.failed(1, now=0.0) == pytest.approx(0.05, rel=0.2)


def test_a_maximum_below_the_base_is_raised_to_it() -> None:
    states = ClusterConnectionStates(reconnect_backoff=0.5, reconnect_backoff_max=0.1)
    assert states.failed(1, now=0.0) == pytest.approx(0.5, rel=0.2)
