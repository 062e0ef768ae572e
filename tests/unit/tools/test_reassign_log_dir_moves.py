"""--execute's log-dir moves (Kafka's executeMoves): REPLICA_NOT_AVAILABLE is retried until the
replica takes its dir or --timeout passes; any other error fails the command."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.reassign_cmd import admin_actions
from kafkapy.tools.reassign_cmd.reassignment_json import AdminCommandFailedError, TerseReassignmentFailure

R0 = (TopicPartition("t", 0), 1)
R1 = (TopicPartition("t", 1), 2)


def _scripted(
    monkeypatch: pytest.MonkeyPatch, answers: list[dict[tuple[TopicPartition, int], int]]
) -> list[set]:
    asked: list[set] = []

    def fake(
        admin: object, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], int]:
        asked.append(set(moves))
        answer = answers.pop(0)
        return {r: answer[r] for r in moves}

    monkeypatch.setattr(admin_actions, "alter_replica_log_dirs", fake)
    return asked


@pytest.mark.timeout(10)
def test_not_yet_available_replicas_are_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _scripted(monkeypatch, [{R0: 0, R1: 9}, {R1: 9}, {R1: 0}])
    out: list[str] = []
    admin_actions.execute_moves(None, {R0: "/a", R1: "/b"}, 10_000, out.append, sleep=lambda s: None)  # type: ignore[arg-type]
    assert asked == [{R0, R1}, {R1}, {R1}]
    assert out == [
        "Successfully started log directory move for: t-0-1",
        "Successfully started log directory move for: t-1-2",
    ]


@pytest.mark.timeout(10)
def test_timeout_and_errors_fail_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [{R0: 9, R1: 9}])
    with pytest.raises(
        TerseReassignmentFailure,
        match="Timed out before log directory moves could be started for: t-0-1,t-1-2",
    ):
        admin_actions.execute_moves(None, {R0: "/a", R1: "/b"}, 0, [].append, sleep=lambda s: None)  # type: ignore[arg-type]
    _scripted(monkeypatch, [{R0: 57}])
    with pytest.raises(AdminCommandFailedError, match="Failed to alter dir for t-0-1"):
        admin_actions.execute_moves(None, {R0: "/nowhere"}, 1000, [].append, sleep=lambda s: None)  # type: ignore[arg-type]


@pytest.mark.timeout(10)
def test_verify_reports_each_replicas_move_as_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkapy.client.log_dirs import LogDirDescription, ReplicaInfo

    t0, t1, t2, t3 = (TopicPartition("t", p) for p in range(4))
    info = {
        1: {
            "/a": LogDirDescription(
                None,
                {t0: ReplicaInfo(1, 0, False), t1: ReplicaInfo(1, 0, False), t2: ReplicaInfo(1, 0, False)},
            ),
            "/b": LogDirDescription(None, {t1: ReplicaInfo(1, 5, True), t3: ReplicaInfo(1, 0, False)}),
        }
    }

    class _Admin:
        def live_brokers(self) -> set[int]:
            return {1}

    monkeypatch.setattr(admin_actions, "describe_log_dirs", lambda admin, brokers: info)
    moves = {(t0, 1): "/a", (t1, 1): "/b", (t2, 1): "/b", (t3, 1): "/a", (TopicPartition("u", 0), 1): "/a"}
    lines, done = admin_actions.move_state_lines(_Admin(), moves)  # type: ignore[arg-type]
    assert not done
    assert lines == [
        "Reassignment of replica t-0-1 completed successfully.",
        "Reassignment of replica t-1-1 is still in progress.",
        "Partition t-2 on broker 1 is not being moved from log dir /a to /b.",
        "Partition t-3 on broker 1 is not being moved from log dir /b to /a.",
        "Partition u-0 is not found in any live log dir on broker 1. There is likely an offline log directory "
        "on the broker.",
    ]
