"""A starting broker serves its first clients only once it knows the cluster's partitions.

A new controller sends the live brokers first and the partition states in its next batch. A broker
whose first UpdateMetadata is that first one (it registered while no controller was active: in
tests/faults/test_replication_faults.py the controller's own broker, SIGKILLed and restarted at
once, waited out its old session, whose expiry also started the election) must not answer the
clients queued on it in between from an empty cache (the topic LEADER_NOT_AVAILABLE with no
partitions): librdkafka's producer then failed its records with _UNKNOWN_PARTITION and produced
nothing to the topic for over 30 s. Here the test holds /controller itself while the broker
starts, so that the election comes after the registration every time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection, ConnectionClosedError
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.testing import KafkapyCluster, zk_controller_id

TOPIC = "kept"
WAIT_S = 60.0


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)
    return result


def full_isr(zk: KazooClient, partitions: int) -> bool:
    for p in range(partitions):
        if not zk.exists(f"/brokers/topics/{TOPIC}/partitions/{p}/state"):
            return False
        state = json.loads(zk.get(f"/brokers/topics/{TOPIC}/partitions/{p}/state")[0])
        if len(state["isr"]) != 2:
            return False
    return True


def connected(conn: BrokerConnection) -> bool:
    try:
        conn.connect()
    except ConnectionClosedError:  # not listening yet: loading its logs
        return False
    return True


@pytest.mark.timeout(120)
@pytest.mark.kafkapy_cluster(brokers=2)
def test_a_client_waiting_on_a_starting_broker_is_told_its_topic(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=2)])[TOPIC].result(WAIT_S)
    wait_until(lambda: full_isr(zk, 2), "a full ISR")
    broker = kafkapy_cluster.brokers[1]
    broker.stop()
    # No controller while the broker starts: /controller swapped for one naming no broker.
    wait_until(lambda: zk_controller_id(zk) >= 0, "a controller")
    fake = json.dumps({"version": 1, "brokerid": 99, "timestamp": str(int(time.time() * 1000))}).encode()
    swap = zk.transaction()
    swap.delete("/controller")
    swap.create("/controller", fake, ephemeral=True)
    assert all(r is True or isinstance(r, str) for r in swap.commit()), "could not take /controller"
    broker.start()
    wait_until(lambda: zk.exists(f"/brokers/ids/{broker.broker_id}"), "the broker's registration")
    with (
        BrokerConnection("127.0.0.1", broker.port, "startup-metadata-test", WAIT_S) as conn,
        ThreadPoolExecutor(1) as pool,
    ):
        wait_until(lambda: connected(conn), "the broker's port", timeout=30)
        # Held until the broker serves clients, which it does not before a controller exists.
        answer = pool.submit(conn.send, ApiKey.METADATA, 1, {"topics": [{"name": TOPIC}]})
        time.sleep(0.5)
        assert not answer.done(), "answered before any controller sent it metadata"
        zk.delete("/controller")  # the brokers elect one, which finds both of them live
        metadata = answer.result(WAIT_S)
    assert metadata is not None
    [topic] = metadata.topics
    assert (topic.name, topic.error_code) == (TOPIC, 0), f"the first answer said {topic}"
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1]
