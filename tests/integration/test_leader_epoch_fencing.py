"""Leader epochs on the wire (KIP-101, KIP-320), on two real brokers and a real ZooKeeper.

The leader of a replicated partition is stopped cleanly, so the follower leads in a new epoch;
then:
- over kafkapy's own BrokerConnection, OffsetForLeaderEpoch answers where each epoch ended,
  and Fetch, ListOffsets and OffsetForLeaderEpoch naming the old epoch are refused with
  FENCED_LEADER_EPOCH, naming a future one with UNKNOWN_LEADER_EPOCH;
- a confluent-kafka (librdkafka) consumer that committed offsets stamped with the old epoch
  validates its position against the new leader (OffsetForLeaderEpoch) and goes on reading:
  every record once, in order, no offset reset, no truncation reported;
- so does a kafka-python 3 consumer (OffsetForLeaderEpoch v4, flexible).

The partition's leader is the broker that is not the controller, so that stopping it moves
leadership without also moving the controller.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import FencedLeaderEpochException, UnknownLeaderEpochException
from kafkapy.protocol.message import Message
from kafkapy.testing import KafkapyCluster

WAIT_S = 30.0
FAST = {"replica.fetch.backoff.ms": "200", "replica.lag.time.max.ms": "3000"}
FENCED = FencedLeaderEpochException.code
UNKNOWN_EPOCH = UnknownLeaderEpochException.code
TOPIC = "epochs"

pytestmark = [pytest.mark.kafkapy_cluster(brokers=2, overrides=FAST), pytest.mark.timeout(180)]


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def partition_state(zk: KazooClient) -> dict[str, Any] | None:
    path = f"/brokers/topics/{TOPIC}/partitions/0/state"
    return json.loads(zk.get(path)[0]) if zk.exists(path) else None


def controller_id(zk: KazooClient) -> int:
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def create_topic_led_by_the_other_broker(cluster: KafkapyCluster, zk: KazooClient) -> tuple[int, int]:
    """(leader, follower): one partition, RF 2, led by the broker that is not the controller."""
    follower = controller_id(zk)
    leader = 1 - follower
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[[leader, follower]])])[
        TOPIC
    ].result(WAIT_S)
    wait_until(
        lambda: (s := partition_state(zk)) and s["leader"] == leader and sorted(s["isr"]) == [0, 1],
        f"{TOPIC} led by {leader} with both replicas in sync",
    )
    return leader, follower


def produce(cluster: KafkapyCluster, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "message.timeout.ms": 60000})
    errors: list[Any] = []
    for v in values:
        p.produce(TOPIC, v, on_delivery=lambda err, msg: err is not None and errors.append(err))
    assert p.flush(WAIT_S) == 0 and errors == []


def move_leadership(cluster: KafkapyCluster, zk: KazooClient, leader: int, follower: int) -> int:
    """Stop the leader cleanly; the follower leads, alone in the ISR. Returns the leader epoch
    once the follower's own metadata names it (the election and the ISR shrink may each bump
    the epoch, so the first new epoch seen in ZooKeeper need not be the last)."""
    before = partition_state(zk)
    assert before is not None
    cluster.broker(leader).stop()
    state = wait_until(
        lambda: (s := partition_state(zk)) and s["leader"] == follower and s["isr"] == [follower] and s,
        f"broker {follower} leading {TOPIC} alone",
    )
    epoch = int(state["leader_epoch"])
    assert epoch > before["leader_epoch"]
    with connection(cluster, follower) as conn:
        wait_until(
            lambda: metadata_epoch(conn) == (follower, epoch),
            f"broker {follower}'s metadata at epoch {epoch}",
        )
    return epoch


def metadata_epoch(conn: BrokerConnection) -> tuple[int, int]:
    """(leader, leader epoch) of the partition in a broker's Metadata answer."""
    md = conn.send(ApiKey.METADATA, 9, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False})
    assert md is not None
    p = md.topics[0].partitions[0]
    return p.leader_id, p.leader_epoch


@contextlib.contextmanager
def connection(cluster: KafkapyCluster, broker_id: int) -> Iterator[BrokerConnection]:
    conn = BrokerConnection("127.0.0.1", cluster.broker(broker_id).port, "fencing-test", 10.0)
    try:
        yield conn
    finally:
        conn.close()


def offset_for_leader_epoch(
    conn: BrokerConnection, current_leader_epoch: int, leader_epoch: int, version: int = 3
) -> Message:
    body = {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
        {"partition": 0, "current_leader_epoch": current_leader_epoch, "leader_epoch": leader_epoch}]}]}  # fmt: skip
    resp = conn.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, body)
    assert resp is not None
    return resp.topics[0].partitions[0]


def fetch(conn: BrokerConnection, current_leader_epoch: int) -> Message:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": current_leader_epoch,
                    "fetch_offset": 0, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
    }  # fmt: skip
    resp = conn.send(ApiKey.FETCH, 12, body)
    assert resp is not None and resp.error_code == 0
    return resp.responses[0].partitions[0]


