"""Fetch sessions (KIP-227) on real brokers: the protocol as a Java client sees it, and followers.

Invariants: a full fetch at epoch 0 opens a session; an incremental fetch answers only the
partitions with news (new records, a moved high watermark) and never one the session forgot;
a wrong epoch is INVALID_FETCH_SESSION_EPOCH, an unknown or closed session
FETCH_SESSION_ID_NOT_FOUND, a topic-id session used without ids FETCH_SESSION_TOPIC_ID_ERROR;
a sessionless fetch (librdkafka's epoch -1) gets session id 0 and every partition. A follower
of many partitions fetches incrementally once caught up: its requests name no partition and
the leader's answers carry none while nothing is produced, and what is produced still reaches it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    FetchSessionTopicIdException,
    InvalidFetchSessionEpochException,
)
from kafkapy.testing import KafkapyCluster, kafkapy_cluster_context

WAIT_S = 60.0
T = TypeVar("T")


def wait_until(probe: Callable[[], T], what: str, timeout: float = WAIT_S) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def create(cluster: KafkapyCluster, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics([NewTopic(topic, len(assignment), replica_assignment=assignment)]).values():
        f.result(WAIT_S)

    def in_sync() -> bool:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        return bool(
            md is not None
            and md.error is None
            and len(md.partitions) == len(assignment)
            and all(len(p.isrs) == len(assignment[0]) for p in md.partitions.values())
        )

    wait_until(in_sync, f"{topic} fully in sync")


def produce(cluster: KafkapyCluster, topic: str, partitions: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for partition, n in partitions.items():
        for i in range(n):
            producer.produce(topic, b"v%d" % i, partition=partition)
    assert producer.flush(WAIT_S) == 0


def fetch(
    conn: BrokerConnection,
    session_id: int,
    epoch: int,
    parts: dict[int, int],
    topic: str = "fs",
    forget: list[int] | None = None,
    version: int = 11,
    topic_id: Any = None,
) -> Any:
    name = {"topic_id": topic_id} if version >= 13 else {"topic": topic}
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                **name,
                "partitions": [
                    {
                        "partition": p,
                        "fetch_offset": o,
                        "partition_max_bytes": 1 << 16,
                        "log_start_offset": -1,
                    }
                    for p, o in parts.items()
                ],
            }
        ]
        if parts
        else [],
        "forgotten_topics_data": [{**name, "partitions": forget}] if forget else [],
    }
    return conn.send(ApiKey.FETCH, version, body)


def answered(response: Any) -> dict[int, tuple[int, int, bool]]:
    """partition -> (error code, high watermark, has records)."""
    return {
        p.partition_index: (p.error_code, p.high_watermark, bool(p.records))
        for t in response.responses
        for p in t.partitions
    }


@pytest.mark.timeout(180)
def test_session_protocol_as_a_java_client_uses_it(tmp_path: Path) -> None:
    with kafkapy_cluster_context(1, None, tmp_path / "cluster") as cluster:
        create(cluster, "fs", [[0], [0], [0]])
        produce(cluster, "fs", {0: 2, 1: 3, 2: 4})
        broker = cluster.brokers[0]
        conn = BrokerConnection("127.0.0.1", broker.port, client_id="session-test")
        try:
            conn.api_versions()
            # Sessionless (librdkafka's way): no session, every partition.
            r = fetch(conn, 0, -1, {0: 0, 1: 0, 2: 0})
            assert r.error_code == 0 and r.session_id == 0 and set(answered(r)) == {0, 1, 2}
            # Full fetch at epoch 0: a session, and every partition.
            r = fetch(conn, 0, 0, {0: 0, 1: 0, 2: 0})
            sid = r.session_id
            assert r.error_code == 0 and sid != 0
            assert answered(r) == {0: (0, 2, True), 1: (0, 3, True), 2: (0, 4, True)}
            # Incremental: the new offsets, nothing new on the broker -> no partitions at all.
            r = fetch(conn, sid, 1, {0: 2, 1: 3, 2: 4})
            assert (r.error_code, r.session_id, answered(r)) == (0, sid, {})
            r = fetch(conn, sid, 2, {})
            assert (r.error_code, r.session_id, answered(r)) == (0, sid, {})
            # New records on partition 1 only: only partition 1 is answered.
            produce(cluster, "fs", {1: 1})
            r = fetch(conn, sid, 3, {})
            assert answered(r) == {1: (0, 4, True)}
            # A wrong epoch and an unknown session are refused; the session still works after.
            assert fetch(conn, sid, 9, {}).error_code == InvalidFetchSessionEpochException.code
            assert fetch(conn, sid + 1, 1, {}).error_code == FetchSessionIdNotFoundException.code
            # Forget partition 1: its new records are no longer answered, partition 2's are.
            produce(cluster, "fs", {1: 1, 2: 1})
            r = fetch(conn, sid, 4, {}, forget=[1])
            assert (r.error_code, answered(r)) == (0, {2: (0, 5, True)})
            r = fetch(conn, sid, 5, {2: 5})
            assert (r.error_code, answered(r)) == (0, {})
            # Epoch -1 closes the session: it is unknown afterwards.
            r = fetch(conn, sid, -1, {0: 2})
            assert r.error_code == 0 and r.session_id == 0 and set(answered(r)) == {0}
            assert fetch(conn, sid, 6, {}).error_code == FetchSessionIdNotFoundException.code
            # From v13 sessions are keyed by topic id; a v12 request cannot use such a session.
            topic_id = conn.send(ApiKey.METADATA, 12, {"topics": [{"name": "fs"}]}).topics[0].topic_id
            r = fetch(conn, 0, 0, {0: 0}, version=13, topic_id=topic_id)
            assert r.error_code == 0 and r.session_id != 0
            assert [p.partition_index for t in r.responses for p in t.partitions] == [0]
            r2 = fetch(conn, r.session_id, 1, {}, version=12)
            assert r2.error_code == FetchSessionTopicIdException.code
            r3 = fetch(conn, r.session_id, 1, {0: 2}, version=13, topic_id=topic_id)
            assert (r3.error_code, r3.session_id, answered(r3)) == (0, r.session_id, {})
        finally:
            conn.close()


_FETCH_LINE = re.compile(
    r"apiKey=FETCH, apiVersion=\d+, clientId=broker-1-fetcher-\d+.*?session_id=(\d+), session_epoch=(-?\d+), "
    r"topics=\[(.).*?,response:\{size=(\d+)\}"
)


@pytest.mark.timeout(240)
def test_follower_of_many_partitions_fetches_incrementally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broker 1 follows 150 partitions led by broker 0; the leader's TRACE request log shows its
    fetches: once caught up they are incremental, name no partition and get bare answers."""
    config = tmp_path / "logging.yaml"
    config.write_text("loggers:\n  kafka.request.logger: TRACE\nretention:\n  max.rolled.files: 5\n")
    monkeypatch.setenv("KAFKAPY_LOG_CONFIG", str(config))
    partitions = 150
    overrides = {"auto.leader.rebalance.enable": "false", "replica.fetch.wait.max.ms": "200"}
    with kafkapy_cluster_context(2, overrides, tmp_path / "cluster") as cluster:
        create(cluster, "many", [[0, 1]] * partitions)
        produce(cluster, "many", {p: 3 for p in range(0, partitions, 10)})
        request_log = cluster.brokers[0].logs / "kafka-request.log"

        def fetches() -> list[tuple[int, int, bool, int]]:
            """(session id, epoch, names no partition, response bytes; 0 where the log has none)."""
            return [
                (int(m[1]), int(m[2]), m[3] == "]", int(m[4]))
                for m in _FETCH_LINE.finditer(request_log.read_text())
            ]

        def idle() -> bool:
            return sum(1 for f in fetches() if f[1] > 0 and f[2] and 0 < f[3] < 40) >= 5

        wait_until(idle, "five incremental follower fetches answered with a bare header")
        # Produce again: acks=all completes only if the follower gets the records incrementally.
        produce(cluster, "many", {5: 2, 77: 2})
        got = fetches()
    full = [f for f in got if f[1] == 0]
    incremental = [f for f in got if f[1] > 0]
    assert full, "the follower never opened a session"
    sid = incremental[-1][0]
    assert sid != 0 and all(f[0] == sid for f in incremental[-10:])
    # A full answer describes 150 partitions; incremental answers only what changed.
    biggest_full = max(f[3] for f in full + incremental[:1])
    idle_sizes = [f[3] for f in incremental if f[2] and f[3]]
    assert biggest_full > 150 * 30 and max(idle_sizes) < biggest_full / 10
    print(f"follower fetches: {len(full)} full, {len(incremental)} incremental "
          f"({sum(1 for f in incremental if f[2])} naming no partition); response bytes: full "
          f"{biggest_full}, idle incremental {min(idle_sizes)}-{max(idle_sizes)}")  # fmt: skip


