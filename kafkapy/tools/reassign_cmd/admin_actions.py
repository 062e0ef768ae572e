"""The --bootstrap-server actions of kafkapy-reassign-partitions (Kafka 2.8's path through the
Admin API): Metadata for assignments and brokers, AlterPartitionReassignments to start and cancel,
ListPartitionReassignments for what is in flight."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.client.configs import BROKER, TOPIC, incremental_alter_configs
from kafkapy.client.log_dirs import alter_replica_log_dirs, describe_log_dirs
from kafkapy.client.reassignments import (
    PartitionReassignment,
    alter_partition_reassignments,
    list_partition_reassignments,
)
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaError, ReplicaNotAvailableException, UnknownTopicOrPartitionException
from kafkapy.tools.reassign_cmd.reassignment_json import (
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    YOU_MUST_RUN_VERIFY_PERIODICALLY,
    AdminCommandFailedError,
    Assignment,
    NonexistentPartitionsError,
    PartitionState,
    TerseReassignmentFailure,
    calculate_assignment,
    check_racks,
    current_assignment_lines,
    format_generate,
    missing_topics_error,
    parse_execute_args,
    parse_generate_args,
    parse_reassignment_json,
    scala_list,
    sort_key,
    started_line,
    status_lines,
)
from kafkapy.tools.reassign_cmd.throttles import (
    BROKER_THROTTLES,
    FOLLOWER_RATE,
    LEADER_RATE,
    LOG_DIRS_RATE,
    TOPIC_THROTTLES,
    PartitionMove,
    calculate_moves,
    clearing_lines,
    reassigning_brokers,
    throttle_set_line,
    topic_throttle_configs,
)

Printer = Callable[[str], None]
# Kafka's --timeout default: how long --execute retries AlterReplicaLogDirs for a replica not yet
# on its new broker.
DEFAULT_MOVE_TIMEOUT_MS = 10_000


def _assignments(admin: AdminClient, topics: Sequence[str]) -> Assignment:
    """Kafka's getReplicaAssignmentForTopics: a missing topic fails the whole command."""
    wanted = sorted(set(topics))
    try:
        described = admin.describe_topics(wanted)
    except UnknownTopicOrPartitionException:
        # Metadata answers per topic but describe_topics stops at the first error: find which.
        described = {}
        for topic in wanted:
            try:
                described.update(admin.describe_topics([topic]))
            except UnknownTopicOrPartitionException:
                raise missing_topics_error([topic]) from None
    return {
        TopicPartition(t, p.partition): list(p.replicas)
        for t, info in described.items()
        for p in info.partitions
    }


def generate(admin: AdminClient, topics_json: str, broker_list: str, rack_aware: bool, out: Printer) -> None:
    brokers, topics = parse_generate_args(topics_json, broker_list)
    current = _assignments(admin, topics)
    racks = {b: rack for b, rack in admin.broker_racks().items() if b in brokers}
    proposed = calculate_assignment(current, check_racks(racks, rack_aware))
    for line in format_generate(current, proposed):
        out(line)


