"""The legacy ZooKeeper consumer against a real ZooKeeper and broker.

Group members run as separate processes (so one can be SIGKILLed like a crashed consumer) and
report every message and every rebalance-listener call as JSON lines on stdout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.consumer_legacy import ConsumerConfig, Whitelist, ZookeeperConsumerConnector
from kafkapy.consumer_legacy.zk_groups import (
    DESCRIBE_HEADER,
    delete_group,
    describe_group,
    format_describe,
    list_groups,
)
from kafkapy.zk.kafka_zk_client import KafkaZkClient

CHILD = r"""
import json, sys, threading
from kafkapy.consumer_legacy import ConsumerConfig, ConsumerRebalanceListener, ZookeeperConsumerConnector

lock = threading.Lock()
def emit(**ev):
    with lock:
        sys.stdout.write(json.dumps(ev) + "\n")
        sys.stdout.flush()

class Listener(ConsumerRebalanceListener):
    def before_releasing_partitions(self, owned):
        emit(ev="release", owned={t: sorted(ps) for t, ps in owned.items()})
    def before_starting_fetchers(self, assignment):
        emit(ev="start", assignment={t: {str(p): str(th) for p, th in ps.items()} for t, ps in assignment.items()})

props, topic = json.loads(sys.argv[1]), sys.argv[2]
c = ZookeeperConsumerConnector(ConsumerConfig.from_props(props), Listener())
emit(ev="id", id=c.consumer_id)
def consume(stream):
    for m in stream:
        emit(ev="msg", p=m.partition, o=m.offset, v=m.message.decode())
threads = [threading.Thread(target=consume, args=(s,), daemon=True) for s in c.create_message_streams({topic: 1})[topic]]
for t in threads:
    t.start()
sys.stdin.read()  # the parent closes stdin to ask for a clean shutdown
c.shutdown()
for t in threads:
    t.join(10)
