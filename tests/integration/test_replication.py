"""Replication across three real brokers: followers fetch, the high watermark advances, the ISR
shrinks and expands in ZooKeeper, and acknowledged records survive the loss of their leader.

Every test runs its own ZooKeeper and three kafkapy broker processes (kafkapy.testing) and talks
to them with confluent-kafka (librdkafka), as an application would. Partition state is read
straight from ZooKeeper (/brokers/topics/<t>/partitions/<p>/state), where the leader writes
its ISR changes. Topics are created with an explicit replica assignment so that the leader is
a broker the test chooses (never the controller when the test kills the leader, so that only
one failover is being measured).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster

pytestmark = pytest.mark.timeout(120)

WAIT_S = 30.0
FAST = {
    # Followers retry quickly after NOT_LEADER/UNKNOWN_TOPIC while a new topic's state spreads.
    "replica.fetch.backoff.ms": "200",
    "replica.lag.time.max.ms": "3000",
    # The last broker to stop has nowhere to move its leaders: do not retry that for 15 s.
    "controlled.shutdown.retry.backoff.ms": "200",
}


# -- helpers ----------------------------------------------------------------------------------


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def partition_state(zk: KazooClient, topic: str, partition: int = 0) -> dict[str, Any] | None:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    if not zk.exists(path):
        return None
    data, _ = zk.get(path)
    return json.loads(data)


def controller_id(zk: KazooClient) -> int:
    data, _ = zk.get("/controller")
    return int(json.loads(data)["brokerid"])


def create_topic(
    cluster: KafkapyCluster,
    zk: KazooClient,
    topic: str,
    replicas: list[int],
    config: dict[str, str] | None = None,
) -> None:
    """One partition on `replicas` (the first one leads); returns once every replica is in sync."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replica_assignment=[replicas], config=config or {})]
    )
    futures[topic].result(WAIT_S)
    wait_until(
        lambda: (
            (s := partition_state(zk, topic))
            and s["leader"] == replicas[0]
            and sorted(s["isr"]) == sorted(replicas)
        ),
        f"{topic} led by {replicas[0]} with ISR {replicas}",
    )


def producer(cluster: KafkapyCluster, **extra: Any) -> Producer:
    return Producer({
        "bootstrap.servers": cluster.bootstrap_servers,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 60000,
        **extra,
    })  # fmt: skip


def produce_all(p: Producer, topic: str, values: list[bytes]) -> dict[bytes, int]:
    """Produce and flush; {value: offset} of everything acknowledged, errors raised."""
    acked: dict[bytes, int] = {}
    errors: list[Any] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = msg.offset()

    for v in values:
        p.produce(topic, v, on_delivery=report)
        p.poll(0)
    assert p.flush(WAIT_S) == 0
    assert errors == []
    return acked


