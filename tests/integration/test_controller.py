"""KafkaController against a real Apache ZooKeeper and real TCP "brokers".

Each fake broker is a TCP server in a test thread that decodes LeaderAndIsr / UpdateMetadata /
StopReplica with kafkapy.protocol and answers success, recording what it got. Broker
registrations are real ephemeral znodes, one ZooKeeper session per broker, so "killing a
broker" is closing its session. Every test works under its own chroot.
"""

from __future__ import annotations

import itertools
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkapy.protocol import framing
from kafkapy.protocol.messages import decode_request, encode_response
from kafkapy.server.controller.controller_config import ControllerConfig
from kafkapy.server.controller.kafka_controller import KafkaController
from kafkapy.zk import AdminZkClient, BrokerInfo, EndPoint, KafkaZkClient, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zk_server import zookeeper_server  # noqa: E402

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
_chroots = itertools.count()


class FakeBroker:
    """A TCP endpoint speaking just enough of the inter-broker protocol."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.lock = threading.Lock()
        self.requests: list[tuple[int, Any]] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name=f"fake-broker-{broker_id}", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        decoder = framing.FrameDecoder()
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for frame in decoder.feed(data):
                    header = framing.parse_request_header(frame)
                    body = decode_request(header.api_key, header.api_version, frame, header.body_offset)
                    with self.lock:
                        self.requests.append((header.api_key, body))
                    response = encode_response(
                        header.api_key, header.api_version, self._answer(header.api_key, body)
                    )
                    conn.sendall(
                        framing.encode_response_frame(
                            header.api_key, header.api_version, header.correlation_id, response
                        )
                    )

    @staticmethod
    def _answer(api_key: int, body: Any) -> dict[str, Any]:
        if api_key == STOP_REPLICA:
            return {
                "error_code": 0,
                "partition_errors": [
                    {"topic_name": t.topic_name, "partition_index": p.partition_index, "error_code": 0}
                    for t in body.topic_states
                    for p in t.partition_states
                ],
            }
        if api_key == LEADER_AND_ISR:
            return {
                "error_code": 0,
                "topics": [
                    {
                        "topic_id": t.topic_id,
                        "partition_errors": [
                            {"partition_index": p.partition_index, "error_code": 0}
                            for p in t.partition_states
                        ],
                    }
                    for t in body.topic_states
                ],
            }
        return {"error_code": 0}

    def got(self, api_key: int) -> list[Any]:
        with self.lock:
            return [b for k, b in self.requests if k == api_key]

    def partitions(self, api_key: int) -> list[tuple[str, Any]]:
        return [
            (t.topic_name, p) for b in self.got(api_key) for t in b.topic_states for p in t.partition_states
        ]

    def close(self) -> None:
        self._closed = True
        self._server.close()


def wait_until(condition: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def zk_connect() -> Iterator[str]:
    with zookeeper_server() as zk:
        yield zk.connect_string


class Cluster:
    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.brokers: dict[int, FakeBroker] = {}
        self.sessions: dict[int, KafkaZkClient] = {}
        self.controllers: dict[int, KafkaController] = {}
        self.admin_zk = self._client()
        self.admin_zk.create_top_level_paths()
        self.admin = AdminZkClient(self.admin_zk)

    def _client(self) -> KafkaZkClient:
        client = KafkaZkClient(self.connect, 6000, 10000)
        client.start()
        return client

    def start_broker(self, broker_id: int, with_controller: bool = True, **config: Any) -> None:
        fake = self.brokers.get(broker_id) or FakeBroker(broker_id)
        self.brokers[broker_id] = fake
        session = self._client()
        self.sessions[broker_id] = session
        info = BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", fake.port, "PLAINTEXT"),))
        epoch = session.register_broker(info)
        if with_controller:
            cfg = ControllerConfig(broker_id, auto_leader_rebalance_enable=False, **config)
            controller = KafkaController(cfg, session, info, epoch)
            self.controllers[broker_id] = controller
            controller.startup()

    def kill_broker(self, broker_id: int) -> None:
        """The broker's process dies: its controller stops and its session ends."""
        controller = self.controllers.pop(broker_id, None)
        if controller is not None:
            controller.shutdown()
        self.sessions.pop(broker_id).close()

    def active(self) -> KafkaController | None:
        active = [c for c in self.controllers.values() if c.is_active()]
        return active[0] if len(active) == 1 else None

    def state(self, topic: str, partition: int) -> Any:
        return self.admin_zk.get_topic_partition_state(TopicPartition(topic, partition))

    def close(self) -> None:
        for broker_id in list(self.sessions):
            self.kill_broker(broker_id)
        self.admin_zk.close()
        for fake in self.brokers.values():
            fake.close()


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[Cluster]:
    c = Cluster(f"{zk_connect}/controller-test-{next(_chroots)}")
    try:
        yield c
    finally:
        c.close()


