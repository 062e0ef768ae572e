"""The console producer and consumer as users run them (the installed executables), against a
real ZooKeeper and kafkapy broker: a file piped through a topic comes back byte for byte."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.testing import KafkapyCluster

BIN = Path(sys.executable).parent


def tool(
    name: str, *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(BIN / name), *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"console-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(bootstrap)
    try:
        admin.create_topic(NewTopic(name, partitions, 1))
    finally:
        admin.close()
    return name


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_a_file_piped_through_a_topic_comes_back_byte_identical(
    kafkapy_shared_cluster: KafkapyCluster, tmp_path: Path, codec: str
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    lines = [b"line %d \t tab, \xc3\xa9 utf-8, \xff raw byte" % i for i in range(2000)] + [b"", b"last"]
    data = b"\n".join(lines) + b"\n"
    produced = tool("kafkapy-console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--compression-codec", codec, stdin=data)  # fmt: skip
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = tool("kafkapy-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--from-beginning", "--max-messages", str(len(lines)))  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout == data
    assert f"Processed a total of {len(lines)} messages" in consumed.stderr.decode()


def test_keys_properties_partition_offset_and_timeout(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    produced = tool("kafkapy-console-producer", "--broker-list", bootstrap, "--topic", topic, "--sync",
                    "--property", "parse.key=true", "--property", "key.separator=:",
                    stdin=b"k1:v1\nk2:v2:with:colons\nk3:v3\n")  # fmt: skip
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = tool("kafkapy-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
                    "--partition", "0", "--offset", "1", "--timeout-ms", "10000",
                    "--property", "print.key=true", "--property", "print.offset=true",
                    "--property", "key.separator=|")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout == b"Offset:1|k2|v2:with:colons\nOffset:2|k3|v3\n"
    assert "Processed a total of 2 messages" in consumed.stderr.decode()


def test_group_resumes_from_its_committed_offsets(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, 2)
    data = b"".join(b"m%d\n" % i for i in range(10))
    assert (
        tool(
            "kafkapy-console-producer", "--bootstrap-server", bootstrap, "--topic", topic, stdin=data
        ).returncode
        == 0
    )
    group = f"g-{uuid.uuid4().hex[:6]}"
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--group", group, "--from-beginning"]
    first = tool("kafkapy-console-consumer", *args, "--max-messages", "10")
    assert sorted(first.stdout.splitlines()) == sorted(data.splitlines()), first.stderr.decode()
    assert tool("kafkapy-console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                stdin=b"after\n").returncode == 0  # fmt: skip
    # The idle timer runs from the start, through the group join: 3 s was tight on a busy machine.
    # One message ends the run; had the commit been lost it would be m0..m9's first, not "after".
    second = tool("kafkapy-console-consumer", *args, "--max-messages", "1", "--timeout-ms", "15000")
    assert second.stdout == b"after\n", second.stderr.decode()


def test_usage_errors_are_reported() -> None:
    result = tool(
        "kafkapy-console-consumer", "--bootstrap-server", "127.0.0.1:1", "--offset", "5", "--topic", "t"
    )
    assert result.returncode == 2
    assert b"The partition is required when offset is specified." in result.stderr


def test_legacy_zookeeper_consumer_reads_what_the_console_producer_wrote(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    topic = new_topic(bootstrap, 1)
    data = b"".join(b"zk-%d\n" % i for i in range(20))
    assert (
        tool(
            "kafkapy-console-producer", "--bootstrap-server", bootstrap, "--topic", topic, stdin=data
        ).returncode
        == 0
    )
    consumed = tool("kafkapy-console-consumer", "--zookeeper", kafkapy_shared_cluster.zookeeper_connect,
                    "--topic", topic, "--from-beginning", "--max-messages", "20", timeout=90)  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout == data
    assert "Processed a total of 20 messages" in consumed.stderr.decode()
