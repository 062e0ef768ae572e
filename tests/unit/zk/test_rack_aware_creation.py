"""AdminZkClient places new topics and partitions rack-aware when the registered brokers carry
`broker.rack` (Kafka's getBrokerMetadatas + assignReplicasToBrokers), and refuses a mix of
brokers with and without racks unless rack awareness is disabled or merely "safe"."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kafkapy.zk.admin_zk_client import (
    NOT_ALL_RACKS_MESSAGE,
    AdminZkClient,
    RackAwareMode,
    broker_racks_for_mode,
)
from kafkapy.zk.cluster_znodes import BrokerInfo
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.topic_znodes import ReplicaAssignment


class _FakeZk:
    """The reads create_topic/add_partitions make, over brokers {id: rack}; writes recorded."""

    def __init__(self, racks: Mapping[int, str | None], existing: dict[int, list[int]] | None = None) -> None:
        self.racks = dict(racks)
        self.existing = existing
        self.written: dict[int, Any] = {}

    def get_all_brokers_in_cluster(self) -> list[BrokerInfo]:
        return [BrokerInfo(b, (), rack=r) for b, r in sorted(self.racks.items())]

    def get_sorted_broker_list(self) -> list[int]:
        return sorted(self.racks)

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return False

    def topic_exists(self, topic: str) -> bool:
        return False

    def get_topic_assignment(self, topic: str) -> Any:
        existing = self.existing or {}

        class _Current:
            assignment = {p: ReplicaAssignment(r) for p, r in existing.items()}

            def replicas(self) -> dict[int, list[int]]:
                return dict(existing)

        return _Current()

    def set_topic_assignment(self, topic: str, assignment: Mapping[int, Any]) -> None:
        self.written = dict(assignment)


RACKS = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}


def _racks_of(replicas: Sequence[int]) -> set[str | None]:
    return {RACKS[b] for b in replicas}


@pytest.mark.timeout(10)
def test_create_topic_spreads_each_partition_over_every_rack() -> None:
    admin = AdminZkClient(_FakeZk(RACKS), rng=random.Random(3))  # type: ignore[arg-type]
    created = admin.create_topic("t", 12, 3, validate_only=True)
    assert len(created.assignment) == 12
    for replicas in created.assignment.values():
        assert _racks_of(replicas) == {"a", "b", "c"}
    leaders = [r[0] for r in created.assignment.values()]
    assert sorted(set(leaders)) == [0, 1, 2, 3, 4, 5]  # leadership still rotates over every broker


@pytest.mark.timeout(10)
def test_add_partitions_stays_rack_aware() -> None:
    zk = _FakeZk(RACKS, existing={0: [0, 2, 4], 1: [2, 4, 0]})
    new = AdminZkClient(zk).add_partitions("t", 8)  # type: ignore[arg-type]
    assert sorted(new) == [2, 3, 4, 5, 6, 7]
    for replicas in new.values():
        assert _racks_of(replicas) == {"a", "b", "c"}
    assert sorted(zk.written) == list(range(8))


@pytest.mark.timeout(10)
def test_some_brokers_without_rack_are_refused_unless_disabled_or_safe() -> None:
    mixed = {0: "a", 1: "b", 2: None}
    admin = AdminZkClient(_FakeZk(mixed))  # type: ignore[arg-type]
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
        admin.create_topic("t", 3, 2, validate_only=True)
    for mode in (RackAwareMode.DISABLED, RackAwareMode.SAFE):
        created = admin.create_topic("t", 3, 2, validate_only=True, rack_aware_mode=mode)
        assert len(created.assignment) == 3
    with pytest.raises(AdminOperationError, match="--disable-rack-aware"):
        AdminZkClient(_FakeZk(mixed, existing={0: [0, 1]})).add_partitions("t", 3)  # type: ignore[arg-type]


@pytest.mark.timeout(10)
def test_broker_racks_for_mode_is_kafkas_get_broker_metadatas() -> None:
    assert broker_racks_for_mode({1: "x", 0: "y"}, RackAwareMode.ENFORCED) == {0: "y", 1: "x"}
    assert broker_racks_for_mode({0: "y", 1: "x"}, RackAwareMode.DISABLED) == {0: None, 1: None}
    assert broker_racks_for_mode({0: None, 1: None}, RackAwareMode.ENFORCED) == {0: None, 1: None}
    assert broker_racks_for_mode({0: "y", 1: None}, RackAwareMode.SAFE) == {0: None, 1: None}
    with pytest.raises(AdminOperationError) as e:
        broker_racks_for_mode({0: "y", 1: None}, RackAwareMode.ENFORCED)
    assert str(e.value) == NOT_ALL_RACKS_MESSAGE


class _WritingZk(_FakeZk):
    def get_all_topics_in_cluster(self) -> list[str]:
        return []

    def create_topic_assignment(
        self,
        topic: str,
        topic_id: str | None,
        assignment: Mapping[int, Any],
        configs: Mapping[str, str] | None = None,
    ) -> None:
        self.written = dict(assignment)

    def close(self) -> None:
        pass


def _topics(zk: _WritingZk, *args: str) -> tuple[int, list[str], list[str]]:
    """kafkapy-topics --zookeeper, parsed by the real click command, against `zk`."""
    from kafkapy.tools.topic_command.options import TopicCommandOptions
    from kafkapy.tools.topic_command.service import Printer, TopicService
    from kafkapy.tools.topic_command.zk_service import ZookeeperTopicService
    from kafkapy.tools.topics import execute, kafka_topics, options_from_click

    ctx = kafka_topics.make_context("kafkapy-topics", ["--zookeeper", "127.0.0.1:1", *args])
    opts = options_from_click(ctx, ctx.params)
    out: list[str] = []
    err: list[str] = []

    def opener(o: TopicCommandOptions, printer: Printer) -> TopicService:
        return ZookeeperTopicService(zk, printer)  # type: ignore[arg-type]

    return execute(opts, out.append, err.append, opener), out, err


@pytest.mark.timeout(10)
def test_topics_tool_refuses_mixed_racks_unless_disable_rack_aware() -> None:
    zk = _WritingZk({0: "a", 1: None, 2: "b"})
    create = ("--create", "--topic", "t", "--partitions", "3", "--replication-factor", "2")
    code, out, err = _topics(zk, *create)
    assert code == 1 and out == []
    assert err == ["Error while executing topic command : " + NOT_ALL_RACKS_MESSAGE]
    assert zk.written == {}
    code, out, err = _topics(zk, *create, "--disable-rack-aware")
    assert (code, out, err) == (0, ["Created topic t."], [])
    assert sorted(zk.written) == [0, 1, 2]
