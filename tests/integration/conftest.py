"""Fixtures shared by the integration tests that read ZooKeeper beside a running cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster


@pytest.fixture
def zk(kafkapy_cluster: KafkapyCluster) -> Iterator[KazooClient]:
    """A plain kazoo session on the cluster's ZooKeeper, for reading Kafka's znodes directly.

    Modules that mean something else by `zk` define their own fixture, which takes precedence.
    """
    client = KazooClient(hosts=kafkapy_cluster.zookeeper_connect, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()
