"""ElectLeaders (43) in the controller: each requested partition's outcome as Kafka 2.8's
processReplicaLeaderElection gives it, over the in-memory ZooKeeper and fake brokers."""

from __future__ import annotations

import pytest
from controller_fakes import FakeZk, broker
from test_controller_flows import FakeBrokers, settle

from kafkapy.protocol.errors import (
    ElectionNotNeededException,
    NotControllerException,
    PreferredLeaderNotAvailableException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.controller.controller_config import ControllerConfig
from kafkapy.server.controller.events import ElectionType
from kafkapy.server.controller.kafka_controller import KafkaController
from kafkapy.server.controller.leader_and_isr import TopicPartition

TP = TopicPartition("t", 0)
MISSING = TopicPartition("missing", 0)


@pytest.fixture
def cluster():
    zk = FakeZk()
    for b in (0, 1, 2):
        zk.brokers[b] = (broker(b), 100 + b)
    controllers: list[KafkaController] = []

    def start(broker_id: int = 0) -> KafkaController:
        cfg = ControllerConfig(broker_id, auto_leader_rebalance_enable=False)
        c = KafkaController(cfg, zk, broker(broker_id), 100 + broker_id, connection_factory=FakeBrokers())
        controllers.append(c)
        c.startup()
        settle(c)
        return c

    yield zk, start
    for c in controllers:
        c.shutdown()


def test_preferred_election_moves_leadership_back_then_is_not_needed(cluster) -> None:
    zk, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    c.controlled_shutdown(1, 101).result(5)
    c.context.shutting_down_broker_ids.discard(1)  # broker 1 restarted and caught up
    zk.set_isr(TP, (2, 1))
    settle(c)

    results = c.elect_leaders(ElectionType.PREFERRED, frozenset({TP, MISSING})).result(5)
    assert results[TP] == 1 and zk.states[TP].leader_and_isr.leader == 1
    assert isinstance(results[MISSING], UnknownTopicOrPartitionException)
    assert results[MISSING].message == "The partition does not exist."
    again = c.elect_leaders(ElectionType.PREFERRED, None).result(5)
    assert list(again) == [TP] and isinstance(again[TP], ElectionNotNeededException)


def test_preferred_replica_outside_the_isr_is_not_available(cluster) -> None:
    zk, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    c.controlled_shutdown(1, 101).result(5)
    c.context.shutting_down_broker_ids.discard(1)  # back, but not in the ISR yet
    results = c.elect_leaders(ElectionType.PREFERRED, frozenset({TP})).result(5)
    assert isinstance(results[TP], PreferredLeaderNotAvailableException)
    assert zk.states[TP].leader_and_isr.leader == 2


def test_unclean_election_picks_a_live_replica_outside_the_isr(cluster) -> None:
    zk, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    zk.set_isr(TP, (1,))  # broker 2 fell behind
    settle(c)
    del zk.brokers[1]  # the only in-sync replica dies: no clean leader
    zk.fire_children("/brokers/ids")
    settle(c)
    assert zk.states[TP].leader_and_isr.leader == -1

    results = c.elect_leaders(ElectionType.UNCLEAN, frozenset({TP})).result(5)
    assert results == {TP: 2}
    lai = zk.states[TP].leader_and_isr
    assert (lai.leader, lai.isr) == (2, (2,))
    again = c.elect_leaders(ElectionType.UNCLEAN, frozenset({TP})).result(5)
    assert isinstance(again[TP], ElectionNotNeededException)


def test_a_passive_controller_answers_not_controller(cluster) -> None:
    zk, start = cluster
    start(0)
    passive = start(1)
    with pytest.raises(NotControllerException):
        passive.elect_leaders(ElectionType.PREFERRED, None).result(5)
