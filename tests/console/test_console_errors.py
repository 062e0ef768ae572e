"""console/errors.py: what each refusal the shared client and tool code raises is reported as."""

from __future__ import annotations

import pytest

from kafkapy.console.errors import OperationError, operation_error
from kafkapy.protocol.errors import PolicyViolationException, TopicExistsException
from kafkapy.tools.consumer_groups_cmd.reset import UsageError
from kafkapy.tools.kafka_json import JsonMappingError
from kafkapy.tools.reassign_cmd.reassignment_json import (
    AdminCommandFailedError,
    NonexistentPartitionsError,
    parse_execute_args,
)
from kafkapy.zk.errors import AdminOperationError


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (
            TopicExistsException("Topic 't' already exists."),
            ("TOPIC_ALREADY_EXISTS", "Topic 't' already exists."),
        ),
        (PolicyViolationException(""), ("POLICY_VIOLATION", "POLICY_VIOLATION")),
        (
            AdminCommandFailedError("Unknown broker id 9"),
            ("INVALID_REPLICA_ASSIGNMENT", "Unknown broker id 9"),
        ),
        (NonexistentPartitionsError("gone"), ("UNKNOWN_TOPIC_OR_PARTITION", "gone")),
        (
            AdminOperationError("Not supported version field value 2"),
            ("INVALID_REQUEST", "Not supported version field value 2"),
        ),
        (
            JsonMappingError("No such field exists: `topic`"),
            ("INVALID_REQUEST", "No such field exists: `topic`"),
        ),
        (
            UsageError("Text cannot be parsed to a Duration: P"),
            ("INVALID_REQUEST", "Text cannot be parsed to a Duration: P"),
        ),
        (
            ConnectionRefusedError(111, "Connection refused"),
            ("NETWORK_EXCEPTION", "[Errno 111] Connection refused"),
        ),
    ],
)
def test_each_refusal_keeps_its_kafka_name_and_message(raised: Exception, expected: tuple[str, str]) -> None:
    assert operation_error(raised) == OperationError(*expected)


def test_anything_else_is_not_a_refusal() -> None:
    assert operation_error(ValueError("a bug")) is None
    assert operation_error(KeyError("partition")) is None


def test_the_tool_s_plan_checks_map_to_the_broker_s_names() -> None:
    with pytest.raises(AdminCommandFailedError) as e:
        parse_execute_args('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}')
    assert operation_error(e.value) == OperationError(
        "INVALID_REPLICA_ASSIGNMENT", "Partition replica list cannot be empty"
    )
