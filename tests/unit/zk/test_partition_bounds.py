"""kafkapy.topic.max.partitions and kafkapy.request.max.partitions refuse before anything is
placed: the check must come before the replica assignment is built, so these tests hand
AdminZkClient a ZooKeeper client that fails on any call placement would make."""

from __future__ import annotations

from typing import Any

import pytest

from kafkapy.protocol.errors import InvalidPartitionsException, InvalidReplicaAssignmentException
from kafkapy.server.apis.topics import _PartitionBudget
from kafkapy.zk.admin_zk_client import DEFAULT_MAX_PARTITIONS, AdminZkClient
from kafkapy.zk.topic_znodes import ReplicaAssignment


class _NoPlacementZk:
    """Answers what add_partitions reads first; any broker-list read means placement began."""

    def __init__(self, existing: int = 1) -> None:
        self.existing = existing

    def get_topic_assignment(self, topic: str) -> Any:
        class _Current:
            assignment = {p: ReplicaAssignment([0]) for p in range(self.existing)}

        return _Current()

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return False

    def get_sorted_broker_list(self) -> list[int]:
        raise AssertionError("placement started before the partition count was checked")


@pytest.mark.timeout(10)
def test_create_topic_refuses_a_billion_partitions_before_placement() -> None:
    admin = AdminZkClient(_NoPlacementZk())  # type: ignore[arg-type]
    with pytest.raises(InvalidPartitionsException, match="larger than the maximum 100000"):
        admin.create_topic("t", 1_000_000_000, 1, validate_only=True)


@pytest.mark.timeout(10)
def test_create_topic_refuses_an_explicit_assignment_over_the_bound() -> None:
    admin = AdminZkClient(_NoPlacementZk(), max_partitions=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidPartitionsException):
        admin.create_topic("t", replica_assignment={p: [0] for p in range(4)})


@pytest.mark.timeout(10)
def test_add_partitions_refuses_a_count_over_the_bound() -> None:
    admin = AdminZkClient(_NoPlacementZk())  # type: ignore[arg-type]
    with pytest.raises(InvalidPartitionsException, match="kafkapy.topic.max.partitions"):
        admin.add_partitions("t", DEFAULT_MAX_PARTITIONS + 1)


@pytest.mark.timeout(10)
def test_add_partitions_refuses_an_assignment_that_does_not_match_the_increase() -> None:
    class _Zk(_NoPlacementZk):
        def get_sorted_broker_list(self) -> list[int]:
            return [0]

    with pytest.raises(InvalidReplicaAssignmentException, match="by 2 but 1 assignments provided"):
        AdminZkClient(_Zk()).add_partitions("t", 3, {1: [0]})  # type: ignore[arg-type]


@pytest.mark.timeout(10)
def test_request_budget_refuses_the_topic_that_overdraws_it_and_keeps_the_others() -> None:
    budget = _PartitionBudget(10, 100)
    budget.take("a", 6)
    with pytest.raises(InvalidPartitionsException, match="kafkapy.request.max.partitions"):
        budget.take("b", 5)
    budget.take("c", 4)  # the refused topic took nothing
    budget.take("d", -1)  # a bad count is refused later with Kafka's own message
    assert budget.used == 10


@pytest.mark.timeout(10)
def test_request_budget_names_the_per_topic_bound_first() -> None:
    with pytest.raises(InvalidPartitionsException, match="kafkapy.topic.max.partitions"):
        _PartitionBudget(10, 5).take("a", 1, total=6)
