"""__consumer_offsets is created with offsets.topic.replication.factor replicas or not at all.

With RF 3 configured and one broker of three up, FindCoordinator answers COORDINATOR_NOT_AVAILABLE
(Kafka's log line says why) and no topic appears in ZooKeeper; once all three are up the topic is
created with three replicas per partition and the coordinator is found.
"""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.errors import CoordinatorNotAvailableException
from kafkapy.testing import KafkapyCluster

WAIT_S = 90.0
TOPIC_PATH = "/brokers/topics/__consumer_offsets"


def find_coordinator(port: int) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator v3 for group "g"."""
    with contextlib.closing(BrokerConnection("127.0.0.1", port, "offsets-topic-test", 30.0)) as conn:
        answer = conn.send(10, 3, {"key": "g", "key_type": 0})
    return answer.error_code, answer.node_id


@pytest.mark.timeout(400)
@pytest.mark.kafkapy_cluster(
    brokers=3,
    overrides={
        "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "3",
        "controlled.shutdown.retry.backoff.ms": "200",
    },
)
def test_offsets_topic_waits_for_enough_brokers(kafkapy_cluster: KafkapyCluster, zk: KazooClient) -> None:
    first = kafkapy_cluster.broker(0)
    for b in kafkapy_cluster.brokers[1:]:
        b.stop()
    kafkapy_cluster.wait_until_ready(broker_ids=[0])

    for _ in range(3):
        assert find_coordinator(first.port)[0] == CoordinatorNotAvailableException.code
        time.sleep(0.5)
    assert zk.exists(TOPIC_PATH) is None
    assert (
        "Number of alive brokers '1' does not meet the required replication factor '3' for the offsets topic "
        "(configured via 'offsets.topic.replication.factor'). This error can be ignored if the cluster is starting "
        "up and not all brokers are up yet."
    ) in first.server_log()

    for b in kafkapy_cluster.brokers[1:]:
        b.start()
    kafkapy_cluster.wait_until_ready()
    deadline = time.monotonic() + WAIT_S
    while (found := find_coordinator(first.port))[0] != 0:
        assert found[0] == CoordinatorNotAvailableException.code, found
        assert time.monotonic() < deadline, "the coordinator was never found"
        time.sleep(0.5)
    assert found[1] in (0, 1, 2)
    partitions = json.loads(zk.get(TOPIC_PATH)[0])["partitions"]
    assert sorted(len(replicas) for replicas in partitions.values()) == [3, 3, 3]