def test_topic_creation_writes_state_znodes_and_tells_the_replicas(cluster: Cluster) -> None:
    cluster.start_broker(0)
    cluster.start_broker(1, with_controller=False)
    wait_until(lambda: cluster.active(), what="an active controller")
    wait_until(lambda: 1 in cluster.active().context.live_brokers, what="broker 1 seen")
    cluster.admin.create_topic("t", replica_assignment={0: [0, 1], 1: [1, 0]})

    wait_until(lambda: cluster.state("t", 0) and cluster.state("t", 1), what="state znodes")
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert (s0.leader_and_isr.leader, s0.leader_and_isr.isr, s0.controller_epoch) == (0, (0, 1), 1)
    assert (s1.leader_and_isr.leader, s1.leader_and_isr.isr) == (1, (1, 0))
    for broker_id in (0, 1):
        fake = cluster.brokers[broker_id]
        got = wait_until(
            lambda f=fake: (
                {(t, p.partition_index) for t, p in f.partitions(LEADER_AND_ISR)} >= {("t", 0), ("t", 1)}
            ),
            what=f"LeaderAndIsr at broker {broker_id}",
        )
        assert got
        wait_until(
            lambda f=fake: any(t == "t" for t, _ in f.partitions(UPDATE_METADATA)),
            what=f"UpdateMetadata at broker {broker_id}",
        )
    lisr = cluster.brokers[1].got(LEADER_AND_ISR)[-1]
    assert lisr.controller_id == 0 and lisr.controller_epoch == 1
    assert lisr.broker_epoch == cluster.active().context.live_broker_epochs[1] > 0
    um = cluster.brokers[1].got(UPDATE_METADATA)[-1]
    assert sorted(b.id for b in um.live_brokers) == [0, 1]
    assert um.live_brokers[1].endpoints[0].port == cluster.brokers[1].port


def test_topic_deletion_sends_stop_replica_and_removes_the_znodes(cluster: Cluster) -> None:
    cluster.start_broker(0)
    cluster.start_broker(1, with_controller=False)
    wait_until(lambda: cluster.active() and 1 in cluster.active().context.live_brokers, what="cluster up")
    cluster.admin.create_topic("doomed", replica_assignment={0: [0, 1]})
    wait_until(lambda: cluster.state("doomed", 0), what="state znode")
    cluster.admin.delete_topic("doomed")

    wait_until(lambda: not cluster.admin_zk.topic_exists("doomed"), what="topic znode removed")
    wait_until(
        lambda: not cluster.admin_zk.is_topic_marked_for_deletion("doomed"), what="admin znode removed"
    )
    for broker_id in (0, 1):
        stops = cluster.brokers[broker_id].partitions(STOP_REPLICA)
        assert any(t == "doomed" and p.delete_partition for t, p in stops), broker_id
    wait_until(
        lambda: "doomed" not in cluster.active().context.all_topics, what="controller forgot the topic"
    )


def test_topic_deletion_disabled_removes_only_the_request(cluster: Cluster) -> None:
    cluster.start_broker(0, delete_topic_enable=False)
    wait_until(lambda: cluster.active(), what="an active controller")
    cluster.admin.create_topic("kept", replica_assignment={0: [0]})
    wait_until(lambda: cluster.state("kept", 0), what="state znode")
    cluster.admin.delete_topic("kept")
    wait_until(lambda: not cluster.admin_zk.is_topic_marked_for_deletion("kept"), what="admin znode removed")
    assert cluster.admin_zk.topic_exists("kept")


