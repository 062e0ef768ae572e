"""kafkapy-zookeeper-shell against a real cluster's ZooKeeper: ls/get/stat/create/set/delete/
deleteall as single commands and from stdin, with ZooKeeperMain's output and error lines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster
from kafkapy.tools.zookeeper_shell import USAGE, Shell, java_date

WATCHER = ["", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null"]


def run_shell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.zookeeper_shell", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        input=stdin,
    )


@pytest.mark.timeout(200)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_single_commands(kafkapy_cluster: KafkapyCluster, zk: KazooClient) -> None:
    server = kafkapy_cluster.zookeeper_connect
    done = run_shell(server, "ls", "/brokers/ids")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"Connecting to {server}", *WATCHER, "[0]"]

    controller = run_shell(server, "get", "/controller")
    assert json.loads(controller.stdout.splitlines()[-1])["brokerid"] == 0

    assert run_shell(server, "create", "/tool-test", "hello").stdout.splitlines()[-1] == "Created /tool-test"
    assert zk.get("/tool-test")[0] == b"hello"
    assert run_shell(server, "set", "/tool-test", "world").returncode == 0
    assert run_shell(server, "get", "/tool-test").stdout.splitlines()[-1] == "world"
    stat = zk.exists("/tool-test")
    assert stat is not None
    assert run_shell(server, "stat", "/tool-test").stdout.splitlines()[-11:] == [
        f"cZxid = 0x{stat.czxid:x}",
        f"ctime = {java_date(stat.ctime)}",
        f"mZxid = 0x{stat.mzxid:x}",
        f"mtime = {java_date(stat.mtime)}",
        f"pZxid = 0x{stat.pzxid:x}",
        "cversion = 0",
        "dataVersion = 1",
        "aclVersion = 0",
        "ephemeralOwner = 0x0",
        "dataLength = 5",
        "numChildren = 0",
    ]
    assert run_shell(server, "create", "/tool-test/child").returncode == 0

    refused = run_shell(server, "delete", "/tool-test")
    assert (refused.returncode, refused.stderr.strip()) == (1, "Node not empty: /tool-test")
    exists = run_shell(server, "create", "/tool-test", "again")
    assert (exists.returncode, exists.stderr.strip()) == (1, "Node already exists: /tool-test")
    missing = run_shell(server, "ls", "/nope")
    assert (missing.returncode, missing.stderr.strip()) == (1, "Node does not exist: /nope")
    assert run_shell(server, "deleteall", "/tool-test").returncode == 0
    assert zk.exists("/tool-test") is None


@pytest.mark.timeout(200)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_commands_from_stdin(kafkapy_cluster: KafkapyCluster, zk: KazooClient) -> None:
    server = kafkapy_cluster.zookeeper_connect
    script = "create /piped one\n\nls /piped\nget /piped\nrmr /piped\nls /\nquit\nls /never\n"
    done = run_shell(server, stdin=script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [f"Connecting to {server}", "Welcome to ZooKeeper!", "JLine support is disabled"]
    assert lines[3:7] == WATCHER
    assert lines[7:11] == [
        "Created /piped",
        "[]",
        "one",
        "The command 'rmr' has been deprecated. Please use 'deleteall' instead.",
    ]
    top = lines[11].strip("[]").split(", ")
    assert "brokers" in top and "piped" not in top
    assert len(lines) == 12  # nothing after quit


@pytest.mark.timeout(60)
def test_usage_for_unknown_commands_and_missing_arguments() -> None:
    errors: list[str] = []
    shell = Shell(None, print, errors.append)  # type: ignore[arg-type] - never reaches ZooKeeper
    assert not shell.execute(["bogus", "/x"])
    assert not shell.execute(["ls"])
    assert not shell.execute(["set", "/x"])
    assert errors == [USAGE] * 3


@pytest.mark.timeout(90)
def test_an_unreachable_server_fails() -> None:
    # Port 1: nothing listens, so the shell cannot even connect: exit 1 with a message.
    done = run_shell("127.0.0.1:1", "ls", "/")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: could not connect to 127.0.0.1:1")
