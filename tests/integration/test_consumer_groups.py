"""Consumer groups end to end: a real broker and ZooKeeper, and group members of each client
library (kafka-python, confluent-kafka, aiokafka) running as separate processes.

Each member is this very file run as a script (`python test_consumer_groups.py <client> ...`): it
subscribes, reports every assignment it is given, and after each poll commits synchronously and
then reports what it consumed, so "reported" means "consumed and committed". Members stop
cleanly on SIGTERM (leaving the group) and are SIGKILLed to play a crashed member whose session
must time out. One scenario per client walks through a group's life:

    three members split the six partitions  -> each message consumed exactly once
    one member leaves                       -> the other two take its partitions
    one member is killed                    -> after its session timeout the last one has all six
    every member gone, more messages        -> a new member resumes from the committed offsets
    a second group                          -> receives every message on its own
    broker restart                          -> committed offsets and the group survive
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PARTITIONS = 6
SESSION_TIMEOUT_MS = 3000
WAIT_S = 60.0
CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")


# -- the member process -------------------------------------------------------------------------


def _emit(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def _run_kafka_python(bootstrap: str, group: str, topic: str, client_id: str, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            _emit("assigned", partitions=[])

        def on_partitions_assigned(self, assigned: list) -> None:  # type: ignore[type-arg]
            _emit("assigned", partitions=sorted(tp.partition for tp in assigned))

    c = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, client_id=client_id, auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=500,
    )  # fmt: skip
    c.subscribe([topic], listener=Listener())
    while not stop.is_set():
        batch = c.poll(200)
        if batch:
            c.commit()
            _emit(
                "consumed",
                records=[[r.partition, r.offset, r.value.decode()] for rs in batch.values() for r in rs],
            )
    c.close()


def _run_confluent(bootstrap: str, group: str, topic: str, client_id: str, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 500,
        }
    )  # fmt: skip
    c.subscribe(
        [topic],
        on_assign=lambda _c, ps: _emit("assigned", partitions=sorted(p.partition for p in ps)),
        on_revoke=lambda _c, ps: _emit("assigned", partitions=[]),
    )
    while not stop.is_set():
        msgs = [m for m in c.consume(500, 0.2) if m.error() is None]
        if msgs:
            c.commit(asynchronous=False)
            _emit("consumed", records=[[m.partition(), m.offset(), m.value().decode()] for m in msgs])
    c.close()


def _run_aiokafka(bootstrap: str, group: str, topic: str, client_id: str, stop: threading.Event) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            _emit("assigned", partitions=[])

        def on_partitions_assigned(self, assigned: object) -> None:
            _emit("assigned", partitions=sorted(tp.partition for tp in assigned))  # type: ignore[attr-defined]

    async def main() -> None:
        c = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=client_id, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=500,
        )  # fmt: skip
        c.subscribe([topic], listener=Listener())
        await c.start()
        try:
            while not stop.is_set():
                batch = await c.getmany(timeout_ms=200)
                if batch:
                    await c.commit()
                    records = [[r.partition, r.offset, r.value.decode()] for rs in batch.values() for r in rs]
                    _emit("consumed", records=records)
        finally:
            await c.stop()

    asyncio.run(main())


def member_main(argv: list[str]) -> None:
    client, bootstrap, group, topic, client_id = argv
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner = {"kafka-python": _run_kafka_python, "confluent-kafka": _run_confluent, "aiokafka": _run_aiokafka}
    runner[client](bootstrap, group, topic, client_id, stop)
    _emit("closed")


# -- the test side ------------------------------------------------------------------------------


class Member:
    """One member process and what it reported."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.name = name
        self.assignment: list[int] = []
        self.consumed: list[tuple[int, int, str]] = []
        self.closed = False
        self.proc = subprocess.Popen(
            [sys.executable, __file__, client, bootstrap, group, topic, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event["event"] == "assigned":
                self.assignment = event["partitions"]
            elif event["event"] == "consumed":
                self.consumed.extend(tuple(r) for r in event["records"])
            elif event["event"] == "closed":
                self.closed = True

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """A clean close: the client leaves the group."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self._reader.join(5)

    def kill(self) -> None:
        """A crash: no LeaveGroup; only the session timeout tells the coordinator."""
        self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def covers_all(members: list[Member]) -> bool:
    """The members' partitions are disjoint, non-empty each, and cover the whole topic."""
    parts = [p for m in members for p in m.assignment]
    return all(m.assignment for m in members) and sorted(parts) == list(range(PARTITIONS))


def values(members: list[Member]) -> list[str]:
    return [v for m in members for _, _, v in m.consumed]


def assert_exactly_once(members: list[Member], expected: set[str]) -> None:
    counts = Counter(values(members))
    duplicates = {v: n for v, n in counts.items() if n > 1}
    assert not duplicates, f"consumed more than once: {sorted(duplicates)[:10]}"
    assert set(counts) == expected


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from kafkapy.testing import kafkapy_cluster_context

    overrides = {"group.min.session.timeout.ms": "1000"}
    with kafkapy_cluster_context(1, overrides, tmp_path_factory.mktemp("groups")) as c:
        yield c


class Producer:
    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        self.sent = 0

    def send(self, n: int) -> set[str]:
        batch = {str(self.sent + i) for i in range(n)}
        for i in range(n):
            self.producer.send(
                self.topic, str(self.sent + i).encode(), partition=(self.sent + i) % PARTITIONS
            )
        self.producer.flush()
        self.sent += n
        return batch


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _committed(bootstrap: str, group: str) -> tuple[dict[int, int], dict]:  # type: ignore[type-arg]
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)
        described = admin.describe_groups([group])[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets[group].items()}, described


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("client", CLIENTS)
def test_group_life(cluster: object, client: str) -> None:
    bootstrap = cluster.bootstrap_servers  # type: ignore[attr-defined]
    topic = f"groups-{client}-{uuid.uuid4().hex[:6]}"
    group = f"group-{client}"
    _create_topic(bootstrap, topic)
    producer = Producer(bootstrap, topic)
    members: list[Member] = []

    def member(name: str, in_group: str = group) -> Member:
        m = Member(client, bootstrap, in_group, topic, name)
        members.append(m)
        return m

    try:
        # Three members split the six partitions; each message is consumed exactly once.
        m1, m2, m3 = member("m1"), member("m2"), member("m3")
        wait_until(lambda: covers_all([m1, m2, m3]), "three members own disjoint partitions covering all six")
        expected = producer.send(600)
        wait_until(lambda: len(values([m1, m2, m3])) >= 600, "600 messages consumed")
        assert_exactly_once([m1, m2, m3], expected)

        # A member that leaves hands its partitions to the others.
        m3.stop()
        wait_until(lambda: covers_all([m1, m2]), "the two remaining members own all six partitions")
        expected |= producer.send(600)
        wait_until(lambda: len(values([m1, m2, m3])) >= 1200, "1200 messages consumed")
        assert_exactly_once([m1, m2, m3], expected)

        # A member that dies is expelled after its session timeout.
        m2.kill()
        wait_until(
            lambda: covers_all([m1]),
            "the last member owns all six partitions",
            SESSION_TIMEOUT_MS / 1000 + 30,
        )
        expected |= producer.send(300)
        wait_until(lambda: len(values([m1, m2, m3])) >= 1500, "1500 messages consumed")
        assert_exactly_once([m1, m2, m3], expected)

        # A new member resumes from the committed offsets.
        m1.stop()
        fresh = producer.send(300)
        m4 = member("m4")
        wait_until(lambda: len(m4.consumed) >= 300, "the new member consumed the 300 new messages")
        time.sleep(1)
        assert_exactly_once([m4], fresh)
        expected |= fresh

        # A second group gets everything on its own.
        other = member("other", f"{group}-second")
        wait_until(lambda: len(other.consumed) >= len(expected), "the second group consumed everything")
        assert_exactly_once([other], expected)

        # Committed offsets and the group survive a broker restart.
        m4.stop()
        other.stop()
        before, described = _committed(bootstrap, group)
        assert sum(before.values()) == len(expected)
        assert described["group_state"] == "Empty"
        cluster.brokers[0].restart()  # type: ignore[attr-defined]
        cluster.wait_until_ready()  # type: ignore[attr-defined]
        wait_until(lambda: _safe_committed(bootstrap, group) == before, "offsets readable after the restart")
        after, described = _committed(bootstrap, group)
        assert described["group_state"] == "Empty" and described["protocol_type"] == "consumer"
        producer = Producer(bootstrap, topic)
        producer.sent = len(expected)
        fresh = producer.send(60)
        m5 = member("m5")
        wait_until(lambda: len(m5.consumed) >= 60, "a member after the restart consumed the new messages")
        time.sleep(1)
        assert_exactly_once([m5], fresh)
    finally:
        for m in members:
            if m.alive:
                m.kill()


def _safe_committed(bootstrap: str, group: str) -> dict[int, int] | None:
    try:
        return _committed(bootstrap, group)[0]
    except Exception:
        return None


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    member_main(sys.argv[1:])