def test_killing_a_broker_moves_leadership(cluster: Cluster) -> None:
    cluster.start_broker(0)
    cluster.start_broker(1, with_controller=False)
    wait_until(lambda: cluster.active() and 1 in cluster.active().context.live_brokers, what="cluster up")
    cluster.admin.create_topic("t", replica_assignment={0: [1, 0]})
    wait_until(lambda: cluster.state("t", 0), what="state znode")
    assert cluster.state("t", 0).leader_and_isr.leader == 1

    cluster.kill_broker(1)
    wait_until(lambda: cluster.state("t", 0).leader_and_isr.leader == 0, what="leader moved to broker 0")
    lai = cluster.state("t", 0).leader_and_isr
    assert lai.isr == (0,) and lai.leader_epoch == 1
    wait_until(
        lambda: any(t == "t" and p.leader == 0 for t, p in cluster.brokers[0].partitions(LEADER_AND_ISR)),
        what="broker 0 told to lead",
    )


def test_controlled_shutdown_moves_leadership_before_the_broker_stops(cluster: Cluster) -> None:
    cluster.start_broker(0)
    cluster.start_broker(1, with_controller=False)
    wait_until(lambda: cluster.active() and 1 in cluster.active().context.live_brokers, what="cluster up")
    cluster.admin.create_topic("t", replica_assignment={0: [1, 0]})
    wait_until(lambda: cluster.state("t", 0), what="state znode")
    controller = cluster.active()
    remaining = controller.controlled_shutdown(1, controller.context.live_broker_epochs[1]).result(20)
    assert remaining == set()
    lai = cluster.state("t", 0).leader_and_isr
    assert (lai.leader, lai.isr) == (0, (0,))


def test_two_controllers_race_and_the_survivor_takes_over(cluster: Cluster) -> None:
    cluster.start_broker(0)
    cluster.start_broker(1)
    first = wait_until(lambda: cluster.active(), what="exactly one active controller")
    other_id = 1 - first.broker_id
    other = cluster.controllers[other_id]
    wait_until(lambda: other.active_controller_id == first.broker_id, what="the other sees the controller")
    assert not other.is_active()
    assert cluster.admin_zk.get_controller_id() == first.broker_id
    cluster.admin.create_topic("t", replica_assignment={0: [first.broker_id, other_id]})
    wait_until(lambda: cluster.state("t", 0), what="state znode")

    cluster.kill_broker(first.broker_id)
    wait_until(lambda: other.is_active(), what="failover")
    assert other.epoch == 2 and cluster.admin_zk.get_controller_id() == other_id
    wait_until(lambda: cluster.state("t", 0).leader_and_isr.leader == other_id, what="leader moved")
    assert cluster.state("t", 0).controller_epoch == 2


def _expire_session(cluster: Cluster, broker_id: int) -> None:
    """Expire a broker's ZooKeeper session the classic way: attach a second client to the same
    session id and password, then close it; the original client sees its session expire."""
    from kazoo.client import KazooClient

    session = cluster.sessions[broker_id]
    hosts = cluster.connect.split("/", 1)[0]
    thief = KazooClient(hosts=hosts, client_id=session.kazoo.client_id)
    thief.start(timeout=10)
    thief.stop()
    thief.close()


def test_session_expiry_resigns_and_the_other_controller_takes_over(cluster: Cluster) -> None:
    cluster.start_broker(0)
    first = wait_until(lambda: cluster.active(), what="an active controller")
    # Broker 1 re-registers itself after a new session, as KafkaServer does.
    cluster.start_broker(1)
    other = cluster.controllers[1]
    wait_until(lambda: other.active_controller_id == 0, what="broker 1 sees controller 0")
    assert first.broker_id == 0
    cluster.admin.create_topic("t", replica_assignment={0: [0, 1]})
    wait_until(lambda: cluster.state("t", 0), what="state znode")

    session = cluster.sessions[0]
    info = BrokerInfo(0, (EndPoint("PLAINTEXT", "127.0.0.1", cluster.brokers[0].port, "PLAINTEXT"),))
    first._register_broker = lambda: session.register_broker(info)
    _expire_session(cluster, 0)

    wait_until(lambda: other.is_active(), what="broker 1 takes over")
    assert other.epoch == 2
    wait_until(lambda: not first.is_active() and first.active_controller_id == 1, what="broker 0 resigned")
    # Broker 0 came back with a new session and registration: the new controller sees it.
    wait_until(lambda: 0 in other.context.live_brokers, what="broker 0 re-registered")
    assert cluster.admin_zk.get_controller_id() == 1