def execute(
    admin: AdminClient,
    reassignment_json: str,
    additional: bool,
    throttle: int,
    out: Printer,
    log_dir_throttle: int = -1,
    timeout_ms: int = DEFAULT_MOVE_TIMEOUT_MS,
) -> None:
    proposed, log_dirs = parse_execute_args(reassignment_json)
    current, ongoing = check_execution(admin, proposed, additional)
    for line in current_assignment_lines(proposed, current):
        out(line)
    if throttle >= 0 or log_dir_throttle >= 0:
        out(YOU_MUST_RUN_VERIFY_PERIODICALLY)
    if throttle >= 0:
        throttle_moves(admin, proposed, current, ongoing, throttle)
        out(throttle_set_line(throttle))
    if log_dir_throttle >= 0:
        # Kafka's modifyLogDirThrottle: on every broker a replica moves between dirs of.
        for broker in sorted({b for _, b in log_dirs}):
            incremental_alter_configs(admin, BROKER, str(broker), {LOG_DIRS_RATE: str(log_dir_throttle)}, [])
        out(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    errors = {tp: e for tp, e in alter_partition_reassignments(admin, proposed).items() if e is not None}
    if errors:
        raise TerseReassignmentFailure(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{tp}: {errors[tp].message}" for tp in sorted(errors, key=sort_key))
        )
    out(started_line(list(proposed)))
    if log_dirs:
        execute_moves(admin, log_dirs, timeout_ms, out)


def check_execution(
    admin: AdminClient, proposed: Assignment, additional: bool
) -> tuple[Assignment, dict[TopicPartition, PartitionReassignment]]:
    """Kafka's executeAssignment checks before anything starts: no reassignment in flight unless
    `additional`, every target broker alive, every partition existing. (The current assignment,
    the ongoing reassignments.)"""
    ongoing = list_partition_reassignments(admin)
    if not additional and ongoing:
        raise TerseReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    live = admin.live_brokers()
    for broker in sorted({r for replicas in proposed.values() for r in replicas}):
        if broker not in live:
            raise AdminCommandFailedError(f"Unknown broker id {broker}")
    current = _assignments(admin, [tp.topic for tp in proposed])
    missing = sorted((tp for tp in proposed if tp not in current), key=sort_key)
    if missing:
        # Checked here so that a bad file starts nothing (the controller would refuse only these).
        raise NonexistentPartitionsError(
            f"The proposed assignment contains non-existent partitions: {scala_list(missing)}"
        )
    return current, ongoing


def _replica_text(replica: tuple[TopicPartition, int]) -> str:
    """Kafka's TopicPartitionReplica.toString."""
    return f"{replica[0]}-{replica[1]}"


def _replica_key(replica: tuple[TopicPartition, int]) -> tuple[str, int, int]:
    return replica[0].topic, replica[0].partition, replica[1]


def execute_moves(
    admin: AdminClient,
    log_dirs: Mapping[tuple[TopicPartition, int], str],
    timeout_ms: int,
    out: Printer,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Kafka's executeMoves: AlterReplicaLogDirs until every replica took its dir; a replica
    not on its new broker yet (REPLICA_NOT_AVAILABLE) is asked again every 100 ms."""
    deadline = time.monotonic() + timeout_ms / 1000
    pending = dict(log_dirs)
    while pending:
        codes = alter_replica_log_dirs(admin, pending)
        completed = []
        for replica, code in codes.items():
            if code == ReplicaNotAvailableException.code:
                continue
            if code:
                try:
                    raise_for_error(code)
                except KafkaError as e:
                    raise AdminCommandFailedError(
                        f"Failed to alter dir for {_replica_text(replica)}: {e.message}"
                    ) from e
            completed.append(replica)
        if completed:
            out(
                "Successfully started log directory move{} for: {}".format(
                    "" if len(completed) == 1 else "s",
                    ",".join(map(_replica_text, sorted(completed, key=_replica_key))),
                )
            )
        for replica in completed:
            pending.pop(replica, None)
        if pending and time.monotonic() >= deadline:
            raise TerseReassignmentFailure(
                "Timed out before log directory move{} could be started for: {}".format(
                    "" if len(pending) == 1 else "s",
                    ",".join(map(_replica_text, sorted(pending, key=_replica_key))),
                )
            )
        if pending:
            sleep(0.1)


def throttle_moves(
    admin: AdminClient,
    proposed: Assignment,
    current: Assignment,
    ongoing: Mapping[TopicPartition, PartitionReassignment],
    throttle: int,
) -> None:
    """--execute --throttle: the moves of `proposed` (and of the reassignments in flight, from
    their original replicas) throttled at `throttle` B/s."""
    originals = {tp: [b for b in r.replicas if b not in r.adding_replicas] for tp, r in ongoing.items()}
    set_throttles(admin, calculate_moves(proposed, current, originals), throttle)


def set_throttles(admin: AdminClient, moves: Mapping[TopicPartition, PartitionMove], throttle: int) -> None:
    """Kafka's modifyTopicThrottles then modifyInterBrokerThrottle, through IncrementalAlterConfigs."""
    for topic, configs in topic_throttle_configs(moves).items():
        incremental_alter_configs(admin, TOPIC, topic, configs, [])
    for broker in reassigning_brokers(moves):
        incremental_alter_configs(
            admin, BROKER, str(broker), dict.fromkeys((LEADER_RATE, FOLLOWER_RATE), str(throttle)), []
        )


def clear_throttles(
    admin: AdminClient, targets: Mapping[TopicPartition, Sequence[int]], out: Printer
) -> None:
    """Kafka's clearAllThrottles: every live broker and every target replica, every topic named."""
    brokers = admin.live_brokers() | {b for replicas in targets.values() for b in replicas}
    topics = {tp.topic for tp in targets}
    broker_line, topic_line = clearing_lines(brokers, topics)
    out(broker_line)
    for broker in sorted(brokers):
        incremental_alter_configs(admin, BROKER, str(broker), {}, list(BROKER_THROTTLES))
    out(topic_line)
    for topic in sorted(topics):
        incremental_alter_configs(admin, TOPIC, topic, {}, list(TOPIC_THROTTLES))


def verify(
    admin: AdminClient, reassignment_json: str, out: Printer, preserve_throttles: bool = False
) -> None:
    parts, log_dirs = parse_reassignment_json(reassignment_json)
    targets = dict(parts)
    states = reassignment_states(admin, targets)
    for line in status_lines(states):
        out(line)
    moves_done = True
    if log_dirs:
        lines, moves_done = move_state_lines(admin, log_dirs)
        for line in lines:
            out(line)
    if not preserve_throttles and moves_done and all(state.done for state in states.values()):
        clear_throttles(admin, targets, out)


def reassignment_states(
    admin: AdminClient, targets: Mapping[TopicPartition, Sequence[int]]
) -> dict[TopicPartition, PartitionState]:
    """Kafka's findPartitionReassignmentStates: a partition still listed by the controller is in
    progress; any other is done, with the replicas the metadata gives it now."""
    ongoing = list_partition_reassignments(admin)
    settled = [tp for tp in targets if tp not in ongoing]
    described = admin.describe_topics(sorted({tp.topic for tp in settled})) if settled else {}
    replicas = {
        TopicPartition(t, p.partition): p.replicas for t, info in described.items() for p in info.partitions
    }
    states: dict[TopicPartition, PartitionState] = {}
    for tp, target in targets.items():
        if tp in ongoing:
            states[tp] = PartitionState(ongoing[tp].replicas, tuple(target), False)
        else:
            states[tp] = PartitionState(tuple(replicas.get(tp, ())), tuple(target), True)
    return states


def move_state_lines(
    admin: AdminClient, log_dirs: Mapping[tuple[TopicPartition, int], str]
) -> tuple[list[str], bool]:
    """Kafka's findLogDirMoveStates + replicaMoveStatesToString: each replica's current and
    future dir (DescribeLogDirs) against its target; True when every move is complete."""
    infos = describe_log_dirs(admin, sorted({b for _, b in log_dirs} & admin.live_brokers()))
    lines: list[str] = []
    done = True
    for replica in sorted(log_dirs, key=_replica_key):
        (tp, broker), target = replica, log_dirs[replica]
        current = future = None
        for log_dir, description in infos.get(broker, {}).items():
            info = description.replicas.get(tp)
            if info is not None and info.is_future:
                future = log_dir
            elif info is not None:
                current = log_dir
        name = f"{tp.topic}-{tp.partition}"
        if current is None:
            lines.append(
                f"Partition {name} is not found in any live log dir on broker {broker}. "
                "There is likely an offline log directory on the broker."
            )
        elif future is None and current == target:
            lines.append(f"Reassignment of replica {_replica_text(replica)} completed successfully.")
            continue
        elif future is None:  # Kafka's CancelledMoveState, which counts as done
            lines.append(
                f"Partition {name} on broker {broker} is not being moved from log dir {current} to {target}."
            )
            continue
        elif future == target:
            lines.append(f"Reassignment of replica {_replica_text(replica)} is still in progress.")
        else:
            lines.append(
                f"Partition {name} on broker {broker} is being moved to log dir {future} instead of {target}."
            )
        done = False
    return lines, done


def cancel(admin: AdminClient, reassignment_json: str, out: Printer) -> None:
    parts, _log_dirs = parse_reassignment_json(reassignment_json)
    targets = {tp for tp, _ in parts}
    moving = sorted(
        (
            tp
            for tp, r in list_partition_reassignments(admin, targets).items()
            if r.adding_replicas or r.removing_replicas
        ),
        key=sort_key,
    )
    if moving:
        errors = {tp: e for tp, e in alter_partition_reassignments(admin, dict.fromkeys(moving)).items() if e}
        if errors:
            plural = "" if len(errors) == 1 else "s"
            raise TerseReassignmentFailure(
                f"Error cancelling partition reassignment{plural} for:\n"
                + "\n".join(f"{tp}: {errors[tp].message}" for tp in sorted(errors, key=sort_key))
            )
        plural = "" if len(moving) == 1 else "s"
        out(f"Successfully cancelled partition reassignment{plural} for: {','.join(map(str, moving))}")
    else:
        out("None of the specified partition reassignments are active.")
    out("None of the specified partition moves are active.")


def list_reassignments(admin: AdminClient, out: Printer) -> None:
    ongoing = list_partition_reassignments(admin)
    if not ongoing:
        out("No partition reassignments found.")
        return
    out("Current partition reassignments:")
    for tp in sorted(ongoing, key=sort_key):
        r = ongoing[tp]
        adding = f" adding: {','.join(map(str, r.adding_replicas))}." if r.adding_replicas else ""
        removing = f" removing: {','.join(map(str, r.removing_replicas))}." if r.removing_replicas else ""
        out(f"{tp}: replicas: {','.join(map(str, r.replicas))}.{adding}{removing}")