@pytest.mark.timeout(180)
def test_kafkapy_consumer_reads_everything_through_an_incremental_session(tmp_path: Path) -> None:
    """kafkapy's SimpleConsumer fetches in a session: every record of 4 partitions arrives once,
    in order per partition, while most of its fetches are incremental."""
    from kafkapy.client.consumer import SimpleConsumer
    from kafkapy.common.topic_partition import TopicPartition

    with kafkapy_cluster_context(1, None, tmp_path / "cluster") as cluster:
        create(cluster, "cs", [[0]] * 4)
        produce(cluster, "cs", {0: 50, 1: 5, 2: 0, 3: 20})
        consumer = SimpleConsumer(
            cluster.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=100
        )
        try:
            consumer.assign([TopicPartition("cs", p) for p in range(4)])
            got: dict[int, list[bytes]] = {p: [] for p in range(4)}

            def drain(expected: int) -> bool:
                for r in consumer.poll(timeout_ms=200):
                    got[r.partition].append(r.value)
                return sum(len(v) for v in got.values()) >= expected

            wait_until(lambda: drain(75), "75 records")
            produce(cluster, "cs", {2: 7, 1: 1})
            wait_until(lambda: drain(83), "83 records")
            for _ in range(5):
                drain(83)
            session = consumer._sessions[0]
        finally:
            consumer.close()
    assert {p: len(v) for p, v in got.items()} == {0: 50, 1: 6, 2: 7, 3: 20}
    assert got[0] == [b"v%d" % i for i in range(50)] and got[1] == [b"v0", b"v1", b"v2", b"v3", b"v4", b"v0"]
    assert session.session_id != 0 and session.incremental_requests > session.full_requests == 1