emit(ev="bye")
"""


class Member:
    def __init__(self, props: dict[str, str], topic: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(props), topic],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    @property
    def consumer_id(self) -> str | None:
        return next((e["id"] for e in list(self.events) if e["ev"] == "id"), None)

    def messages(self) -> list[dict]:
        return [e for e in list(self.events) if e["ev"] == "msg"]

    def listener_calls(self) -> list[dict]:
        return [e for e in list(self.events) if e["ev"] in ("release", "start")]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(30)
        self._reader.join(5)


def wait_for(cond: Callable[[], object], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def produce(
    bootstrap: str, topic: str, values: list[str], partitions: int, compression: str = "none"
) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), key=str(i).encode(), partition=i % partitions)
    assert p.flush(30) == 0


@pytest.fixture
def zk(kafkapy_cluster):
    client = KafkaZkClient(kafkapy_cluster.zookeeper_connect, 10000)
    client.start()
    yield client
    client.close()


def owners(zk: KafkaZkClient, group: str, topic: str, partitions: int) -> dict[int, str | None]:
    result = {}
    for p in range(partitions):
        got = zk.get_data(f"/consumers/{group}/owners/{topic}/{p}")
        result[p] = got[0].decode() if got else None
    return result


def offsets(zk: KafkaZkClient, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    result = {}
    for p in range(partitions):
        got = zk.get_data(f"/consumers/{group}/offsets/{topic}/{p}")
        result[p] = int(got[0]) if got else None
    return result


def test_three_members_split_partitions_and_a_killed_members_share_resumes_from_zookeeper(
    kafkapy_cluster, zk
):
    bootstrap, topic, group, n = kafkapy_cluster.bootstrap_servers, "legacy", "lg", 6
    create_topic(bootstrap, topic, n)
    first = [f"a{i}" for i in range(600)]
    produce(bootstrap, topic, first, n, compression="gzip")
    props = {
        "group.id": group,
        "zookeeper.connect": kafkapy_cluster.zookeeper_connect,
        "auto.offset.reset": "smallest",
        "auto.commit.interval.ms": "200",
        "zookeeper.session.timeout.ms": "4000",
        "rebalance.backoff.ms": "500",
        "rebalance.max.retries": "20",
    }
    members = [Member(props, topic) for _ in range(3)]
    try:
        wait_for(lambda: all(m.consumer_id for m in members), what="registrations")
        ids = {m.consumer_id for m in members}
        # Split: two partitions per member (range over three single-stream threads).
        wait_for(
            lambda: (
                {o.rsplit("-", 1)[0] if o else None for o in owners(zk, group, topic, n).values()} == ids
                and sorted(list(owners(zk, group, topic, n).values()).count(f"{i}-0") for i in ids)
                == [2, 2, 2]
            ),
            what="owners split 2/2/2",
        )
        wait_for(
            lambda: {e["v"] for m in members for e in m.messages()} == set(first), what="first batch consumed"
        )
        wait_for(
            lambda: offsets(zk, group, topic, n) == dict.fromkeys(range(n), 100), what="offsets committed"
        )

        victim, survivors = members[0], members[1:]
        victim_parts = {p for p, o in owners(zk, group, topic, n).items() if o == f"{victim.consumer_id}-0"}
        victim.kill()
        committed_at_kill = offsets(zk, group, topic, n)
        second = [f"b{i}" for i in range(600)]
        produce(bootstrap, topic, second, n)
        survivor_ids = {m.consumer_id for m in survivors}
        wait_for(
            lambda: (
                {o.rsplit("-", 1)[0] if o else None for o in owners(zk, group, topic, n).values()}
                == survivor_ids
            ),
            timeout=60,
            what="survivors owning everything",
        )
        everything = set(first) | set(second)
        wait_for(
            lambda: {e["v"] for m in members for e in m.messages()} == everything, what="no message lost"
        )
        # The victim's partitions were resumed at the offsets it had committed, not reset.
        for p in victim_parts:
            taken = [e["o"] for m in survivors for e in m.messages() if e["p"] == p]
            assert min(taken) == committed_at_kill[p] == 100

        # Describe while the group is active: the OWNER column names the threads.
        rows = describe_group(zk, group)
        assert [(r.topic, r.partition, r.log_end_offset) for r in rows] == [(topic, p, 200) for p in range(n)]
        assert {r.owner.rsplit("-", 1)[0] for r in rows} == survivor_ids
        assert format_describe(rows)[0] == DESCRIBE_HEADER
        assert not delete_group(zk, group).deleted  # consumers still active
        assert group in list_groups(zk)

        for m in survivors:
            m.stop()
            assert m.events[-1]["ev"] == "bye"
        # shutdown() committed what was consumed.
        assert offsets(zk, group, topic, n) == dict.fromkeys(range(n), 200)
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.proc.kill()

    # The listener saw, each rebalance, before_releasing_partitions then before_starting_fetchers
    # (a failed attempt, waiting for a previous owner to let go, adds a release with nothing owned).
    for m in members:
        calls = m.listener_calls()
        assert calls and calls[0]["ev"] == "release" and calls[0]["owned"] == {}
        given: set[int] = set()
        previous = "start"
        for call in calls:
            if call["ev"] == "release":
                expected = given if previous == "start" else set()
                assert set(call["owned"].get(topic, [])) == expected
                given = set()
            else:
                assert previous == "release"  # never two starts without a release between them
                given = {
                    int(p)
                    for p, th in call["assignment"].get(topic, {}).items()
                    if th == f"{m.consumer_id}-0"
                }
            previous = call["ev"]
    # After the kill, a start announced the survivors' new split of every partition.
    starts = [c["assignment"].get(topic, {}) for c in survivors[0].listener_calls() if c["ev"] == "start"]
    assert any({th.rsplit("-", 1)[0] for th in a.values()} == survivor_ids and len(a) == n for a in starts)

    # After everyone left: lag 0, no owners, and the group can be deleted.
    rows = describe_group(zk, group)
    assert [(r.current_offset, r.lag, r.owner) for r in rows] == [(200, 0, None)] * n
    assert rows[0].format().split() == [group, topic, "0", "200", "200", "0", "none"]
    assert (
        delete_group(zk, group).message
        == f"Deleted all consumer group information for group {group} in zookeeper."
    )
    assert group not in list_groups(zk)
    assert delete_group(zk, group).message == f"Delete for group {group} failed because group does not exist."


def test_filter_streams_follow_matching_topics_and_shutdown_commits(kafkapy_cluster, zk):
    bootstrap = kafkapy_cluster.bootstrap_servers
    create_topic(bootstrap, "wl-a", 2)
    create_topic(bootstrap, "other", 1)
    produce(bootstrap, "wl-a", [f"a{i}" for i in range(50)], 2, compression="snappy")
    produce(bootstrap, "other", ["x"], 1)
    config = ConsumerConfig.from_props(
        {
            "group.id": "wl",
            "zookeeper.connect": kafkapy_cluster.zookeeper_connect,
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": "3000",
            "auto.commit.interval.ms": "60000",
            "rebalance.backoff.ms": "200",
        }
    )
    connector = ZookeeperConsumerConnector(config)
    try:
        [stream] = connector.create_message_streams_by_filter(Whitelist("wl-.*"), 1)
        got = [next(stream) for _ in range(50)]
        assert {m.message for m in got} == {f"a{i}".encode() for i in range(50)}
        assert {m.topic for m in got} == {"wl-a"}
        reg = json.loads(zk.get_data(f"/consumers/wl/ids/{connector.consumer_id}")[0])
        assert (reg["version"], reg["pattern"], reg["subscription"]) == (1, "white_list", {"wl-.*": 1})
        # A new matching topic is picked up by a rebalance.
        create_topic(bootstrap, "wl-b", 1)
        produce(bootstrap, "wl-b", ["b0", "b1"], 1, compression="lz4")
        wait_for(lambda: "wl-b" in connector.owned_partitions(), what="wl-b owned")
        more = [next(stream) for _ in range(2)]
        assert [(m.topic, m.message) for m in more] == [("wl-b", b"b0"), ("wl-b", b"b1")]
    finally:
        connector.shutdown()
    # auto.commit.interval.ms is a minute: these offsets are shutdown's commit.
    assert zk.get_data("/consumers/wl/offsets/wl-b/0")[0] == b"2"
    assert sum(int(zk.get_data(f"/consumers/wl/offsets/wl-a/{p}")[0]) for p in range(2)) == 50
    assert zk.get_children("/consumers/wl/ids") == []
    assert "other" not in zk.get_children("/consumers/wl/owners")


def test_largest_reset_skips_old_messages_and_commit_offsets_writes_them(kafkapy_cluster, zk):
    bootstrap = kafkapy_cluster.bootstrap_servers
    create_topic(bootstrap, "late", 1)
    produce(bootstrap, "late", ["old"], 1)
    config = ConsumerConfig.from_props(
        {
            "group.id": "late",
            "zookeeper.connect": kafkapy_cluster.zookeeper_connect,
            "auto.commit.enable": "false",
            "consumer.timeout.ms": "5000",
        }
    )
    with ZookeeperConsumerConnector(config) as connector:
        [stream] = connector.create_message_streams({"late": 1})["late"]
        time.sleep(1.0)  # let the fetcher resolve "largest" before producing
        produce(bootstrap, "late", ["new"], 1)
        m = next(stream)
        assert (m.offset, m.message) == (1, b"new")
        assert zk.get_data("/consumers/late/offsets/late/0") is None
        connector.commit_offsets()
        assert zk.get_data("/consumers/late/offsets/late/0")[0] == b"2"
    assert os.environ.get("KAFKAPY_NEVER_SET") is None