def list_offsets(conn: BrokerConnection, current_leader_epoch: int, timestamp: int) -> Message:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "current_leader_epoch": current_leader_epoch, "timestamp": timestamp}]}]}  # fmt: skip
    resp = conn.send(ApiKey.LIST_OFFSETS, 7, body)
    assert resp is not None
    return resp.topics[0].partitions[0]


def test_epoch_end_offsets_and_fencing_over_the_wire(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    leader, follower = create_topic_led_by_the_other_broker(kafkapy_cluster, zk)
    produce(kafkapy_cluster, [b"old-%d" % i for i in range(5)])  # offsets 0-4 in epoch 0
    epoch = move_leadership(kafkapy_cluster, zk, leader, follower)
    with connection(kafkapy_cluster, follower) as conn:
        # The new leader answers once it has applied the controller's LeaderAndIsr.
        wait_until(
            lambda: offset_for_leader_epoch(conn, epoch, epoch).error_code == 0, "the new leader's answer"
        )
        produce(kafkapy_cluster, [b"new-%d" % i for i in range(3)])  # offsets 5-7 in the new epoch

        for version in (2, 3, 4):  # librdkafka sends v2, kafka-python up to v4 (flexible)
            now = offset_for_leader_epoch(conn, epoch, epoch, version)
            assert (now.error_code, now.leader_epoch, now.end_offset) == (0, epoch, 8)
            old = offset_for_leader_epoch(conn, epoch, 0, version)
            assert (old.error_code, old.leader_epoch, old.end_offset) == (0, 0, 5)
        future = offset_for_leader_epoch(conn, epoch, epoch + 5)
        assert (future.error_code, future.leader_epoch, future.end_offset) == (0, -1, -1)
        assert offset_for_leader_epoch(conn, epoch - 1, 0).error_code == FENCED
        assert offset_for_leader_epoch(conn, epoch + 1, 0).error_code == UNKNOWN_EPOCH

        assert fetch(conn, epoch - 1).error_code == FENCED
        assert fetch(conn, epoch + 1).error_code == UNKNOWN_EPOCH
        current = fetch(conn, epoch)
        assert current.error_code == 0 and current.high_watermark == 8 and len(current.records or b"") > 0
        assert fetch(conn, -1).error_code == 0  # no epoch named: never fenced

        assert list_offsets(conn, epoch - 1, -1).error_code == FENCED
        assert list_offsets(conn, epoch + 1, -1).error_code == UNKNOWN_EPOCH
        latest = list_offsets(conn, epoch, -1)
        assert (latest.error_code, latest.offset, latest.leader_epoch) == (0, 8, epoch)
        earliest = list_offsets(conn, epoch, -2)
        assert (earliest.error_code, earliest.offset, earliest.leader_epoch) == (0, 0, 0)

        # Metadata carries the controller's leader epoch, the one clients then send back.
        assert metadata_epoch(conn) == (follower, epoch)
        assert partition_state(zk)["leader_epoch"] == epoch  # type: ignore[index]


class Lines(logging.Handler):
    """librdkafka's log lines (its `logger` config hands them to Python logging)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def having(self, text: str) -> list[str]:
        return [line for line in list(self.lines) if text in line]


def group_coordinated_by(cluster: KafkapyCluster, broker_id: int, prefix: str) -> str:
    """A group id whose coordinator is `broker_id`: __consumer_offsets has one replica here,
    and the group must outlive the other broker."""

    def coordinator(group: str) -> int | None:
        with connection(cluster, broker_id) as conn:
            resp = conn.send(ApiKey.FIND_COORDINATOR, 2, {"key": group, "key_type": 0})
        return resp.node_id if resp is not None and resp.error_code == 0 else None

    # The first question creates __consumer_offsets; wait until its partitions have leaders.
    wait_until(lambda: coordinator(f"{prefix}-probe") is not None, "a group coordinator")
    return next(g for g in (f"{prefix}-{i}" for i in range(200)) if coordinator(g) == broker_id)


def consumer(cluster: KafkapyCluster, group: str, lines: Lines) -> Consumer:
    log = logging.getLogger(f"librdkafka.{group}.{id(lines)}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(lines)
    return Consumer({
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": group,
        "enable.auto.commit": False,
        # A reset must surface as an error here instead of silently moving the position.
        "auto.offset.reset": "error",
        "topic.metadata.refresh.interval.ms": 1000,
        "debug": "fetch",
        "logger": log,
    })  # fmt: skip


# Errors a consumer may see while a broker goes away; anything else (an offset reset, a log
# truncation, OFFSET_OUT_OF_RANGE) fails the test.
TRANSIENT = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}


def read(c: Consumer, want: int, got: list[tuple[int, bytes]], errors: list[KafkaError]) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(got) < want and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            errors.append(msg.error())
            continue
        got.append((msg.offset(), msg.value()))
    assert [e for e in errors if e.code() not in TRANSIENT] == []
    assert len(got) >= want, f"read {len(got)} of {want} records"


def committed(c: Consumer) -> tuple[int, int | None]:
    tp = c.committed([TopicPartition(TOPIC, 0)], timeout=10)[0]
    return tp.offset, tp.leader_epoch


def test_confluent_consumer_keeps_its_position_across_a_leader_change(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    leader, follower = create_topic_led_by_the_other_broker(kafkapy_cluster, zk)
    values = [b"v-%03d" % i for i in range(300)]
    produce(kafkapy_cluster, values[:100])

    # Both groups are placed now: once the leader stops, half of __consumer_offsets is offline.
    running_group = group_coordinated_by(kafkapy_cluster, follower, "running")
    resumed_group = group_coordinated_by(kafkapy_cluster, follower, "resumed")
    lines = Lines()
    running = consumer(kafkapy_cluster, running_group, lines)
    # With auto.offset.reset=error the group needs a committed start; offset 0 carries no epoch.
    running.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)
    running.subscribe([TOPIC])
    got: list[tuple[int, bytes]] = []
    errors: list[KafkaError] = []
    read(running, 100, got, errors)
    running.commit(asynchronous=False)
    assert committed(running) == (100, 0)  # the commit carries the epoch of the last record read

    epoch = move_leadership(kafkapy_cluster, zk, leader, follower)
    produce(kafkapy_cluster, values[100:200])
    read(running, 200, got, errors)
    # librdkafka saw the new epoch in its metadata and asked the new leader (OffsetForLeaderEpoch)
    # where epoch 0 ended before fetching on (KIP-320): at 100, the consumer's position.
    wait_until(
        lambda: lines.having("validation succeeded: broker end offset 100 (offset leader epoch 0)"),
        "librdkafka's epoch validation",
    )
    running.commit(asynchronous=False)
    # The commit names the epoch record 199 was written in: a new one, at most the current one.
    offset, committed_epoch = committed(running)
    assert offset == 200 and committed_epoch is not None and 0 < committed_epoch <= epoch
    running.close()
    assert got == list(enumerate(values[:200])), "every record once, in order"

    # A consumer resuming from a position committed in the old epoch reads on from it, fetching
    # with the new epoch as its current one. (librdkafka 2.x does not validate a committed
    # position on start-up: it logs "skipping offset validation in fetch state none".)
    later = Lines()
    resumed = consumer(kafkapy_cluster, resumed_group, later)
    resumed.commit(offsets=[TopicPartition(TOPIC, 0, 100, leader_epoch=0)], asynchronous=False)
    resumed.subscribe([TOPIC])
    produce(kafkapy_cluster, values[200:])
    again: list[tuple[int, bytes]] = []
    read(resumed, 200, again, [])
    resumed.close()
    assert again == [(i, values[i]) for i in range(100, 300)]
    for log in (lines, later):
        assert log.having("truncation") == [] and log.having("Reset") == []


def test_kafka_python_consumer_validates_its_position_after_a_leader_change(
    kafkapy_cluster: KafkapyCluster, zk: KazooClient
) -> None:
    """kafka-python 3 asks OffsetForLeaderEpoch (v4, flexible, replica_id -1) when the leader
    epoch in its metadata moves past its position's, and with auto_offset_reset='none' raises
    LogTruncationError if the answer says its position is gone."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.structs import OffsetAndMetadata

    leader, follower = create_topic_led_by_the_other_broker(kafkapy_cluster, zk)
    values = [b"k-%03d" % i for i in range(200)]
    produce(kafkapy_cluster, values[:100])
    lines = Lines()
    kafka_log = logging.getLogger("kafka.consumer")
    kafka_log.addHandler(lines)
    kafka_log.setLevel(logging.DEBUG)
    tp = KpTopicPartition(TOPIC, 0)
    c = KafkaConsumer(
        bootstrap_servers=kafkapy_cluster.bootstrap_servers,
        group_id=group_coordinated_by(kafkapy_cluster, follower, "kafka-python"),
        enable_auto_commit=False,
        auto_offset_reset="none",  # a reset or a truncation raises instead of moving the position
        metadata_max_age_ms=1000,
    )
    got: list[tuple[int, bytes]] = []

    def poll_until(n: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while len(got) < n and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value) for r in records)
        assert len(got) >= n, f"read {len(got)} of {n} records"

    try:
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(0, "", -1)})
        poll_until(100)
        c.commit()
        assert c.committed(tp, metadata=True).leader_epoch == 0
        move_leadership(kafkapy_cluster, zk, leader, follower)
        produce(kafkapy_cluster, values[100:])
        poll_until(200)
    finally:
        c.close()
        kafka_log.removeHandler(lines)
    assert got == list(enumerate(values)), "every record once, in order"
    # It asked the new leader (possibly first with an epoch the broker had already left behind,
    # answered FENCED_LEADER_EPOCH and retried) and went on without a truncation or reset.
    assert lines.having("Sending OffsetForLeaderEpochRequest"), "kafka-python validated its position"
    assert lines.having("Truncation detected") == []
