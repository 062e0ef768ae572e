"""KafkaController end to end over an in-memory ZooKeeper and in-process fake brokers: the
event thread, the sender threads and the flows of Kafka's controller, without sockets."""

import threading
import time

import pytest
from controller_fakes import FakeZk, broker

from kafkapy.protocol.errors import ControllerMovedException, StaleBrokerEpochException
from kafkapy.protocol.generated.leader_and_isr_response import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from kafkapy.protocol.generated.stop_replica_response import StopReplicaPartitionError, StopReplicaResponse
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.controller_config import ControllerConfig
from kafkapy.server.controller.kafka_controller import KafkaController
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition
from kafkapy.server.controller.request_batch import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA


class FakeBrokers:
    """Connection factory: broker id = port - 9090; answers every request with success."""

    def __init__(self):
        self.lock = threading.Lock()
        self.received: list[tuple[int, int, dict]] = []

    def __call__(self, host, port, client_id, timeout):
        brokers = self

        class Conn:
            def send(self, api_key, version, body):
                with brokers.lock:
                    brokers.received.append((port - 9090, api_key, body))
                if api_key == STOP_REPLICA:
                    return StopReplicaResponse(
                        error_code=0,
                        partition_errors=[
                            StopReplicaPartitionError(
                                topic_name=t.topic_name, partition_index=p.partition_index
                            )
                            for t in body.topic_states
                            for p in t.partition_states
                        ],
                    )
                return LeaderAndIsrResponse(error_code=0)

            def close(self):
                pass

        return Conn()

    def of(self, api_key, broker_id=None):
        with self.lock:
            return [
                b for (bid, k, b) in self.received if k == api_key and (broker_id is None or bid == broker_id)
            ]

    def clear(self):
        with self.lock:
            self.received.clear()


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def settle(c):
    # TopicChange is idempotent: once it is processed, everything queued before it is too.
    assert c.event_manager.put(ev.TopicChange()).await_processing(5)


@pytest.fixture
def cluster():
    zk = FakeZk()
    net = FakeBrokers()
    for b in (0, 1, 2):
        zk.brokers[b] = (broker(b), 100 + b)
    controllers = []

    def start(broker_id=0, **config):
        cfg = ControllerConfig(broker_id, auto_leader_rebalance_enable=False, **config)
        c = KafkaController(cfg, zk, broker(broker_id), 100 + broker_id, connection_factory=net)
        controllers.append(c)
        c.startup()
        settle(c)
        return c

    yield zk, net, start
    for c in controllers:
        c.shutdown()


def test_first_controller_wins_and_tells_every_broker(cluster):
    zk, net, start = cluster
    c = start(0)
    assert c.is_active() and c.controller_id == 0 and c.epoch == 1
    wait_until(lambda: {0, 1, 2} <= {b for b, k, _ in net.received if k == UPDATE_METADATA})


def test_second_controller_stays_passive(cluster):
    zk, net, start = cluster
    start(0)
    other = start(1)
    assert not other.is_active() and other.active_controller_id == 0


def test_new_topic_gets_leaders_in_zk_and_leader_and_isr_to_replicas(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2], 1: [2, 0]})
    settle(c)
    assert zk.states[TopicPartition("t", 0)].leader_and_isr == LeaderAndIsr(1, 0, (1, 2), 0)
    assert zk.states[TopicPartition("t", 1)].leader_and_isr == LeaderAndIsr(2, 0, (2, 0), 0)
    wait_until(lambda: net.of(LEADER_AND_ISR, 1) and net.of(LEADER_AND_ISR, 2) and net.of(LEADER_AND_ISR, 0))
    partitions = [
        p for body in net.of(LEADER_AND_ISR, 2) for t in body.topic_states for p in t.partition_states
    ]
    assert {p.partition_index for p in partitions} == {0, 1}


