"""AlterPartitionReassignments / ListPartitionReassignments handlers: requests decoded from the
wire, handed to the controller, answers that encode and decode with Kafka's v0 schemas."""

import asyncio
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import InvalidReplicaAssignmentException, NotControllerException
from kafkapy.server.apis.reassignments import (
    handle_alter_partition_reassignments,
    handle_list_partition_reassignments,
)
from kafkapy.server.controller.leader_and_isr import ReplicaAssignment

ALTER, LIST = ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS


class FakeController:
    def __init__(self, outcome=None, error=None):
        self.asked = None
        self.outcome = outcome
        self.error = error

    def _answer(self, asked):
        self.asked = asked
        f = Future()
        if self.error is not None:
            f.set_exception(self.error)
        else:
            f.set_result(self.outcome)
        return f

    def alter_partition_reassignments(self, reassignments):
        return self._answer(reassignments)

    def list_partition_reassignments(self, partitions):
        return self._answer(partitions)


def call(handler, api_key, controller, request):
    body = messages.decode_request(api_key, 0, messages.encode_request(api_key, 0, request))
    apis = SimpleNamespace(controller=controller, authorizer=None)
    answer = asyncio.run(handler(apis, None, body))
    return messages.decode_response(api_key, 0, messages.encode_response(api_key, 0, answer))


@pytest.mark.timeout(10)
def test_alter_hands_targets_and_cancellations_to_the_controller():
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    controller = FakeController({t0: None, t1: InvalidReplicaAssignmentException("Empty replica list")})
    answer = call(
        handle_alter_partition_reassignments,
        ALTER,
        controller,
        {
            "timeout_ms": 1000,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "replicas": [2, 1]},
                        {"partition_index": 1, "replicas": None},
                    ],
                }
            ],
        },
    )
    assert controller.asked == {t0: (2, 1), t1: None}
    assert answer.error_code == 0
    (topic,) = answer.responses
    assert [(p.partition_index, p.error_code, p.error_message) for p in topic.partitions] == [
        (0, 0, None),
        (1, InvalidReplicaAssignmentException.code, "Empty replica list"),
    ]


@pytest.mark.timeout(10)
def test_a_broker_that_is_not_the_controller_says_so():
    answer = call(
        handle_alter_partition_reassignments,
        ALTER,
        FakeController(error=NotControllerException("not me")),
        {"timeout_ms": 1000, "topics": []},
    )
    assert answer.error_code == NotControllerException.code and answer.error_message == "not me"
    answer = call(handle_list_partition_reassignments, LIST, None, {"timeout_ms": 1000, "topics": None})
    assert answer.error_code == NotControllerException.code


@pytest.mark.timeout(10)
def test_list_returns_the_ongoing_reassignments():
    t0 = TopicPartition("t", 0)
    controller = FakeController({t0: ReplicaAssignment((1, 2, 0), (2,), (0,))})
    answer = call(
        handle_list_partition_reassignments,
        LIST,
        controller,
        {"timeout_ms": 1000, "topics": [{"name": "t", "partition_indexes": [0, 3]}]},
    )
    assert controller.asked == frozenset({t0, TopicPartition("t", 3)})
    (topic,) = answer.topics
    (p,) = topic.partitions
    assert (p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas) == (0, [1, 2, 0], [2], [0])
    assert (
        call(
            handle_list_partition_reassignments,
            LIST,
            FakeController({}),
            {"timeout_ms": 1000, "topics": None},
        ).topics
        == []
    )
