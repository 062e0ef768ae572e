"""The --zookeeper actions of kafkapy-reassign-partitions (Kafka 2.8's deprecated ZooKeeper
path): --generate reads the assignments and brokers from ZooKeeper, --execute writes
/admin/reassign_partitions for the controller, --verify compares the topic znodes with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kazoo.exceptions import NodeExistsError

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.reassign_cmd.reassignment_json import (
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    YOU_MUST_RUN_VERIFY_PERIODICALLY,
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
from kafkapy.tools.reassign_cmd.throttles import (
    BROKER_THROTTLES,
    FOLLOWER_RATE,
    LEADER_RATE,
    TOPIC_THROTTLES,
    PartitionMove,
    calculate_moves,
    clearing_lines,
    reassigning_brokers,
    throttle_set_line,
    topic_throttle_configs,
)
from kafkapy.zk.admin_zk_client import AdminZkClient
from kafkapy.zk.kafka_zk_client import KafkaZkClient

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
        raise AdminCommandFailedError(
            "bootstrap-server needs to be provided when replica reassignments are present."
        )
    current = zk.get_replica_assignment_for_topics({tp.topic for tp in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise AdminCommandFailedError(
            f"The proposed assignment contains non-existent partitions: {scala_list(missing)}"
        )
    live = set(zk.get_sorted_broker_list())
    unknown = sorted({r for replicas in proposed.values() for r in replicas} - live)
    if unknown:
        raise AdminCommandFailedError(
            f"The proposed assignment contains non-existent brokerIDs: {','.join(map(str, unknown))}"
        )
    if zk.reassign_partitions_in_progress():
        raise TerseReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    for line in current_assignment_lines(proposed, current):
        out(line)
    if throttle >= 0:
        out(YOU_MUST_RUN_VERIFY_PERIODICALLY)
        set_throttles(zk, calculate_moves(proposed, current), throttle)
        out(throttle_set_line(throttle))
    try:
        zk.create_partition_reassignment(proposed)
    except NodeExistsError:
        raise TerseReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING) from None
    out(started_line(list(proposed)))


def _change(
    admin: AdminZkClient,
    entity_type: str,
    name: str,
    to_set: Mapping[str, str],
    to_delete: Iterable[str] = (),
) -> None:
    """Merge into the entity's dynamic configs and notify the brokers (AdminZkClient.changeConfigs)."""
    configs = admin.fetch_entity_config(entity_type, name)
    updated = {k: v for k, v in {**configs, **to_set}.items() if k not in set(to_delete)}
    if updated != configs:
        admin.change_entity_config(entity_type, name, updated)


def set_throttles(zk: KafkaZkClient, moves: Mapping[TopicPartition, PartitionMove], throttle: int) -> None:
    """Kafka's ZooKeeper-path modifyTopicThrottles and modifyBrokerThrottles."""
    admin = AdminZkClient(zk)
    for topic, configs in topic_throttle_configs(moves).items():
        _change(admin, "topics", topic, configs)
    for broker in reassigning_brokers(moves):
        _change(admin, "brokers", str(broker), dict.fromkeys((LEADER_RATE, FOLLOWER_RATE), str(throttle)))


def clear_throttles(zk: KafkaZkClient, targets: Mapping[TopicPartition, Sequence[int]], out: Printer) -> None:
    admin = AdminZkClient(zk)
    brokers = set(zk.get_sorted_broker_list()) | {b for replicas in targets.values() for b in replicas}
    topics = {tp.topic for tp in targets}
    broker_line, topic_line = clearing_lines(brokers, topics)
    out(broker_line)
    for broker in sorted(brokers):
        _change(admin, "brokers", str(broker), {}, BROKER_THROTTLES)
    out(topic_line)
    for topic in sorted(topics):
        _change(admin, "topics", topic, {}, TOPIC_THROTTLES)


def verify(zk: KafkaZkClient, reassignment_json: str, out: Printer, preserve_throttles: bool = False) -> None:
    parts, log_dirs = parse_reassignment_json(reassignment_json)
    if log_dirs:
        raise AdminCommandFailedError(
            "bootstrap-server needs to be provided when replica reassignments are present."
        )
    out(
        "Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  "
        "Use --bootstrap-server instead for more accurate results."
    )
    targets = dict(parts)
    in_progress = zk.get_partition_reassignment()
    current: dict[TopicPartition, list[int]] = zk.get_replica_assignment_for_topics(
        {tp.topic for tp in targets}
    )
    states = {
        tp: PartitionState(tuple(current.get(tp, ())), tuple(target), tp not in in_progress)
        for tp, target in targets.items()
    }
    for line in status_lines(states):
        out(line)
    if not preserve_throttles and all(state.done for state in states.values()):
        clear_throttles(zk, targets, out)