def test_dead_broker_loses_leadership(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    del zk.brokers[1]
    zk.fire_children("/brokers/ids")
    settle(c)
    assert zk.states[TopicPartition("t", 0)].leader_and_isr == LeaderAndIsr(2, 1, (2,), 1)
    assert 1 not in c.context.live_brokers


def test_returning_broker_gets_its_replicas_and_full_metadata(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    saved = zk.brokers.pop(1)
    zk.fire_children("/brokers/ids")
    settle(c)
    net.clear()
    zk.brokers[1] = (saved[0], 500)
    zk.fire_children("/brokers/ids")
    settle(c)
    wait_until(lambda: net.of(LEADER_AND_ISR, 1) and net.of(UPDATE_METADATA, 1))
    assert any(body.topic_states for body in net.of(UPDATE_METADATA, 1))


def test_topic_deletion_stops_replicas_and_removes_the_topic(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    zk.deletions.add("t")
    zk.fire_children("/admin/delete_topics")
    wait_until(lambda: "t" in zk.deleted_topics)
    settle(c)
    stops = [
        p
        for b in (1, 2)
        for body in net.of(STOP_REPLICA, b)
        for t in body.topic_states
        for p in t.partition_states
    ]
    assert any(p.delete_partition for p in stops)
    assert "t" not in c.context.all_topics and not c.context.replica_states


def test_topic_deletion_disabled_only_removes_the_request(cluster):
    zk, net, start = cluster
    c = start(0, delete_topic_enable=False)
    zk.add_topic("t", {0: [1]})
    settle(c)
    zk.deletions.add("t")
    zk.fire_children("/admin/delete_topics")
    settle(c)
    assert zk.deletions == set() and "t" in zk.topics and zk.deleted_topics == []


def test_controlled_shutdown_moves_leadership_and_shrinks_isr(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2], 1: [2, 1], 2: [1]})
    settle(c)
    remaining = c.controlled_shutdown(1, 101).result(5)
    # Partition 2 has one replica: it cannot move and is not reported (Kafka's behaviour).
    assert remaining == set()
    assert zk.states[TopicPartition("t", 0)].leader_and_isr.leader == 2
    assert zk.states[TopicPartition("t", 1)].leader_and_isr.isr == (2,)
    assert 1 in c.context.shutting_down_broker_ids


def test_controlled_shutdown_rejects_a_stale_broker_epoch_and_a_passive_controller(cluster):
    zk, net, start = cluster
    c = start(0)
    with pytest.raises(StaleBrokerEpochException):
        c.controlled_shutdown(1, 50).result(5)
    passive = start(1)
    with pytest.raises(ControllerMovedException):
        passive.controlled_shutdown(2, 102).result(5)


def test_preferred_replica_election_from_the_admin_znode(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    c.controlled_shutdown(1, 101).result(5)
    # Broker 1 "restarts" and catches up; then the admin asks for preferred leaders.
    c.context.shutting_down_broker_ids.discard(1)
    tp = TopicPartition("t", 0)
    lai = zk.states[tp].leader_and_isr
    zk.states[tp] = type(zk.states[tp])(lai.new_isr((2, 1)).with_zk_version(lai.zk_version + 1), 1)
    zk.preferred = {tp, TopicPartition("missing", 0)}
    zk.fire("/admin/preferred_replica_election")
    settle(c)
    assert zk.states[tp].leader_and_isr.leader == 1
    assert zk.preferred is None


def test_isr_change_notification_refreshes_cache_and_sends_update_metadata(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    tp = TopicPartition("t", 0)
    lai = zk.states[tp].leader_and_isr
    zk.states[tp] = type(zk.states[tp])(lai.new_isr((1,)).with_zk_version(lai.zk_version + 1), 1)
    zk.isr_notifications["0000000000"] = {tp}
    net.clear()
    zk.fire_children("/isr_change_notification")
    settle(c)
    assert c.context.partition_leadership_info[tp].leader_and_isr.isr == (1,)
    assert zk.isr_notifications == {}
    wait_until(
        lambda: any(
            p.isr == [1]
            for body in net.of(UPDATE_METADATA, 2)
            for t in body.topic_states
            for p in t.partition_states
        )
    )


def test_controller_failover_to_the_other_broker(cluster):
    zk, net, start = cluster
    first = start(0)
    second = start(1)
    zk.add_topic("t", {0: [0, 2]})
    settle(first)
    # Broker 0's session ends: its registration and /controller vanish.
    first.put(ev.Expire())
    settle(first)
    del zk.brokers[0]
    zk.controller = None
    second.put(ev.Reelect())
    settle(second)
    assert second.is_active() and second.epoch == 2 and not first.is_active()
    second.put(ev.BrokerChange())
    settle(second)
    assert zk.states[TopicPartition("t", 0)].leader_and_isr.leader == 2


def test_auto_rebalance_moves_leaders_back(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    tp = TopicPartition("t", 0)
    lai = zk.states[tp].leader_and_isr
    moved = LeaderAndIsr(2, lai.leader_epoch + 1, (2, 1), lai.zk_version + 1)
    zk.states[tp] = type(zk.states[tp])(moved, 1)
    c.context.partition_leadership_info[tp] = zk.states[tp]
    c.put(ev.AutoPreferredReplicaLeaderElection())
    settle(c)
    assert zk.states[tp].leader_and_isr.leader == 1


def test_bounced_broker_is_failed_over_then_restarted(cluster):
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2]})
    settle(c)
    net.clear()
    # Broker 1 restarted before its old session expired: same id, newer registration.
    zk.brokers[1] = (broker(1), 999)
    zk.fire_children("/brokers/ids")
    settle(c)
    assert zk.states[TopicPartition("t", 0)].leader_and_isr.leader == 2
    assert c.context.live_broker_epochs[1] == 999
    wait_until(
        lambda: any(
            p.leader == 2
            for body in net.of(LEADER_AND_ISR, 1)
            for t in body.topic_states
            for p in t.partition_states
        )
    )


def test_a_log_dir_event_moves_leadership_off_the_replicas_a_broker_reports_offline(cluster):
    """Kafka's LogDirEventNotification: the controller deletes the notification, sends
    LeaderAndIsr to the broker, and the replicas it answers KAFKA_STORAGE_ERROR for become
    OfflineReplica (new leader elected, ISR shrunk)."""
    zk, net, start = cluster
    c = start(0)
    zk.add_topic("t", {0: [1, 2], 1: [2, 1]})
    settle(c)
    failed = TopicPartition("t", 0)
    original = net.__class__.__call__

    def storage_error_on_broker_1(self, host, port, client_id, timeout):
        conn = original(self, host, port, client_id, timeout)
        if port - 9090 != 1:
            return conn
        send = conn.send

        def send_with_offline_dir(api_key, version, body):
            response = send(api_key, version, body)
            if api_key == LEADER_AND_ISR:
                response = LeaderAndIsrResponse(
                    error_code=0,
                    topics=[
                        LeaderAndIsrTopicError(
                            topic_id=t.topic_id,
                            partition_errors=[
                                LeaderAndIsrPartitionError(
                                    partition_index=p.partition_index,
                                    error_code=56 if (t.topic_name, p.partition_index) == ("t", 0) else 0,
                                )
                                for p in t.partition_states
                            ],
                        )
                        for t in body.topic_states
                    ],
                )
            return response

        conn.send = send_with_offline_dir
        return conn

    net.__class__.__call__ = storage_error_on_broker_1
    try:
        # The broker reconnects through the patched factory once it "restarts" its session.
        c.channel_manager.remove_broker(1)
        c.channel_manager.add_broker(zk.brokers[1][0])
        zk.log_dir_events["0000000000"] = 1
        zk.fire_children("/log_dir_event_notification")
        wait_until(lambda: zk.states[failed].leader_and_isr.leader == 2)
    finally:
        net.__class__.__call__ = original
    settle(c)
    assert zk.log_dir_events == {}
    assert zk.states[failed].leader_and_isr.isr == (2,)
    assert zk.states[TopicPartition("t", 1)].leader_and_isr.isr == (2, 1)  # its other replica is fine
    assert c.context.replicas_on_offline_dirs[1] == {failed}
