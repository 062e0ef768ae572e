"""Partition reassignment for the console: start a plan, list what is in flight, verify a plan.

A plan is `{topic: {partition: [broker, ...]}}` or the JSON of kafkapy-reassign-partitions
(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`, log_dirs allowed).
Starting one makes the checks of `kafkapy-reassign-partitions --execute` (shared with it:
`parse_execute_args`/`check_execute_parts`, `check_execution`) and sends
AlterPartitionReassignments; verifying reports each partition as `--verify` does
(`reassignment_states`), without touching throttles. Blocking functions: `operations.py` runs them
off the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from kafkapy.client.admin import AdminClient
from kafkapy.client.reassignments import alter_partition_reassignments, list_partition_reassignments
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.errors import REASSIGNMENT_IN_PROGRESS, OperationError, from_kafka
from kafkapy.protocol.errors import KafkaError, TimeoutException
from kafkapy.tools.reassign_cmd.admin_actions import (
    DEFAULT_MOVE_TIMEOUT_MS,
    check_execution,
    clear_throttles,
    execute_moves,
    reassignment_states,
    throttle_moves,
)
from kafkapy.tools.reassign_cmd.reassignment_json import (
    AdminCommandFailedError,
    Assignment,
    TerseReassignmentFailure,
    check_execute_parts,
    format_reassignment_json,
    parse_execute_args,
    parse_reassignment_json,
    sort_key,
    status_line,
)

# {topic: {partition: replicas}}: the plan as the web forms build it.
ReassignmentPlan = Mapping[str, Mapping[int, Sequence[int]]]
LogDirs = dict[tuple[TopicPartition, int], str]

ProgressStatus = Literal["in progress", "completed", "not as planned"]
IN_PROGRESS: Final = "in progress"
COMPLETED: Final = "completed"
# Kafka's "There is no active reassignment of partition ..., but replica set is ... rather than ...".
NOT_AS_PLANNED: Final = "not as planned"


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """One partition the controller is reassigning (ListPartitionReassignments)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReassignmentProgress:
    """One partition of a submitted plan, as kafka-reassign-partitions --verify reports it."""

    topic: str
    partition: int
    status: ProgressStatus
    current_replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]
    message: str  # --verify's line for the partition


@dataclass(frozen=True, slots=True)
class ReassignmentStarted:
    partitions: tuple[TopicPartition, ...]
    rollback_json: str  # the current assignment of the moved partitions, in the tool's JSON


def _pairs(plan: ReassignmentPlan) -> list[tuple[TopicPartition, list[int]]]:
    return [
        (TopicPartition(topic, partition), list(replicas))
        for topic, partitions in plan.items()
        for partition, replicas in partitions.items()
    ]


def execution_plan(plan: ReassignmentPlan | str) -> tuple[Assignment, LogDirs]:
    """The plan checked as --execute checks its file; raises the tool's errors."""
    if isinstance(plan, str):
        return parse_execute_args(plan)
    pairs = _pairs(plan)
    check_execute_parts(pairs)
    return dict(pairs), {}


def verification_targets(plan: ReassignmentPlan | str) -> Assignment:
    """The plan as --verify reads it (no --execute checks)."""
    if isinstance(plan, str):
        return dict(parse_reassignment_json(plan)[0])
    return dict(_pairs(plan))


def start(
    admin: AdminClient, plan: ReassignmentPlan | str, additional: bool, throttle: int = -1
) -> ReassignmentStarted:
    """--execute [--additional] [--throttle B/s] without its printing. Partitions the controller
    refused raise (the first one's error name; the others of the plan have started, as with the
    tool)."""
    proposed, log_dirs = execution_plan(plan)
    try:
        current, in_flight = check_execution(admin, proposed, additional)
    except TerseReassignmentFailure as e:  # the tool's refusal without --additional
        raise OperationError(REASSIGNMENT_IN_PROGRESS, str(e)) from None
    if throttle >= 0:
        throttle_moves(admin, proposed, current, in_flight, throttle)
    errors = {tp: e for tp, e in alter_partition_reassignments(admin, proposed).items() if e is not None}
    if errors:
        failed = sorted(errors, key=sort_key)
        first = errors[failed[0]]
        message = (
            first.message if len(failed) == 1 else "\n".join(f"{tp}: {errors[tp].message}" for tp in failed)
        )
        raise OperationError(first.name, message)
    if log_dirs:
        _move_log_dirs(admin, log_dirs)
    return ReassignmentStarted(
        tuple(sorted(proposed, key=sort_key)),
        format_reassignment_json({tp: current[tp] for tp in proposed}),
    )


def _move_log_dirs(admin: AdminClient, log_dirs: LogDirs) -> None:
    """--execute's AlterReplicaLogDirs for the plan's log dirs other than "any"."""
    try:
        execute_moves(admin, log_dirs, DEFAULT_MOVE_TIMEOUT_MS, lambda _line: None)
    except TerseReassignmentFailure as e:  # a replica not on its broker before the time-out
        raise OperationError(TimeoutException.name, str(e)) from None
    except AdminCommandFailedError as e:  # a broker refused the move: its error, the tool's words
        cause = e.__cause__
        raise OperationError(cause.name if isinstance(cause, KafkaError) else e.error_name, str(e)) from None


def ongoing(admin: AdminClient) -> list[OngoingReassignment]:
    found = list_partition_reassignments(admin)
    return [
        OngoingReassignment(
            tp.topic, tp.partition, found[tp].replicas, found[tp].adding_replicas, found[tp].removing_replicas
        )
        for tp in sorted(found, key=sort_key)
    ]


def verify(
    admin: AdminClient, plan: ReassignmentPlan | str, clear_throttles_when_done: bool
) -> list[ReassignmentProgress]:
    """--verify's report; with `clear_throttles_when_done`, also its removal of every replication
    throttle (brokers and the plan's topics) once no partition of the plan is in progress."""
    targets = verification_targets(plan)
    states = reassignment_states(admin, targets)
    if clear_throttles_when_done and all(state.done for state in states.values()):
        clear_throttles(admin, targets, lambda _line: None)
    progress = []
    for tp in sorted(states, key=sort_key):
        state = states[tp]
        status: ProgressStatus
        if not state.done:
            status = IN_PROGRESS
        elif state.current_replicas == state.target_replicas:
            status = COMPLETED
        else:
            status = NOT_AS_PLANNED
        progress.append(
            ReassignmentProgress(
                tp.topic,
                tp.partition,
                status,
                state.current_replicas,
                state.target_replicas,
                status_line(tp, state),
            )
        )
    return progress


def cancel(
    admin: AdminClient, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, OperationError | None]:
    """Cancel the reassignments of `partitions` (AlterPartitionReassignments with no replicas)."""
    results = alter_partition_reassignments(admin, dict.fromkeys(partitions))
    return {tp: None if e is None else from_kafka(e) for tp, e in results.items()}
