"""The --zookeeper actions of kafkapy-reassign-partitions (Kafka 2.8's deprecated ZooKeeper
path): --generate reads the assignments and brokers from ZooKeeper, --execute writes
/admin/reassign_partitions for the controller, --verify compares the topic znodes with it."""

from __future__ import annotations

from collections.abc import Callable

from kazoo.exceptions import NodeExistsError

from kafkapy.server.log.topic_partition import TopicPartition
from kafkapy.server.zk.kafka_zk_client import KafkaZkClient
from kafkapy.tools.reassign_cmd.reassignment_json import (
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    AdminCommandFailedError,
    Assignment,
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
    started_line,
    status_lines,
)

Printer = Callable[[str], None]


def _assignments(zk: KafkaZkClient, topics: list[str]) -> Assignment:
    found = zk.get_replica_assignment_for_topics(topics)
    missing = sorted(set(topics) - {tp.topic for tp in found})
    if missing:
        raise missing_topics_error(missing)
    return found


def generate(zk: KafkaZkClient, topics_json: str, broker_list: str, rack_aware: bool, out: Printer) -> None:
    brokers, topics = parse_generate_args(topics_json, broker_list)
    current = _assignments(zk, topics)
    racks = {b.id: b.rack for b in zk.get_all_brokers_in_cluster() if b.id in brokers}
    proposed = calculate_assignment(current, check_racks(racks, rack_aware))
    for line in format_generate(current, proposed):
        out(line)


def execute(zk: KafkaZkClient, reassignment_json: str, throttle: int, out: Printer) -> None:
    proposed, log_dirs = parse_execute_args(reassignment_json)
    if log_dirs:
        raise AdminCommandFailedError("bootstrap-server needs to be provided when replica reassignments are present.")
    current = zk.get_replica_assignment_for_topics({tp.topic for tp in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise AdminCommandFailedError(f"The proposed assignment contains non-existent partitions: {scala_list(missing)}")
    live = set(zk.get_sorted_broker_list())
    unknown = sorted({r for replicas in proposed.values() for r in replicas} - live)
    if unknown:
        raise AdminCommandFailedError(
            f"The proposed assignment contains non-existent brokerIDs: {','.join(map(str, unknown))}")
    if zk.reassign_partitions_in_progress():
        raise TerseReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    for line in current_assignment_lines(proposed, current):
        out(line)
    if throttle >= 0:
        out("Warning: replication throttles are not yet supported by kafkapy; --throttle is ignored.")
    try:
        zk.create_partition_reassignment(proposed)
    except NodeExistsError:
        raise TerseReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING) from None
    out(started_line(list(proposed)))


def verify(zk: KafkaZkClient, reassignment_json: str, out: Printer) -> None:
    parts, log_dirs = parse_reassignment_json(reassignment_json)
    if log_dirs:
        raise AdminCommandFailedError("bootstrap-server needs to be provided when replica reassignments are present.")
    out("Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  "
        "Use --bootstrap-server instead for more accurate results.")
    targets = dict(parts)
    in_progress = zk.get_partition_reassignment()
    current: dict[TopicPartition, list[int]] = zk.get_replica_assignment_for_topics({tp.topic for tp in targets})
    states = {
        tp: PartitionState(tuple(current.get(tp, ())), tuple(target), tp not in in_progress)
        for tp, target in targets.items()
    }
    for line in status_lines(states):
        out(line)
