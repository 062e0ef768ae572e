"""A controlled shutdown leaves the ISRs it takes the broker out of, and stays out.

The controller moves the leadership of every partition the stopping broker leads and names that
broker a follower of each (Kafka sends LeaderAndIsr to the shutting-down replica too). As in
Kafka, a broker that is shutting down starts no fetcher for those: otherwise it catches up,
each new leader writes it back into the ISR in ZooKeeper, acks=all produces wait for a replica
about to stop, and the controller writes the ISR once more to take it out again.

The window is widened the way it opens in a real cluster: one partition cannot move (its only
other replica is down), so the controller answers with it still remaining and the broker
retries after controlled.shutdown.retry.backoff.ms, staying up meanwhile, before it gives up
and stops anyway (Kafka's "Proceeding to do an unclean shutdown").

Invariant checked on real brokers and ZooKeeper: the state znode of each partition that moved
is written exactly once by the shutdown (the election), and its ISR never names the stopped
broker again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster, zk_controller_id

WAIT_S = 60.0
PARTITIONS = 12
OVERRIDES = {
    "auto.leader.rebalance.enable": "false",  # nothing but the shutdown may move leadership
    "controlled.shutdown.retry.backoff.ms": "3000",  # the window between attempts
    "replica.fetch.backoff.ms": "200",
}


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
    return result


def state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any]:
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


def states(zk: KazooClient, topic: str) -> dict[int, tuple[dict[str, Any], int]]:
    """Per partition: the state znode's JSON and its version (one per write)."""
    out = {}
    for p in range(PARTITIONS):
        data, stat = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        out[p] = (json.loads(data), stat.version)
    return out


@pytest.mark.timeout(240)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_a_stopping_broker_is_not_put_back_into_the_isrs_it_left(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = zk_controller_id(zk)
    leaving, down = sorted(b.broker_id for b in kafkapy_cluster.brokers if b.broker_id != controller)
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    topic = "leaving"
    created = admin.create_topics(
        [
            NewTopic(
                topic, num_partitions=PARTITIONS, replica_assignment=[[leaving, controller]] * PARTITIONS
            ),
            NewTopic("stuck", num_partitions=1, replica_assignment=[[leaving, down]]),
        ]
    )
    for future in created.values():
        future.result(WAIT_S)
    wait_until(
        lambda: all(len(s["isr"]) == 2 and s["leader"] == leaving for s, _ in states(zk, topic).values()),
        "every ISR full, led by the broker to stop",
    )
    assert kafkapy_cluster.broker(down).stop() == 0
    wait_until(
        lambda: state(zk, "stuck")["isr"] == [leaving], "the stuck partition's ISR to be the leaver alone"
    )
    producer = Producer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "acks": "all"})
    for p in range(PARTITIONS):
        producer.produce(topic, b"before the shutdown", partition=p)
    assert producer.flush(WAIT_S) == 0
    before = states(zk, topic)

    assert kafkapy_cluster.broker(leaving).stop() == 0
    wait_until(lambda: not zk.exists(f"/brokers/ids/{leaving}"), "the stopped broker's registration to go")
    # The controller handles the broker's departure after its znode is gone: with the stopped
    # broker back in an ISR, that is where it writes the ISR again. Give it the time to.
    time.sleep(2.0)
    after = states(zk, topic)

    assert "Remaining partitions to move: ['stuck-0']" in kafkapy_cluster.broker(leaving).server_log()
    for p in range(PARTITIONS):
        now, version = after[p]
        assert now["leader"] == controller and now["isr"] == [controller], (p, now)
        assert version == before[p][1] + 1, (
            f"partition {p}: its state was written {version - before[p][1]} times by the shutdown "
            f"(once for the election expected): {before[p][0]} -> {now}"
        )
    # The new leader still takes acks=all writes on every partition.
    for p in range(PARTITIONS):
        producer.produce(topic, b"after the shutdown", partition=p)
    assert producer.flush(WAIT_S) == 0
