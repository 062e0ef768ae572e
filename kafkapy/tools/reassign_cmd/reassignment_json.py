"""kafkapy-reassign-partitions' pure parts: Kafka's JSON documents, their validation, --generate's
placement and the status lines, as Kafka 2.8's ReassignPartitionsCommand has them. No I/O.

Reassignment JSON (--reassignment-json-file, and what --generate prints):
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}
Topics JSON (--topics-to-move-json-file):
    {"version":1,"topics":[{"topic":"t"}]}
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools import kafka_json as kj
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.rack_aware_assignment import assign_replicas

ANY_LOG_DIR = "any"
CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this "
    "and create a new partition assignment in addition to the existing one. The --additional flag can also "
    "be used to change the throttle by resubmitting the current reassignment."
)
YOU_MUST_RUN_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle "
    "is removed."
)
EARLIEST_VERSION = 1

Assignment = dict[TopicPartition, list[int]]


class AdminCommandFailedError(AdminOperationError):
    """Kafka's AdminCommandFailedException: printed as "Error: <message>". `error_name` is the
    broker error the refused plan would have met (the console reports it)."""

    error_name: ClassVar[str] = "INVALID_REPLICA_ASSIGNMENT"


class NonexistentPartitionsError(AdminCommandFailedError):
    """A plan naming topics or partitions the cluster does not have."""

    error_name: ClassVar[str] = "UNKNOWN_TOPIC_OR_PARTITION"


class TerseReassignmentFailure(Exception):
    """Kafka's TerseReassignmentFailureException: the message alone is printed."""


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Kafka's PartitionReassignmentState for --verify."""

    current_replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]
    done: bool


def sort_key(tp: TopicPartition) -> tuple[str, int]:
    return (tp.topic, tp.partition)


def format_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's formatAsReassignmentJson: compact, partitions sorted by topic then partition."""
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(assignment[tp]),
            "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
        }
        for tp in sorted(assignment, key=sort_key)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise AdminOperationError(str(e)) from None


def _version(document: Any) -> int:
    version = kj.as_int(document["version"]) if "version" in document else EARLIEST_VERSION
    if version != 1:
        raise AdminOperationError(f"Not supported version field value {version}")
    return version


def parse_reassignment_json(
    text: str,
) -> tuple[list[tuple[TopicPartition, list[int]]], dict[tuple[TopicPartition, int], str]]:
    """Kafka's parsePartitionReassignmentData: (partition, replicas) in file order, duplicates
    kept for the caller to refuse, and the log dirs other than "any" by (partition, broker)."""
    document = _load(text)
    if not isinstance(document, dict):
        raise AdminOperationError("The input string is not a valid JSON")
    _version(document)
    parts: list[tuple[TopicPartition, list[int]]] = []
    log_dirs: dict[tuple[TopicPartition, int], str] = {}
    entries = kj.as_array(document["partitions"]) if "partitions" in document else []
    for entry in entries:
        # Kafka's DecodeJson messages, e.g. "No such field exists: `replicas`".
        tp = TopicPartition(kj.as_string(kj.field(entry, "topic")), kj.as_int(kj.field(entry, "partition")))
        replicas = [kj.as_int(r) for r in kj.as_array(kj.field(entry, "replicas"))]
        given_dirs = entry.get("log_dirs") if isinstance(entry, dict) else None
        dirs = (
            [ANY_LOG_DIR] * len(replicas)
            if given_dirs is None
            else [kj.as_string(d) for d in kj.as_array(given_dirs)]
        )
        if len(replicas) != len(dirs):
            raise AdminCommandFailedError(
                f"Size of replicas list {scala_list(replicas)} is different from size of log dirs list "
                f"{scala_list(dirs)} for partition {tp}"
            )
        parts.append((tp, replicas))
        log_dirs.update({(tp, r): d for r, d in zip(replicas, dirs, strict=True) if d != ANY_LOG_DIR})
    return parts, log_dirs


def parse_execute_args(text: str) -> tuple[Assignment, dict[tuple[TopicPartition, int], str]]:
    """Kafka's parseExecuteAssignmentArgs: refuses an empty list, an empty replica list,
    duplicate partitions and duplicate replicas, with Kafka's messages."""
    parts, log_dirs = parse_reassignment_json(text)
    check_execute_parts(parts)
    return dict(parts), log_dirs


def check_execute_parts(parts: Sequence[tuple[TopicPartition, Sequence[int]]]) -> None:
    """The checks of parseExecuteAssignmentArgs on (partition, replicas) pairs in plan order."""
    if not parts:
        raise AdminCommandFailedError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise AdminCommandFailedError("Partition replica list cannot be empty")
    duplicate_parts = [tp for tp, n in Counter(tp for tp, _ in parts).items() if n > 1]
    if duplicate_parts:
        raise AdminCommandFailedError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(map(str, duplicate_parts))
        )
    duplicates = [(tp, [r for r, n in Counter(replicas).items() if n > 1]) for tp, replicas in parts]
    duplicates = [(tp, d) for tp, d in duplicates if d]
    if duplicates:
        message = ". ".join(
            f"{tp} contains multiple entries for {','.join(map(str, d))}" for tp, d in duplicates
        )
        raise AdminCommandFailedError(f"Partition replica lists may not contain duplicate entries: {message}")


