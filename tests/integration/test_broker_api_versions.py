"""kafkapy-broker-api-versions against two real brokers, and its formatting (Kafka's
NodeApiVersions.toString) without a cluster."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.messages import valid_versions
from kafkapy.testing import KafkapyCluster
from kafkapy.tools.broker_api_versions import api_version_text, node_api_versions_text, node_text


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.broker_api_versions", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.timeout(200)
@pytest.mark.kafkapy_cluster(brokers=2)
def test_every_broker_lists_every_api_kafkapy_answers(kafkapy_cluster: KafkapyCluster) -> None:
    done = run_tool("--bootstrap-server", kafkapy_cluster.brokers[0].bootstrap)
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("\n)\n")
    assert blocks[-1] == ""
    headers = [b.splitlines()[0] for b in blocks[:-1]]
    assert headers == [
        f"127.0.0.1:{b.port} (id: {b.broker_id} rack: null) -> (" for b in kafkapy_cluster.brokers
    ]
    for block in blocks[:-1]:
        entries = [line.removeprefix("\t").removesuffix(",") for line in block.splitlines()[1:]]
        assert all(line.startswith("\t") for line in block.splitlines()[1:])
        by_key = {int(m.group(1)): e for e in entries if (m := re.search(r"\((\d+)\): ", e))}
        assert by_key[ApiKey.PRODUCE] == "Produce(0): 0 to 9 [usable: 9]"
        assert by_key[ApiKey.ELECT_LEADERS] == "ElectLeaders(43): 0 to 2 [usable: 2]"
        assert by_key[ApiKey.DELETE_RECORDS] == "DeleteRecords(21): 0 to 2 [usable: 2]"
        # The broker advertises exactly the APIs it has a handler for: every one is usable.
        for key, (_, high) in SUPPORTED_VERSIONS.items():
            assert by_key[int(key)].endswith(f" [usable: {high}]"), by_key[int(key)]
        assert by_key[ApiKey.DESCRIBE_ACLS] == "DescribeAcls(29): 1 to 3 [usable: 3]"


def test_missing_bootstrap_server() -> None:
    done = run_tool("--command-config", "x")
    assert (done.returncode, done.stderr.strip()) == (1, 'Missing required argument "[bootstrap-server]"')


def test_entries_are_written_as_kafka_writes_them() -> None:
    assert api_version_text(0, 0, 9) == "Produce(0): 0 to 9 [usable: 9]"
    assert api_version_text(4, 7, 7) == "LeaderAndIsr(4): 7 [usable: 7]"
    ours = valid_versions(18)
    assert ours is not None
    assert api_version_text(18, 0, 999) == f"ApiVersions(18): 0 to 999 [usable: {ours[1]}]"
    assert api_version_text(18, 900, 999) == "ApiVersions(18): 900 to 999 [unusable: node too new]"
    assert api_version_text(9999, 0, 1) == "UNKNOWN(9999): 0 to 1"
    assert node_text("h", 9092, 3, None) == "h:9092 (id: 3 rack: null)"
    assert node_text("h", 9092, 3, "r1") == "h:9092 (id: 3 rack: r1)"
    text = node_api_versions_text({0: (0, 9), 18: (0, 3)})
    assert text.startswith("(\n\tProduce(0): 0 to 9 [usable: 9],\n\tFetch(1): UNSUPPORTED,\n")
    assert text.endswith(",\n\tDescribeProducers(61): UNSUPPORTED\n)")
    assert "\tAlterIsr(56): UNSUPPORTED," in text
