"""KafkaZkClient and AdminZkClient against a real Apache ZooKeeper.

One ZooKeeper for the module; every test works under a chroot of its own, so tests cannot see
each other's znodes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from kafkapy.protocol.errors import (
    ControllerMovedException,
    InvalidConfigurationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    InvalidTopicException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from kafkapy.zk import (
    AdminZkClient,
    BrokerInfo,
    EndPoint,
    KafkaZkClient,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    StateChangeHandler,
    TopicAlreadyMarkedForDeletionError,
    TopicPartition,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
    ZooKeeperClientTimeoutError,
)
from kafkapy.zk.zk_data import PERSISTENT_ZK_PATHS

# tests/ is not a package: put it on the path to reach the test-only ZooKeeper helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zk_server import free_port, zookeeper_server  # noqa: E402

_chroots = itertools.count()


@pytest.fixture(scope="module")
def zk_connect() -> Iterator[str]:
    with zookeeper_server() as zk:
        yield zk.connect_string


@pytest.fixture
def connect(zk_connect: str, request: pytest.FixtureRequest) -> str:
    return f"{zk_connect}/t{next(_chroots)}_{request.node.name[:40]}"


@pytest.fixture
def new_client(connect: str) -> Iterator[Callable[[], KafkaZkClient]]:
    clients: list[KafkaZkClient] = []

    def make() -> KafkaZkClient:
        c = KafkaZkClient(connect, session_timeout_ms=6000, connection_timeout_ms=10000)
        c.start()
        clients.append(c)
        c.create_top_level_paths()
        return c

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def zk(new_client: Callable[[], KafkaZkClient]) -> KafkaZkClient:
    return new_client()


def broker(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "localhost", port, "PLAINTEXT"),))


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def expire_session(client: KafkaZkClient, zk_connect: str) -> None:
    """Close `client`'s session from a second connection that presents the same session id and
    password: the server ends the session and `client` sees it expire."""
    client_id = client.kazoo.client_id
    assert client_id is not None
    other = KazooClient(hosts=zk_connect, client_id=client_id)
    other.start(timeout=10)
    other.stop()
    other.close()


# -- cluster ----------------------------------------------------------------------------------


def test_top_level_paths_and_chroot(zk: KafkaZkClient, zk_connect: str, connect: str) -> None:
    chroot = connect[len(zk_connect) :]
    bare = KazooClient(hosts=zk_connect)
    bare.start(timeout=10)
    try:
        for path in PERSISTENT_ZK_PATHS:
            assert zk.path_exists(path)
            assert bare.exists(chroot + path) is not None
        assert bare.exists("/brokers") is None  # nothing leaked outside the chroot
    finally:
        bare.stop()
        bare.close()


def test_cluster_id_created_once_then_read(new_client: Callable[[], KafkaZkClient]) -> None:
    a, b = new_client(), new_client()
    assert a.get_cluster_id() is None
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda c=c: results.append(c.get_or_create_cluster_id())) for c in (a, b)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results[0]) == 22
    assert a.get_or_create_cluster_id("other") == results[0]
    raw = a.get_data("/cluster/id")
    assert raw is not None and json.loads(raw[0]) == {"version": "1", "id": results[0]}


def test_broker_id_generation_starts_above_reserved_ids(zk: KafkaZkClient) -> None:
    assert [zk.generate_broker_id(1000) for _ in range(3)] == [1001, 1002, 1003]


def test_connection_timeout_is_reported() -> None:
    c = KafkaZkClient(f"127.0.0.1:{free_port()}", 6000, 500)
    with pytest.raises(ZooKeeperClientTimeoutError, match="Timed out"):
        c.start()


# -- brokers ----------------------------------------------------------------------------------


def test_register_broker_and_read_back(zk: KafkaZkClient) -> None:
    czxid = zk.register_broker(broker(1))
    zk.register_broker(broker(0, 9093))
    assert czxid > 0
    # Registering again from the same session (a retried create) is not an error.
    assert zk.register_broker(broker(1)) == czxid
    assert [b.id for b in zk.get_all_brokers_in_cluster()] == [0, 1]
    got = zk.get_broker(1)
    assert got is not None and got.endpoints == broker(1).endpoints
    assert zk.get_broker(9) is None
    assert zk.get_all_broker_and_epochs_in_cluster()[1][1] == czxid
    stat = zk.kazoo.exists("/brokers/ids/1")
    assert stat is not None and stat.ephemeralOwner == zk.session_id


def test_duplicate_broker_id_from_another_session_fails(new_client: Callable[[], KafkaZkClient]) -> None:
    first, second = new_client(), new_client()
    first.register_broker(broker(5))
    with pytest.raises(NodeExistsError) as e:
        second.register_broker(broker(5))
    assert str(e.value) == (
        f"Error while creating ephemeral at /brokers/ids/5, node already exists and owner "
        f"'{first.session_id}' does not match current session '{second.session_id}'"
    )
    first.close()  # its ephemeral node goes with its session
    wait_for(lambda: second.get_broker(5) is None)
    second.register_broker(broker(5))


# -- controller -------------------------------------------------------------------------------


def test_controller_election_race_has_one_winner(new_client: Callable[[], KafkaZkClient]) -> None:
    clients = [new_client() for _ in range(4)]
    outcomes: dict[int, object] = {}
    barrier = threading.Barrier(len(clients))

    def run(broker_id: int, c: KafkaZkClient) -> None:
        barrier.wait()
        try:
            outcomes[broker_id] = c.register_controller_and_increment_controller_epoch(broker_id)
        except ControllerMovedException as e:
            outcomes[broker_id] = e

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = {i: r for i, r in outcomes.items() if not isinstance(r, Exception)}
    assert len(winners) == 1 and len(outcomes) == 4
    ((winner, (epoch, epoch_zk_version)),) = winners.items()
    assert (epoch, epoch_zk_version) == (1, 1)
    assert clients[0].get_controller_id() == winner
    assert clients[0].get_controller_epoch() == (1, 1)

    # The winner resigns (or dies): the next election moves the epoch on.
    clients[winner].delete_controller(epoch_zk_version)
    loser = (winner + 1) % 4
    assert clients[loser].register_controller_and_increment_controller_epoch(loser) == (2, 2)
    # A write fenced with the old controller's epoch version is refused.
    with pytest.raises(ControllerMovedException, match="Expected zkVersion = 1"):
        clients[winner].delete_controller(epoch_zk_version)
    assert clients[winner].get_controller_id() == loser


# -- topics -----------------------------------------------------------------------------------


def test_create_topic_and_read_assignment(zk: KafkaZkClient) -> None:
    for i in range(3):
        zk.register_broker(broker(i, 9092 + i))
    admin = AdminZkClient(zk)
    created = admin.create_topic("orders", 6, 2, {"retention.ms": "60000"})
    assert zk.topic_exists("orders") and zk.get_all_topics_in_cluster() == {"orders"}
    assert zk.get_entity_configs("topics", "orders") == {"retention.ms": "60000"}
    full = zk.get_full_replica_assignment_for_topics(["orders", "missing"])
    assert list(full) == ["orders"]
    assert full["orders"].topic_id == created.topic_id
    assert full["orders"].replicas() == created.assignment
    assert all(len(set(r)) == 2 for r in created.assignment.values())
    assert zk.get_partitions_for_topics(["orders"]) == {"orders": [0, 1, 2, 3, 4, 5]}

    with pytest.raises(TopicExistsException, match="Topic 'orders' already exists."):
        admin.create_topic("orders", 1, 1)
    with pytest.raises(
        InvalidReplicationFactorException, match="Replication factor: 4 larger than available brokers: 3."
    ):
        admin.create_topic("other", 1, 4)
    with pytest.raises(InvalidTopicException):
        admin.create_topic("bad/name", 1, 1)
    with pytest.raises(InvalidConfigurationException, match="Unknown topic config name: nope"):
        admin.create_topic("other", 1, 1, {"nope": "1"})
    admin.create_topic("a.b", 1, 1)
    with pytest.raises(InvalidTopicException, match="collides with existing topics: a.b"):
        admin.create_topic("a_b", 1, 1)
    assert list(admin.create_topic("dry", 2, 1, validate_only=True).assignment) == [0, 1]
    assert not zk.topic_exists("dry")


def test_explicit_assignment_and_add_partitions_keep_topic_id(zk: KafkaZkClient) -> None:
    for i in range(3):
        zk.register_broker(broker(i, 9092 + i))
    admin = AdminZkClient(zk)
    created = admin.create_topic("t", replica_assignment={0: [1, 2], 1: [2, 0]})
    new = admin.add_partitions("t", 4)
    assert sorted(new) == [2, 3] and all(len(r) == 2 for r in new.values())
    after = zk.get_topic_assignment("t")
    assert after is not None and after.topic_id == created.topic_id
    assert after.replicas() == {0: [1, 2], 1: [2, 0], **new}
    with pytest.raises(InvalidPartitionsException, match="can only be increased"):
        admin.add_partitions("t", 4)
    with pytest.raises(UnknownTopicOrPartitionException):
        admin.add_partitions("nope", 4)
    assert admin.add_partitions("t", 5, {4: [0, 1]}) == {4: [0, 1]}


def test_partition_states_conditional_updates(zk: KafkaZkClient) -> None:
    zk.create_topic_assignment("t", None, {0: [0, 1], 1: [1, 0]})
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    initial = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(tp.partition, 0, (0, 1)), 1) for tp in (t0, t1)}
    assert zk.create_topic_partition_states(initial) == {t0: None, t1: None}
    again = zk.create_topic_partition_states({t0: initial[t0]})
    assert isinstance(again[t0], NodeExistsError)
    states = zk.get_topic_partition_states([t0, t1, TopicPartition("t", 9)])
    assert states == initial  # zk version 0 on both

    # The controller moves leadership of t-0; t-1 was changed by its leader meanwhile.
    ok, version = zk.conditional_update_path(
        "/brokers/topics/t/partitions/1/state",
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}',
        0,
    )
    assert (ok, version) == (True, 1)
    result = zk.update_leader_and_isr({t0: LeaderAndIsr(1, 1, (1,), 0), t1: LeaderAndIsr(0, 1, (0,), 0)}, 2)
    assert result.finished == {t0: LeaderAndIsr(1, 1, (1,), 1)}
    assert result.to_retry == [t1]
    assert zk.get_topic_partition_state(t0) == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 1, (1,), 1), 2)
    assert zk.conditional_update_path("/brokers/topics/t/partitions/0/state", b"{}", 0) == (False, -1)


def test_controller_writes_are_fenced_by_epoch_zk_version(zk: KafkaZkClient) -> None:
    epoch, epoch_zk_version = zk.register_controller_and_increment_controller_epoch(0)
    zk.create_topic_assignment("t", None, {0: [0]})
    tp = TopicPartition("t", 0)
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), epoch)
    assert zk.create_topic_partition_states({tp: state}, epoch_zk_version) == {tp: None}
    with pytest.raises(ControllerMovedException):
        zk.update_leader_and_isr({tp: LeaderAndIsr(0, 1, (0,), 0)}, epoch, epoch_zk_version + 1)
    with pytest.raises(ControllerMovedException):
        zk.set_topic_assignment(
            "t", {0: [0], 1: [0]}, expected_controller_epoch_zk_version=epoch_zk_version + 1
        )
    assert zk.get_topic_partition_state(tp) == state


def test_bulk_partition_state_writes_and_reads_are_pipelined(zk: KafkaZkClient) -> None:
    """More partitions than one pipeline window (PIPELINE_WINDOW) over several topics: every
    outcome lands on its own partition (created, already there, changed meanwhile, missing),
    and the fence still refuses the lot for a stale controller epoch."""
    from kafkapy.zk.zk_io import PIPELINE_WINDOW

    epoch, epoch_zk_version = zk.register_controller_and_increment_controller_epoch(0)
    per_topic = 300
    topics = [f"bulk{i}" for i in range(PIPELINE_WINDOW // per_topic + 2)]
    for t in topics:
        zk.create_topic_assignment(t, None, {p: [0, 1] for p in range(per_topic)})
    tps = [TopicPartition(t, p) for t in topics for p in range(per_topic)]
    assert len(tps) > PIPELINE_WINDOW
    states = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(tp.partition % 2, 0, (0, 1)), epoch) for tp in tps}
    first = tps[0]
    assert zk.create_topic_partition_states({first: states[first]}, epoch_zk_version) == {first: None}
    created = zk.create_topic_partition_states(states, epoch_zk_version)
    assert isinstance(created[first], NodeExistsError)
    assert all(created[tp] is None for tp in tps[1:])
    missing = TopicPartition(topics[0], per_topic + 7)
    read = zk.get_topic_partition_states([*tps, missing])
    assert read == states

    # One partition's leader changed its ISR meanwhile; one state znode is gone.
    changed, gone = tps[1], tps[-1]
    assert zk.conditional_update_path(
        f"/brokers/topics/{changed.topic}/partitions/{changed.partition}/state",
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}',
        0,
    ) == (True, 1)
    zk.delete_path(f"/brokers/topics/{gone.topic}/partitions/{gone.partition}/state")
    new = {tp: LeaderAndIsr(1, 1, (1,), 0) for tp in tps}
    result = zk.update_leader_and_isr(new, epoch, epoch_zk_version)
    assert result.to_retry == [changed]
    assert isinstance(result.finished[gone], Exception)
    assert {tp: lai for tp, lai in result.finished.items() if tp != gone} == {
        tp: LeaderAndIsr(1, 1, (1,), 1) for tp in tps if tp not in (changed, gone)
    }
    with pytest.raises(ControllerMovedException):
        zk.update_leader_and_isr(
            {tp: LeaderAndIsr(0, 2, (0,), 1) for tp in tps[2:]}, epoch, epoch_zk_version + 1
        )
    with pytest.raises(ControllerMovedException):
        zk.create_topic_partition_states({missing: states[first]}, epoch_zk_version + 1)
    assert zk.get_topic_partition_state(tps[2]) == LeaderIsrAndControllerEpoch(
        LeaderAndIsr(1, 1, (1,), 1), epoch
    )


def test_bulk_reads_survive_a_dropped_connection(zk: KafkaZkClient) -> None:
    """A connection lost with a pipeline in flight: the cut-short requests are redone one by
    one under the retry policy, and every read still answers."""
    zk.create_topic_assignment("drop", None, {p: [0] for p in range(200)})
    tps = [TopicPartition("drop", p) for p in range(200)]
    states = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1) for tp in tps}
    zk.create_topic_partition_states(states)
    done = threading.Event()

    def drop_connection() -> None:
        # kazoo reconnects within the same session after its socket is closed under it.
        while not done.is_set():
            conn = zk.kazoo._connection
            sock = getattr(conn, "_socket", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                return
            time.sleep(0.001)

    dropper = threading.Thread(target=drop_connection)
    dropper.start()
    try:
        for _ in range(3):
            assert zk.get_topic_partition_states(tps) == states
    finally:
        done.set()
        dropper.join(5)


# -- deletion, configs, notifications ---------------------------------------------------------


def test_topic_deletion_request_and_cleanup(zk: KafkaZkClient) -> None:
    zk.register_broker(broker(0))
    admin = AdminZkClient(zk)
    admin.create_topic("doomed", 2, 1, {"retention.ms": "1"})
    zk.create_topic_partition_states(
        {TopicPartition("doomed", 0): LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1)}
    )
    admin.delete_topic("doomed")
    assert zk.get_topic_deletions() == ["doomed"] and zk.is_topic_marked_for_deletion("doomed")
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        admin.delete_topic("doomed")
    with pytest.raises(TopicExistsException, match="marked for deletion"):
        admin.create_topic("doomed", 1, 1)
    with pytest.raises(UnknownTopicOrPartitionException):
        admin.delete_topic("never")

    zk.delete_topic_paths("doomed")
    assert not zk.topic_exists("doomed")
    assert not zk.path_exists("/config/topics/doomed")
    assert zk.get_topic_deletions() == []


def test_topic_config_change_writes_a_notification(zk: KafkaZkClient) -> None:
    zk.create_topic_assignment("t", None, {0: [0]}, {})
    admin = AdminZkClient(zk)
    admin.change_topic_config("t", {"cleanup.policy": "compact"})
    assert admin.fetch_entity_config("topics", "t") == {"cleanup.policy": "compact"}
    assert zk.get_config_change_notifications() == ["config_change_0000000000"]
    raw = zk.get_data("/config/changes/config_change_0000000000")
    assert raw is not None and raw[0] == b'{"version":2,"entity_path":"topics/t"}'
    admin.change_entity_config("users", "alice@corp", {"producer_byte_rate": "1024"})
    assert zk.get_entity_configs("users", "alice%40corp") == {"producer_byte_rate": "1024"}
    assert len(zk.get_config_change_notifications()) == 2
    with pytest.raises(UnknownTopicOrPartitionException):
        admin.change_topic_config("missing", {})


def test_isr_change_notifications(zk: KafkaZkClient) -> None:
    zk.propagate_isr_changes([TopicPartition("a", 0), TopicPartition("b", 1)])
    zk.propagate_isr_changes([TopicPartition("a", 0)])
    seqs = zk.get_all_isr_change_notifications()
    assert seqs == ["0000000000", "0000000001"]
    assert zk.get_partitions_from_isr_change_notifications(seqs) == [("a", 0), ("b", 1)]
    zk.delete_isr_change_notifications(seqs[:1])
    assert zk.get_all_isr_change_notifications() == ["0000000001"]
    zk.delete_isr_change_notifications()
    assert zk.get_all_isr_change_notifications() == []


def test_reassignment_and_preferred_election_znodes(zk: KafkaZkClient) -> None:
    assert zk.get_partition_reassignment() == {} and not zk.reassign_partitions_in_progress()
    zk.create_partition_reassignment({TopicPartition("t", 0): [1, 2]})
    with pytest.raises(NodeExistsError):
        zk.create_partition_reassignment({TopicPartition("t", 1): [1]})
    assert zk.get_partition_reassignment() == {("t", 0): [1, 2]}
    zk.set_or_create_partition_reassignment({TopicPartition("t", 0): [2]})
    assert zk.get_partition_reassignment() == {("t", 0): [2]}
    zk.delete_partition_reassignment()
    assert not zk.reassign_partitions_in_progress()

    zk.create_preferred_replica_election([TopicPartition("t", 0)])
    assert zk.get_preferred_replica_election() == {("t", 0)}
    zk.delete_preferred_replica_election()
    assert zk.get_preferred_replica_election() == set()


# -- watches and sessions ---------------------------------------------------------------------


class RecordingNodeHandler(ZNodeChangeHandler):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.events: list[str] = []

    def handle_creation(self) -> None:
        self.events.append("created")

    def handle_deletion(self) -> None:
        self.events.append("deleted")

    def handle_data_change(self) -> None:
        self.events.append("changed")


class RecordingChildHandler(ZNodeChildChangeHandler):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.count = 0

    def handle_child_change(self) -> None:
        self.count += 1


def test_data_watch_fires_and_rearms(zk: KafkaZkClient) -> None:
    path = "/admin/reassign_partitions"
    handler = RecordingNodeHandler(path)
    assert zk.register_znode_change_handler_and_check_existence(handler) is False
    zk.create_recursive(path, b"1")
    wait_for(lambda: handler.events == ["created"])
    zk.set_data(path, b"2")
    wait_for(lambda: handler.events == ["created", "changed"])
    zk.set_data(path, b"3")
    wait_for(lambda: handler.events == ["created", "changed", "changed"])
    zk.delete_path(path)
    wait_for(lambda: handler.events[-1:] == ["deleted"])
    zk.create_recursive(path, b"4")
    wait_for(lambda: handler.events[-1:] == ["created"])
    zk.unregister_znode_change_handler(path)
    seen = len(handler.events)
    zk.set_data(path, b"5")
    time.sleep(0.3)
    assert len(handler.events) == seen


def test_child_watch_fires_and_rearms(zk: KafkaZkClient) -> None:
    handler = RecordingChildHandler("/brokers/ids")
    zk.register_znode_child_change_handler(handler)
    zk.register_broker(broker(1))
    wait_for(lambda: handler.count == 1)
    zk.register_broker(broker(2))
    wait_for(lambda: handler.count == 2)
    zk.delete_path("/brokers/ids/1")
    wait_for(lambda: handler.count == 3)

    # A child watch on a znode that does not exist yet starts working once it is created.
    late = RecordingChildHandler("/consumers/g/ids")
    zk.register_znode_child_change_handler(late)
    zk.create_recursive("/consumers/g/ids/c1", b"")
    wait_for(lambda: late.count >= 1)
    before = late.count
    zk.create_recursive("/consumers/g/ids/c2", b"")
    wait_for(lambda: late.count == before + 1)


class ReRegistering(StateChangeHandler):
    def __init__(self, zk: KafkaZkClient, info: BrokerInfo) -> None:
        super().__init__("broker-registration")
        self.zk, self.info = zk, info
        self.events: list[str] = []

    def before_initializing_session(self) -> None:
        self.events.append("expired")

    def after_initializing_session(self) -> None:
        self.events.append("new session")
        self.zk.register_broker(self.info)


def test_session_expiry_reregisters_broker_and_keeps_watches(zk: KafkaZkClient, zk_connect: str) -> None:
    info = broker(3)
    zk.register_broker(info)
    handler = ReRegistering(zk, info)
    zk.register_state_change_handler(handler)
    plain_events: list[str] = []
    zk.register_state_change_handler(plain_events.append)
    watcher = RecordingChildHandler("/brokers/topics")
    zk.register_znode_child_change_handler(watcher)
    old_session = zk.session_id

    expire_session(zk, zk_connect.split("/")[0])

    wait_for(lambda: handler.events == ["expired", "new session"])
    wait_for(lambda: plain_events == ["session_expired", "new_session"])
    assert zk.session_id != old_session
    wait_for(lambda: zk.get_broker(3) is not None)
    stat = zk.kazoo.exists("/brokers/ids/3")
    assert stat is not None and stat.ephemeralOwner == zk.session_id
    # Watches survive into the new session.
    zk.create_topic_assignment("after", None, {0: [3]})
    wait_for(lambda: watcher.count >= 1)