def parse_topics_json(text: str) -> list[str]:
    """Kafka's parseTopicsData."""
    document = _load(text)
    if not isinstance(document, dict):
        raise AdminOperationError("The input string is not a valid JSON")
    _version(document)
    entries = kj.as_array(document["topics"]) if "topics" in document else []
    return [kj.as_string(kj.field(entry, "topic")) for entry in entries]


def parse_generate_args(topics_json: str, broker_list: str) -> tuple[list[int], list[str]]:
    """Kafka's parseGenerateAssignmentArgs: no duplicate brokers nor topics."""
    try:
        brokers = [int(b) for b in broker_list.split(",")]
    except ValueError as e:
        raise AdminOperationError(f"For input string: {e}") from None
    duplicate_brokers = [b for b, n in Counter(brokers).items() if n > 1]
    if duplicate_brokers:
        raise AdminCommandFailedError(
            f"Broker list contains duplicate entries: {','.join(map(str, duplicate_brokers))}"
        )
    topics = parse_topics_json(topics_json)
    duplicate_topics = [t for t, n in Counter(topics).items() if n > 1]
    if duplicate_topics:
        raise AdminCommandFailedError(
            f"List of topics to reassign contains duplicate entries: {','.join(duplicate_topics)}"
        )
    return brokers, topics


def check_racks(brokers: Mapping[int, str | None], rack_aware: bool) -> dict[int, str | None]:
    """Kafka's getBrokerMetadata: the racks placement may use (none when rack awareness is
    disabled), refusing a mix of brokers with and without a rack."""
    if not rack_aware:
        return dict.fromkeys(brokers)
    with_rack = sum(1 for rack in brokers.values() if rack is not None)
    if with_rack and with_rack != len(brokers):
        raise AdminOperationError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
            "replica assignment without rack information."
        )
    return dict(brokers)


def calculate_assignment(
    current: Mapping[TopicPartition, Sequence[int]],
    brokers: Mapping[int, str | None],
    fixed_start_index: int = -1,
) -> Assignment:
    """Kafka's calculateAssignment: each topic placed anew over `brokers` (id -> rack) with its
    partition count and the replication factor of its first partition (assignReplicasToBrokers,
    rack-aware when the brokers have racks)."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in current:
        by_topic.setdefault(tp.topic, []).append(tp)
    proposed: Assignment = {}
    for topic, partitions in by_topic.items():
        rf = len(current[partitions[0]])
        placed = assign_replicas(brokers, len(partitions), rf, fixed_start_index)
        proposed.update({TopicPartition(topic, p): replicas for p, replicas in placed.items()})
    return proposed


def status_lines(states: Mapping[TopicPartition, PartitionState]) -> list[str]:
    """Kafka's partitionReassignmentStatesToString."""
    return [
        "Status of partition reassignment:",
        *(status_line(tp, states[tp]) for tp in sorted(states, key=sort_key)),
    ]


def status_line(tp: TopicPartition, state: PartitionState) -> str:
    """One partition's line of --verify."""
    if not state.done:
        return f"Reassignment of partition {tp} is still in progress."
    if state.current_replicas == state.target_replicas:
        return f"Reassignment of partition {tp} is complete."
    return (
        f"There is no active reassignment of partition {tp}, but replica set is "
        f"{_csv(state.current_replicas)} rather than {_csv(state.target_replicas)}."
    )


def started_line(partitions: Sequence[TopicPartition]) -> str:
    plural = "" if len(partitions) == 1 else "s"
    return f"Successfully started partition reassignment{plural} for " + ",".join(
        map(str, sorted(partitions, key=sort_key))
    )


def current_assignment_lines(
    proposed: Mapping[TopicPartition, Sequence[int]], current: Mapping[TopicPartition, Sequence[int]]
) -> list[str]:
    """Kafka's currentPartitionReplicaAssignmentToString, one list item per printed line."""
    shown = {tp: r for tp, r in current.items() if tp in proposed}
    return [
        "Current partition replica assignment",
        "",
        format_reassignment_json(shown),
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
    ]


def format_generate(
    current: Mapping[TopicPartition, Sequence[int]], proposed: Mapping[TopicPartition, Sequence[int]]
) -> list[str]:
    """--generate's output: Kafka prints "...assignment\n<json>\n" then "...configuration\n<json>"."""
    return [
        "Current partition replica assignment",
        format_reassignment_json(current),
        "",
        "Proposed partition reassignment configuration",
        format_reassignment_json(proposed),
    ]


def missing_topics_error(topics: Sequence[str]) -> AdminCommandFailedError:
    """What Kafka's describeTopics failure prints (the first missing topic)."""
    return NonexistentPartitionsError(
        f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic {topics[0]} not found."
    )


def _csv(values: Sequence[int]) -> str:
    return ",".join(map(str, values))


def scala_list(values: Sequence[object]) -> str:
    return f"List({', '.join(map(str, values))})"