@pytest.mark.timeout(180)
def test_librdkafka_stays_sessionless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """confluent-kafka (librdkafka) sends session id 0, epoch -1: the broker opens no session and
    every fetch is answered in full; its consumer reads everything as before."""
    from confluent_kafka import Consumer

    config = tmp_path / "logging.yaml"
    config.write_text("loggers:\n  kafka.request.logger: TRACE\nretention:\n  max.rolled.files: 5\n")
    monkeypatch.setenv("KAFKAPY_LOG_CONFIG", str(config))
    with kafkapy_cluster_context(1, None, tmp_path / "cluster") as cluster:
        create(cluster, "rd", [[0]] * 2)
        produce(cluster, "rd", {0: 10, 1: 10})
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "rd",
                "auto.offset.reset": "earliest",
                "client.id": "rdkafka-session-test",
            }
        )
        try:
            consumer.subscribe(["rd"])
            seen = 0
            deadline = time.monotonic() + WAIT_S
            while seen < 20 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen += 1
        finally:
            consumer.close()
        lines = [
            ln
            for ln in (cluster.brokers[0].logs / "kafka-request.log").read_text().splitlines()
            if "apiKey=FETCH" in ln and "clientId=rdkafka-session-test" in ln
        ]
    assert seen == 20 and lines
    assert all("session_id=0, session_epoch=-1," in ln for ln in lines)


@pytest.mark.timeout(180)
def test_kafka_python_consumer_uses_incremental_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python (3.x) runs Kafka's FetchSessionHandler as the Java consumer does: its fetches
    open a session and go incremental, and it still reads every record once."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    config = tmp_path / "logging.yaml"
    config.write_text("loggers:\n  kafka.request.logger: TRACE\nretention:\n  max.rolled.files: 5\n")
    monkeypatch.setenv("KAFKAPY_LOG_CONFIG", str(config))
    with kafkapy_cluster_context(1, None, tmp_path / "cluster") as cluster:
        create(cluster, "kp", [[0]] * 2)
        produce(cluster, "kp", {0: 10, 1: 10})
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id="kafka-python-session-test",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=100,
        )
        try:
            consumer.assign([KTopicPartition("kp", 0), KTopicPartition("kp", 1)])
            values: list[bytes] = []
            deadline = time.monotonic() + WAIT_S
            while len(values) < 20 and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=200).values():
                    values.extend(r.value for r in records)
            produce(cluster, "kp", {1: 1})
            while len(values) < 21 and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=200).values():
                    values.extend(r.value for r in records)
            for _ in range(5):  # idle polls: incremental fetches that find nothing
                for records in consumer.poll(timeout_ms=200).values():
                    values.extend(r.value for r in records)
        finally:
            consumer.close()
        request_log = cluster.brokers[0].logs / "kafka-request.log"

        def epochs() -> list[int]:
            return [
                int(m[1])
                for m in re.finditer(
                    r"apiKey=FETCH, apiVersion=\d+, clientId=kafka-python-session-test.*?session_epoch=(-?\d+)",
                    request_log.read_text(),
                )
            ]

        # The request log is written as responses complete: give its last lines a moment.
        wait_until(lambda: max(epochs(), default=-1) >= 2, "incremental fetches from kafka-python")
        seen = epochs()
    assert sorted(values) == sorted([b"v%d" % i for i in range(10)] * 2 + [b"v0"])
    assert seen[0] == 0 and seen[1:] == list(range(1, len(seen))), seen[:20]


