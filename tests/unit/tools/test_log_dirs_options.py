"""kafkapy-log-dirs' pure parts: Kafka's JSON layout and the broker-side description."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkapy.client.log_dirs import LogDirDescription, ReplicaInfo
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaStorageException
from kafkapy.server.apis.log_dirs import describe_log_dirs
from kafkapy.tools.log_dirs import format_as_json


@pytest.mark.timeout(10)
def test_json_is_kafkas_compact_layout_filtered_by_topic() -> None:
    infos = {
        1: {"/b": LogDirDescription(KafkaStorageException("gone"))},
        0: {
            "/a": LogDirDescription(
                None,
                {
                    TopicPartition("t", 1): ReplicaInfo(10, 0, False),
                    TopicPartition("u", 0): ReplicaInfo(5, 2, True),
                },
            )
        },
    }
    text = format_as_json(infos, {"t"})
    assert text == (
        '{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/a","error":null,"partitions":'
        '[{"partition":"t-1","size":10,"offsetLag":0,"isFuture":false}]}]},'
        '{"broker":1,"logDirs":[{"logDir":"/b","error":"org.apache.kafka.common.errors.KafkaStorageException",'
        '"partitions":[]}]}]}'
    )
    assert len(json.loads(format_as_json(infos, set()))["brokers"][0]["logDirs"][0]["partitions"]) == 2


class _Log:
    def __init__(self, dir_: Path, size: int, hw: int, leo: int) -> None:
        self.dir = str(dir_)
        self.size = size
        self.high_watermark = hw
        self.log_end_offset = leo


@pytest.mark.timeout(10)
def test_every_dir_is_described_and_logs_land_in_their_own(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    logs: dict[TopicPartition, Any] = {
        TopicPartition("t", 0): _Log(a / "t-0", 100, 5, 5),
        TopicPartition("t", 1): _Log(b / "t-1", 7, 3, 9),
        TopicPartition("x", 0): _Log(b / "x-0", 1, 0, 0),
    }
    results = [
        r.to_dict() for r in describe_log_dirs([str(a), str(b), str(tmp_path / "missing")], logs, None)
    ]
    assert [r["log_dir"] for r in results] == [str(a), str(b), str(tmp_path / "missing")]
    assert results[0]["topics"] == [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 0, "partition_size": 100, "offset_lag": 0, "is_future_key": False}
            ],
        }
    ]
    assert results[1]["topics"][0]["partitions"][0]["offset_lag"] == 0  # LEO ahead of HW lags nothing
    assert results[2]["error_code"] == KafkaStorageException.code
    only = [r.to_dict() for r in describe_log_dirs([str(a), str(b)], logs, {TopicPartition("x", 0)})]
    assert only[0]["topics"] == [] and [t["name"] for t in only[1]["topics"]] == ["x"]
    failed = describe_log_dirs([str(a), str(b)], logs, None, offline_dirs=frozenset({str(b)}))
    assert [r.error_code for r in failed] == [0, KafkaStorageException.code] and failed[1].topics == []


class _Moves:
    def __init__(self) -> None:
        self.started: list[tuple[TopicPartition, str]] = []

    def start(self, tp: TopicPartition, current: Any, destination: str) -> None:
        self.started.append((tp, destination))


class _LogManager:
    def __init__(self, log_dirs: list[str], logs: dict[TopicPartition, Any]) -> None:
        self.log_dirs = log_dirs
        self.logs = logs
        self.preferred: dict[TopicPartition, str] = {}
        self.moves = _Moves()
        self.offline: set[str] = set()

    def get_log(self, tp: TopicPartition) -> Any:
        return self.logs.get(tp)

    def is_log_dir_online(self, log_dir: str) -> bool:
        return log_dir in self.log_dirs and log_dir not in self.offline

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, log_dir: str) -> None:
        if tp not in self.logs:
            self.preferred[tp] = log_dir


@pytest.mark.timeout(10)
def test_alter_replica_log_dir_answers_as_kafka(tmp_path: Path) -> None:
    from kafkapy.server.apis.log_dirs import alter_replica_log_dir

    a, b, gone = tmp_path / "a", tmp_path / "b", tmp_path / "gone"
    a.mkdir()
    b.mkdir()
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    manager = _LogManager([str(a), str(b), str(gone)], {t0: _Log(a / "t-0", 1, 0, 0)})
    hosted = {t0: object()}
    assert alter_replica_log_dir(manager, hosted, t0, str(tmp_path / "elsewhere")) == 57  # LOG_DIR_NOT_FOUND
    assert alter_replica_log_dir(manager, hosted, t0, str(gone)) == KafkaStorageException.code
    assert alter_replica_log_dir(manager, hosted, t0, str(a)) == 0
    assert manager.moves.started == []
    assert alter_replica_log_dir(manager, hosted, t0, str(b)) == 0  # a move starts
    assert manager.moves.started == [(t0, str(b))]
    assert alter_replica_log_dir(manager, hosted, t1, str(b)) == 9  # REPLICA_NOT_AVAILABLE ...
    assert manager.preferred == {t1: str(b)}  # ... with the dir kept for its creation
    manager.offline.add(str(a))  # a failed log dir (LogDirFailureChannel)
    assert alter_replica_log_dir(manager, hosted, t1, str(a)) == KafkaStorageException.code
    assert (
        alter_replica_log_dir(manager, {}, t0, str(b), {t0}) == KafkaStorageException.code
    )  # replica offline


class _Cluster:
    """AdminClient with brokers 0 and 1 that must not be asked for log dirs."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def live_brokers(self) -> list[int]:
        return [0, 1]

    def close(self) -> None:
        pass


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("args", "code", "stdout", "stderr"),
    [
        (["--describe"], 1, "", 'Missing required argument "[bootstrap-server]"'),
        (["--bootstrap-server", "h:1"], 1, "", 'Missing required argument "[describe]"'),
        (
            ["--bootstrap-server", "h:1", "--describe", "--broker-list", "0,x"],
            1,
            "",
            'Error: For input string: "x"',
        ),
        (
            ["--bootstrap-server", "h:1", "--describe", "--broker-list", "0,7,9"],
            1,
            "ERROR: The given brokers do not exist from --broker-list: 7,9. Current existent brokers: 0,1",
            "",
        ),
    ],
)
def test_bad_input_gets_kafkas_message_and_queries_nothing(
    monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, stdout: str, stderr: str
) -> None:
    from click.testing import CliRunner

    from kafkapy.tools import log_dirs

    monkeypatch.setattr(log_dirs, "AdminClient", _Cluster)
    monkeypatch.setattr(log_dirs, "describe_log_dirs", lambda *a: pytest.fail("queried the brokers"))
    result = CliRunner().invoke(log_dirs.command, args)
    assert (result.exit_code, result.stdout.strip(), result.stderr.strip()) == (code, stdout, stderr)
