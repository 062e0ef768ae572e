"""kafkapy-reassign-partitions --zookeeper with `log_dirs` in the plan: Kafka 2.8's
ReassignPartitionsCommand needs AlterReplicaLogDirs, which only --bootstrap-server reaches, so
--execute and --verify refuse with "bootstrap-server needs to be provided when replica
reassignments are present." before reading or writing anything in ZooKeeper, and exit 1;
--replica-alter-log-dirs-throttle without --bootstrap-server is refused as Kafka refuses it.
A plan whose log dirs are all "any" is no log-dir move and goes on through ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkapy.tools import reassign_partitions


class _NoTouchZk:
    """A ZooKeeper client that may only be opened and closed: the refusal changes nothing."""

    started = False

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def start(self) -> None:
        _NoTouchZk.started = True

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"ZooKeeper was used ({name}) although the command must refuse first")


def _plan(tmp_path: Path, log_dirs: list[str]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1], "log_dirs": log_dirs}],
            }
        )
    )
    return str(path)


@pytest.mark.timeout(10)
@pytest.mark.parametrize("action", ["--execute", "--verify"])
def test_log_dirs_through_zookeeper_are_refused_as_kafka_refuses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    monkeypatch.setattr(reassign_partitions, "KafkaZkClient", _NoTouchZk)
    result = CliRunner().invoke(
        reassign_partitions.command,
        [
            "--zookeeper",
            "127.0.0.1:1",
            action,
            "--reassignment-json-file",
            _plan(tmp_path, ["/data/a", "any"]),
        ],
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
    ]
    assert result.stderr.splitlines() == [
        "Error: bootstrap-server needs to be provided when replica reassignments are present."
    ]


@pytest.mark.timeout(10)
def test_the_log_dir_throttle_needs_bootstrap_server(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        reassign_partitions.command,
        [
            "--zookeeper",
            "127.0.0.1:1",
            "--execute",
            "--reassignment-json-file",
            _plan(tmp_path, ["any", "any"]),
            "--replica-alter-log-dirs-throttle",
            "1000",
        ],
    )
    assert result.exit_code == 1
    assert (
        'You must specify --bootstrap-server when using "[replica-alter-log-dirs-throttle]"' in result.stderr
    )


@pytest.mark.timeout(10)
def test_any_log_dirs_are_no_log_dir_move(tmp_path: Path) -> None:
    from kafkapy.tools.reassign_cmd.reassignment_json import parse_execute_args

    proposed, moves = parse_execute_args(Path(_plan(tmp_path, ["any", "any"])).read_text())
    assert list(proposed.values()) == [[0, 1]] and not moves