def _checkpointed_high_watermarks(data_dir: Path, topic: str) -> dict[int, int]:
    """partition -> high watermark in a broker's replication-offset-checkpoint (Kafka's format:
    version, count, then `topic partition offset` lines)."""
    path = data_dir / "replication-offset-checkpoint"
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.split()
        if name == topic:
            out[int(partition)] = int(offset)
    return out


def _isr_sizes(admin: AdminClient, topic: str) -> dict[int, int]:
    md = admin.list_topics(topic, timeout=10).topics[topic]
    return {p: len(pm.isrs) for p, pm in md.partitions.items()}


@pytest.mark.timeout(300)
def test_idle_partitions_of_a_follower_session_stay_in_sync(tmp_path: Path) -> None:
    """The leader reads only the partitions of a follower's session that may have news. Still:
    partitions idle for longer than replica.lag.time.max.ms keep their follower in the ISR when
    an append comes; the append and the high watermark reach the follower; DeleteRecords on an
    idle partition completes (the follower hears of the new log start offset); and after the
    leader moves (clean stop) and comes back as a follower, everything converges again."""
    lag_ms = 5000
    overrides = {
        "auto.leader.rebalance.enable": "false",
        "replica.lag.time.max.ms": str(lag_ms),
        "replica.high.watermark.checkpoint.interval.ms": "300",
        "controlled.shutdown.retry.backoff.ms": "200",
    }
    partitions = 40
    with kafkapy_cluster_context(2, overrides, tmp_path / "cluster") as cluster:
        create(cluster, "quiet", [[0, 1]] * partitions)
        produce(cluster, "quiet", {p: 2 for p in range(partitions)})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        follower_dir = cluster.brokers[1].log_dir
        wait_until(
            lambda: _checkpointed_high_watermarks(follower_dir, "quiet") == {p: 2 for p in range(partitions)},
            "the follower's high watermarks at 2",
        )
        time.sleep(2.5 * lag_ms / 1000)  # idle: no partition has news for the follower
        assert _isr_sizes(admin, "quiet") == {p: 2 for p in range(partitions)}
        # An append the follower cannot fetch for a while: the ISR-expiration check (every half
        # lag) runs while it trails, and must find it caught up recently (at its idle fetches),
        # not at its last read of the partition, 2.5 lag periods ago.
        # The producer connects before the pause (its set-up must not stretch the window).
        producer = Producer({"bootstrap.servers": cluster.brokers[0].bootstrap, "acks": 1})
        producer.produce("quiet", b"warm-up", partition=39)
        assert producer.flush(WAIT_S) == 0
        wait_until(
            lambda: _checkpointed_high_watermarks(follower_dir, "quiet").get(39) == 3,
            "the warm-up replicated",
        )
        cluster.brokers[1].pause()
        try:
            producer.produce("quiet", b"late", partition=7)
            assert producer.flush(WAIT_S) == 0
            time.sleep(0.52 * lag_ms / 1000)
        finally:
            cluster.brokers[1].resume()
        produce(cluster, "quiet", {31: 3})
        wait_until(
            lambda: (
                (hw := _checkpointed_high_watermarks(follower_dir, "quiet")).get(7) == 3 and hw.get(31) == 5
            ),
            "the new high watermarks on the follower",
        )
        assert "Shrinking ISR" not in cluster.brokers[0].server_log()
        assert _isr_sizes(admin, "quiet") == {p: 2 for p in range(partitions)}
        # DeleteRecords on an idle partition waits for the follower's log start offset.
        offsets = tmp_path / "offsets.json"
        offsets.write_text('{"partitions": [{"topic": "quiet", "partition": 12, "offset": 1}], "version": 1}')
        done = subprocess.run(
            [sys.executable, "-m", "kafkapy.tools.delete_records", "--bootstrap-server",
             cluster.bootstrap_servers, "--offset-json-file", str(offsets)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "partition: quiet-12\tlow_watermark: 1"
        # The leader leaves (its followers' parked fetches are answered) and comes back.
        cluster.brokers[0].stop()
        produce(cluster, "quiet", {7: 2})
        cluster.brokers[0].restart()
        cluster.wait_until_ready()
        wait_until(
            lambda: _isr_sizes(admin, "quiet") == {p: 2 for p in range(partitions)}, "the full ISR again"
        )
        produce(cluster, "quiet", {7: 1, 20: 1})
        wait_until(
            lambda: (
                (hw := _checkpointed_high_watermarks(cluster.brokers[0].log_dir, "quiet")).get(7) == 6
                and hw.get(20) == 3
            ),
            "the new leader's high watermarks on its follower",
        )
