"""MemoryPool (KIP-72's non-strict pool with idle holders) and ConnectionQuotas on their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kafkapy.server.config import ConfigException, KafkaConfig, parse_connection_overrides
from kafkapy.server.network.connection_quotas import (
    ConnectionQuotas,
    TooManyConnectionsError,
    normalize_ip,
)
from kafkapy.server.network.memory_pool import MemoryPool


class Holder:
    def __init__(self, idle_bytes: int = 0) -> None:
        self.granted: list[int] = []
        self.idle_bytes = idle_bytes

    def memory_granted(self, nbytes: int) -> None:
        self.granted.append(nbytes)

    def release_idle_memory(self) -> int:
        freed, self.idle_bytes = self.idle_bytes, 0
        return freed


def _now(callback: Callable[..., Any], *args: Any) -> None:
    callback(*args)


def test_non_strict_grants_while_memory_is_left_then_queues_in_order() -> None:
    pool = MemoryPool(100, _now)
    a, b, c = Holder(), Holder(), Holder()
    assert pool.try_reserve(a, 90)
    assert pool.try_reserve(b, 50)  # 10 left: granted, the pool overshoots by less than a frame
    assert pool.used == 140 and pool.is_out_of_memory()
    assert not pool.try_reserve(c, 10)
    assert not pool.try_reserve(a, 1)  # behind c, even though small
    pool.release(50)  # 10 free again: the head of the queue gets it, the next one waits
    assert c.granted == [10] and a.granted == [] and pool.used == 100 and pool.waiting() == 1
    pool.release(90)
    assert a.granted == [1] and pool.used == 11 and pool.waiting() == 0


def test_idle_holders_give_memory_back_oldest_first_before_anyone_waits() -> None:
    pool = MemoryPool(100, _now)
    old, young, asker = Holder(idle_bytes=60), Holder(idle_bytes=40), Holder()
    assert pool.try_reserve(old, 60) and pool.try_reserve(young, 40)
    pool.offer_idle(old)
    pool.offer_idle(young)
    assert pool.try_reserve(asker, 50)
    assert old.idle_bytes == 0 and young.idle_bytes == 40  # only as much as needed, oldest first
    assert pool.used == 90


def test_a_closing_holder_leaves_the_queue() -> None:
    pool = MemoryPool(10, _now)
    a, b = Holder(), Holder()
    assert pool.try_reserve(a, 10)
    assert not pool.try_reserve(b, 5)
    pool.forget(b)
    pool.release(10)
    assert b.granted == [] and pool.used == 0


def test_unbounded_pool_only_counts() -> None:
    pool = MemoryPool(-1, _now)
    assert pool.try_reserve(Holder(), 10**12) and not pool.is_out_of_memory()
    assert pool.used == 10**12


def test_per_ip_limits_and_overrides() -> None:
    quotas = ConnectionQuotas(10, 2, {"127.0.0.2": 3, "localhost": 0})
    quotas.inc("10.0.0.1")
    quotas.inc("10.0.0.1")
    with pytest.raises(TooManyConnectionsError) as refused:
        quotas.inc("10.0.0.1")
    assert refused.value.count == 2 and quotas.get("10.0.0.1") == 2
    for _ in range(3):
        quotas.inc("127.0.0.2")
    with pytest.raises(TooManyConnectionsError):
        quotas.inc("127.0.0.1")  # localhost resolved to its address: limit 0
    quotas.dec("10.0.0.1")
    quotas.inc("10.0.0.1")
    assert quotas.total == 5


def test_max_connections_wakes_the_acceptor_when_a_slot_frees() -> None:
    quotas = ConnectionQuotas(2, 100, {}, protected_listener="REPLICATION")
    woken: list[int] = []
    quotas.inc("a")
    quotas.inc("b")
    assert not quotas.slot_available("PLAINTEXT") and quotas.slot_available("REPLICATION")
    quotas.wait_for_slot(lambda: woken.append(1))
    quotas.inc("c")  # the protected listener went past the limit
    assert quotas.max_connections_exceeded("PLAINTEXT")
    quotas.dec("c")
    assert woken == []  # still at the limit
    quotas.dec("b")
    assert woken == [1] and quotas.slot_available("PLAINTEXT")


def test_overrides_parse_like_kafkas_csv_map() -> None:
    assert parse_connection_overrides(" a:1 , ::1:2,host.example:30 ") == {
        "a": 1,
        "::1": 2,
        "host.example": 30,
    }
    assert parse_connection_overrides("") == {}
    with pytest.raises(ConfigException, match="max.connections.per.ip.overrides"):
        parse_connection_overrides("a:b")
    with pytest.raises(ConfigException, match="max.connections.per.ip.overrides"):
        parse_connection_overrides("nocolon")
    assert normalize_ip("::ffff:10.1.2.3") == "10.1.2.3" and normalize_ip("::1") == "::1"


def _config(**props: str) -> KafkaConfig:
    return KafkaConfig(
        {"zookeeper.connect": "localhost:2181", **{k.replace("_", "."): v for k, v in props.items()}}
    )


def test_request_memory_defaults() -> None:
    assert _config().queued_max_request_bytes_effective == 256 * 1024 * 1024
    # Raising only socket.request.max.bytes (valid in Kafka) still starts: the pool follows it.
    assert _config(socket_request_max_bytes=str(300 * 1024 * 1024)).queued_max_request_bytes_effective == (
        300 * 1024 * 1024
    )
    assert _config(queued_max_request_bytes="-1").queued_max_request_bytes_effective == -1
    with pytest.raises(ConfigException, match="larger or equal to socket.request.max.bytes"):
        _config(queued_max_request_bytes="1000")
    with pytest.raises(ConfigException, match="can be set to zero only if"):
        _config(max_connections_per_ip="0")
    assert (
        _config(
            max_connections_per_ip="0", max_connections_per_ip_overrides="10.0.0.1:5"
        ).max_connections_per_ip
        == 0
    )