def consume(cluster: KafkapyCluster, topic: str, expected: int) -> list[tuple[int, bytes]]:
    """(offset, value) of the partition from offset 0 until `expected` records (from the leader)."""
    c = Consumer({
        "bootstrap.servers": ",".join(b.bootstrap for b in cluster.brokers if b.is_running()),
        "group.id": "replication-test",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    })  # fmt: skip
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is None:
                    out.append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def other_than(cluster: KafkapyCluster, *ids: int) -> list[int]:
    return [b.broker_id for b in cluster.brokers if b.broker_id not in ids]


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.kafkapy_cluster(brokers=3, overrides={**FAST, "zookeeper.session.timeout.ms": "6000"})
def test_acks_all_is_replicated_and_readable_from_the_next_leader(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = controller_id(zk)
    leader, *followers = [*other_than(kafkapy_cluster, controller), controller]
    create_topic(kafkapy_cluster, zk, "replicated", [leader, *followers])

    values = [f"record-{i}".encode() for i in range(2000)]
    acked = produce_all(producer(kafkapy_cluster), "replicated", values)
    assert sorted(acked.values()) == list(range(2000))
    first = consume(kafkapy_cluster, "replicated", 2000)
    assert first == sorted((o, v) for v, o in acked.items())

    # The leader's data must also be on the followers: lose the leader, read it all from the next.
    kafkapy_cluster.broker(leader).kill()
    state = wait_until(
        lambda: (s := partition_state(zk, "replicated")) and s["leader"] not in (leader, -1) and s,
        "a new leader",
    )
    assert leader not in state["isr"]
    assert consume(kafkapy_cluster, "replicated", 2000) == first


@pytest.mark.slow
@pytest.mark.kafkapy_cluster(brokers=3, overrides={**FAST, "zookeeper.session.timeout.ms": "6000"})
def test_leader_killed_while_producing_loses_no_acknowledged_record(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = controller_id(zk)
    leader, *followers = [*other_than(kafkapy_cluster, controller), controller]
    create_topic(kafkapy_cluster, zk, "failover", [leader, *followers])

    p = producer(kafkapy_cluster, retries=1_000_000, **{"retry.backoff.ms": 100})
    acked: dict[bytes, int] = {}
    errors: list[Any] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = msg.offset()

    n = 3000
    for i in range(n):
        p.produce("failover", f"v{i}".encode(), on_delivery=report)
        p.poll(0)
        if i == n // 3:
            # Kill once a good share is acknowledged, with the rest of this third still in flight.
            wait_until(lambda: p.poll(0.05) is not None and len(acked) >= n // 6, "acknowledgements")
            kafkapy_cluster.broker(leader).kill()
        time.sleep(0.001)
    assert p.flush(WAIT_S + 30) == 0
    assert errors == []

    state = partition_state(zk, "failover")
    assert state is not None and state["leader"] in followers
    records = dict(consume(kafkapy_cluster, "failover", max(acked.values()) + 1))
    # Every acknowledged record is at the very offset it was acknowledged with.
    lost = {v: o for v, o in acked.items() if records.get(o) != v}
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost.items())[:5]}"
    assert len(acked) == n


@pytest.mark.kafkapy_cluster(brokers=3, overrides=FAST)
def test_min_insync_replicas_refuses_acks_all_when_the_isr_is_too_small(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    leader = controller_id(zk)  # stopping the two others leaves the controller running
    followers = other_than(kafkapy_cluster, leader)
    create_topic(kafkapy_cluster, zk, "guarded", [leader, *followers], {"min.insync.replicas": "2"})
    assert len(produce_all(producer(kafkapy_cluster), "guarded", [b"while-healthy"])) == 1

    for f in followers:
        kafkapy_cluster.broker(f).stop()
    wait_until(lambda: partition_state(zk, "guarded")["isr"] == [leader], "the ISR to shrink to the leader")

    outcome: list[Any] = []
    strict = producer(kafkapy_cluster, retries=0, **{"message.timeout.ms": 10000})
    strict.produce("guarded", b"refused", on_delivery=lambda err, msg: outcome.append(err))
    strict.flush(WAIT_S)
    assert len(outcome) == 1 and outcome[0] is not None
    assert outcome[0].code() == KafkaError.NOT_ENOUGH_REPLICAS

    relaxed = producer(kafkapy_cluster, acks="1")
    assert len(produce_all(relaxed, "guarded", [b"acks-one"])) == 1


@pytest.mark.slow
@pytest.mark.kafkapy_cluster(brokers=3, overrides=FAST)
def test_leader_shrinks_the_isr_for_a_stuck_follower_and_expands_it_when_it_catches_up(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    controller = controller_id(zk)
    leader, follower = other_than(kafkapy_cluster, controller)
    create_topic(kafkapy_cluster, zk, "shrinking", [leader, follower, controller])
    p = producer(kafkapy_cluster)
    produce_all(p, "shrinking", [b"before"])

    # SIGSTOP: the follower stops fetching but keeps its ZooKeeper session (18 s) for now, so the
    # controller sees nothing; only the leader's replica.lag.time.max.ms (3 s) can react.
    stuck = kafkapy_cluster.broker(follower)
    assert stuck.process is not None
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.broker(leader).bootstrap})

    def metadata_isr() -> list[int]:
        # librdkafka may ask any broker it knows, the stopped one included: that try times out.
        try:
            md = admin.list_topics("shrinking", timeout=5)
        except KafkaException:
            return []
        return sorted(md.topics["shrinking"].partitions[0].isrs)

    stuck.process.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        # An acks=all produce waits for the stuck follower, then completes once it leaves the ISR.
        acked = produce_all(p, "shrinking", [b"during"])
        assert acked == {b"during": 1}
        assert time.monotonic() - started < 20
        # The high watermark already counts the ISR change being written (as Kafka's does), so the
        # ack may come just before the ZooKeeper write lands: wait for it.
        wait_until(
            lambda: sorted(partition_state(zk, "shrinking")["isr"]) == sorted([leader, controller]),
            "the smaller ISR in ZooKeeper",
            10,
        )
        assert partition_state(zk, "shrinking")["leader"] == leader
        # The ISR change notification makes the controller send UpdateMetadata to every broker.
        wait_until(
            lambda: metadata_isr() == sorted([leader, controller]), "UpdateMetadata with the smaller ISR", 30
        )
    finally:
        stuck.process.send_signal(signal.SIGCONT)
    assert "Shrinking ISR from" in kafkapy_cluster.broker(leader).server_log()

    wait_until(
        lambda: follower in partition_state(zk, "shrinking")["isr"], "the follower to rejoin the ISR", 20
    )
    assert "Expanding ISR from" in kafkapy_cluster.broker(leader).server_log()
    wait_until(
        lambda: metadata_isr() == sorted([leader, follower, controller]),
        "UpdateMetadata with the full ISR",
        20,
    )
    assert consume(kafkapy_cluster, "shrinking", 2) == [(0, b"before"), (1, b"during")]
