"""Fixtures of the client suites: the shared broker's address and a fresh topic name per test."""

from __future__ import annotations

import pytest
from client_helpers import unique_topic

from kafkapy.testing import KafkapyCluster


@pytest.fixture
def bootstrap(kafkapy_shared_cluster: KafkapyCluster) -> str:
    return kafkapy_shared_cluster.bootstrap_servers


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return unique_topic(request.node.name)
