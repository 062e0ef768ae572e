"""The Spark suite's fixtures: one local SparkSession for the whole session, the shared broker.

Spark takes seconds to start, so every test shares one session (local[2], UI off, two
shuffle partitions: the data is small). Tests use their own topics and checkpoint dirs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from spark_helpers import unique_topic

from kafkapy.testing import KafkapyCluster


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Loopback only: the machine's hostname may not resolve, and tests need no network.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers must run this interpreter (the virtualenv with kafkapy and pyarrow).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkapy.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkapy-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kafkapy.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def bootstrap(kafkapy_shared_cluster: KafkapyCluster) -> str:
    return kafkapy_shared_cluster.bootstrap_servers


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return unique_topic(request.node.name)
