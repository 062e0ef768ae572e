"""Transactions (KIP-98) end to end: confluent-kafka's transactional producer on a real broker.

One broker (`transaction.state.log.replication.factor=1`, `min.isr=1`). Invariants checked:
- commit, abort, commit: a read_committed consumer sees exactly the committed records, in
  order; a read_uncommitted one sees every record written, the aborted ones too;
- an open transaction holds a read_committed consumer (and ListOffsets latest) at the last
  stable offset until it ends;
- a second producer with the same transactional.id fences the first (its commit fails);
- a transaction left open past its timeout is aborted by the coordinator;
- send_offsets_to_transaction commits the group's offsets only when the transaction commits;
- kafka-python's and aiokafka's transactional producers and read_committed consumers agree;
- kafkapy's own KafkaProducer (init/begin/send_offsets/commit/abort) does the same;
- kafkapy-transactions (ListTransactions, DescribeTransactions, DescribeProducers) shows an
  open transaction where it is.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

WAIT_S = 60.0
OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.num.partitions": "5",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}

pytestmark = [pytest.mark.kafkapy_cluster(brokers=1, overrides=OVERRIDES), pytest.mark.timeout(300)]


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def cluster(kafkapy_cluster: KafkapyCluster) -> Iterator[KafkapyCluster]:
    admin = AdminClient({"bootstrap.servers": kafkapy_cluster.bootstrap_servers})
    futures = admin.create_topics(
        [
            NewTopic(t, 1, 1)
            for t in ("txn", "held", "fenced", "timeout", "eos-in", "eos-out", "kp", "aio", "tool", "own")
        ]
    )
    for f in futures.values():
        f.result(WAIT_S)
    yield kafkapy_cluster


def producer(cluster: KafkapyCluster, txn_id: str, **extra: Any) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id, **extra})
    p.init_transactions(WAIT_S)
    return p


def consume(
    cluster: KafkapyCluster, topic: str, isolation: str, expect: int, idle_s: float = 3.0
) -> list[bytes]:
    """Values read from offset 0 until `expect` arrived and `idle_s` passed without more."""
    c = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"reader-{isolation}-{time.monotonic()}",
         "isolation.level": isolation, "enable.auto.commit": False}
    )  # fmt: skip
    c.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline, last = time.monotonic() + WAIT_S, time.monotonic()
    try:
        while time.monotonic() < deadline and (len(values) < expect or time.monotonic() - last < idle_s):
            m = c.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
                last = time.monotonic()
    finally:
        c.close()
    return values


def produce_n(p: Producer, topic: str, prefix: str, n: int) -> list[bytes]:
    values = [f"{prefix}-{i}".encode() for i in range(n)]
    for v in values:
        p.produce(topic, v)
    p.flush(WAIT_S)  # written before the transaction ends, so an abort leaves aborted data in the log
    return values


def test_commit_abort_commit_read_committed_sees_only_committed(cluster: KafkapyCluster) -> None:
    p = producer(cluster, "tx-cac")
    p.begin_transaction()
    first = produce_n(p, "txn", "c1", 50)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    aborted = produce_n(p, "txn", "a", 50)
    p.abort_transaction(WAIT_S)
    p.begin_transaction()
    second = produce_n(p, "txn", "c2", 50)
    p.commit_transaction(WAIT_S)
    assert consume(cluster, "txn", "read_committed", 100) == first + second
    assert consume(cluster, "txn", "read_uncommitted", 150) == first + aborted + second
    # kafkapy's own consumer drops the aborted batches with the fetch's aborted_transactions.
    from kafkapy.client.consumer import SimpleConsumer
    from kafkapy.common.topic_partition import TopicPartition as OurTopicPartition

    for isolation, expected in (
        ("read_committed", first + second),
        ("read_uncommitted", first + aborted + second),
    ):
        ours = SimpleConsumer(
            cluster.bootstrap_servers, isolation_level=isolation, auto_offset_reset="earliest"
        )
        ours.assign([OurTopicPartition("txn", 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < len(expected) and time.monotonic() < deadline:
            got += [r.value for r in ours.poll(500)]
        ours.close()
        assert got == expected, isolation


def test_open_transaction_holds_read_committed_at_the_lso(cluster: KafkapyCluster) -> None:
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(5):
        plain.produce("held", f"before-{i}".encode())
    plain.flush(WAIT_S)
    p = producer(cluster, "tx-held")
    p.begin_transaction()
    open_values = produce_n(p, "held", "open", 10)
    for i in range(5):  # non-transactional records after the open transaction wait too
        plain.produce("held", f"after-{i}".encode())
    plain.flush(WAIT_S)
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "held-reader",
                  "isolation.level": "read_committed"})  # fmt: skip
    low, high = c.get_watermark_offsets(TopicPartition("held", 0), timeout=WAIT_S, cached=False)
    assert (low, high) == (0, 5), "ListOffsets latest with read_committed answers the LSO"
    c.close()
    held = consume(cluster, "held", "read_committed", 5, idle_s=3.0)
    assert held == [f"before-{i}".encode() for i in range(5)]
    p.commit_transaction(WAIT_S)
    after = consume(cluster, "held", "read_committed", 20)
    assert after == held + open_values + [f"after-{i}".encode() for i in range(5)]


def test_second_producer_with_the_same_id_fences_the_first(cluster: KafkapyCluster) -> None:
    first = producer(cluster, "tx-fence")
    first.begin_transaction()
    produce_n(first, "fenced", "zombie", 5)
    second = producer(cluster, "tx-fence")  # aborts the open transaction and bumps the epoch
    second.begin_transaction()
    kept = produce_n(second, "fenced", "kept", 5)
    second.commit_transaction(WAIT_S)
    with pytest.raises(KafkaException) as e:
        first.commit_transaction(10)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower(), e.value
    assert consume(cluster, "fenced", "read_committed", 5) == kept


def test_timed_out_transaction_is_aborted_by_the_coordinator(cluster: KafkapyCluster) -> None:
    p = producer(cluster, "tx-timeout", **{"transaction.timeout.ms": 2000})
    p.begin_transaction()
    produce_n(p, "timeout", "late", 5)
    # The coordinator aborts it: the LSO moves past the aborted records and markers.
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "timeout-reader",
                  "isolation.level": "read_committed"})  # fmt: skip
    wait_until(lambda: c.get_watermark_offsets(TopicPartition("timeout", 0), timeout=10, cached=False)[1] == 6,
               "the LSO to pass the ABORT marker")  # fmt: skip
    c.close()
    with pytest.raises(KafkaException):
        p.commit_transaction(10)
    assert consume(cluster, "timeout", "read_committed", 0) == []
    assert len(consume(cluster, "timeout", "read_uncommitted", 5)) == 5


def test_send_offsets_to_transaction_commits_offsets_only_on_commit(cluster: KafkapyCluster) -> None:
    group = "eos-group"
    c = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "enable.auto.commit": False}
    )
    tp = TopicPartition("eos-in", 0)

    def committed() -> int:
        return c.committed([tp], timeout=WAIT_S)[0].offset

    p = producer(cluster, "tx-eos")
    metadata = c.consumer_group_metadata()
    p.begin_transaction()
    produce_n(p, "eos-out", "x", 3)
    p.send_offsets_to_transaction([TopicPartition("eos-in", 0, 10)], metadata, WAIT_S)
    p.abort_transaction(WAIT_S)
    assert committed() < 0, "aborted: no offset"
    p.begin_transaction()
    produce_n(p, "eos-out", "y", 3)
    p.send_offsets_to_transaction([TopicPartition("eos-in", 0, 20)], metadata, WAIT_S)
    p.commit_transaction(WAIT_S)
    wait_until(lambda: committed() == 20, "the committed offset 20")
    c.close()


def test_kafka_python_and_aiokafka_commit_abort_commit(cluster: KafkapyCluster) -> None:
    import kafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    bootstrap = cluster.bootstrap_servers
    kp = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-1")
    kp.init_transactions()
    for prefix, commit in (("c1", True), ("a", False), ("c2", True)):
        kp.begin_transaction()
        for i in range(5):
            kp.send("kp", f"{prefix}-{i}".encode())
        kp.flush()
        (kp.commit_transaction if commit else kp.abort_transaction)()
    kp.close()

    def kafka_python_read(isolation: str) -> list[bytes]:
        tp = kafka.TopicPartition("kp", 0)
        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                enable_auto_commit=False, consumer_timeout_ms=4000)  # fmt: skip
        c.assign([tp])
        c.seek(tp, 0)
        values = [m.value for m in c]
        c.close()
        return values

    committed = [f"{p}-{i}".encode() for p in ("c1", "c2") for i in range(5)]
    everything = [f"{p}-{i}".encode() for p in ("c1", "a", "c2") for i in range(5)]
    assert kafka_python_read("read_committed") == committed
    assert kafka_python_read("read_uncommitted") == everything

    async def aiokafka_round() -> dict[str, list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-1")
        await producer.start()
        try:
            for prefix, commit in (("c1", True), ("a", False), ("c2", True)):
                await producer.begin_transaction()
                for i in range(5):
                    await producer.send_and_wait("aio", f"{prefix}-{i}".encode())
                await (producer.commit_transaction() if commit else producer.abort_transaction())
        finally:
            await producer.stop()
        out: dict[str, list[bytes]] = {}
        for isolation in ("read_committed", "read_uncommitted"):
            c = AIOKafkaConsumer(
                bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False
            )
            await c.start()
            tp = kafka.TopicPartition("aio", 0)
            c.assign([tp])
            c.seek(tp, 0)
            values: list[bytes] = []
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(values) < (10 if isolation == "read_committed" else 15):
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    values += [m.value for m in msgs]
            await asyncio.sleep(1)  # nothing more may come
            for msgs in (await c.getmany(timeout_ms=500)).values():
                values += [m.value for m in msgs]
            await c.stop()
            out[isolation] = values
        return out

    read = asyncio.run(aiokafka_round())
    assert read["read_committed"] == committed
    assert read["read_uncommitted"] == everything


def test_transactions_tool_shows_an_open_transaction(cluster: KafkapyCluster) -> None:
    p = producer(cluster, "tx-tool")
    p.begin_transaction()
    produce_n(p, "tool", "open", 3)

    def tool(*args: str) -> tuple[int, list[list[str]]]:
        r = subprocess.run(
            [sys.executable, "-m", "kafkapy.tools.transactions", "--bootstrap-server", cluster.bootstrap_servers, *args],
            capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        return r.returncode, [[c.strip() for c in line.split("\t")[:-1]] for line in r.stdout.splitlines()]

    code, rows = tool("list")
    assert code == 0 and rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert ["tx-tool", "0", rows[-1][2], "Ongoing"] in rows[1:]
    code, rows = tool("describe", "--transactional-id", "tx-tool")
    assert code == 0 and rows[1][1] == "tx-tool" and rows[1][4] == "Ongoing" and rows[1][8] == "tool-0"
    code, rows = tool("describe-producers", "--topic", "tool", "--partition", "0")
    assert code == 0 and rows[1][5] == "0", rows  # CurrentTransactionStartOffset
    assert tool("describe", "--transactional-id", "nobody")[0] == 1
    p.abort_transaction(WAIT_S)


def test_kafkapy_producer_transactions(cluster: KafkapyCluster) -> None:
    from kafkapy.common.topic_partition import TopicPartition as OurTopicPartition
    from kafkapy.producer import KafkaProducer

    p = KafkaProducer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "own-1"})
    try:
        p.init_transactions()
        for prefix, commit in (("c1", True), ("a", False), ("c2", True)):
            p.begin_transaction()
            for i in range(6):
                p.send("own", f"{prefix}-{i}".encode())
            p.send_offsets_to_transaction({OurTopicPartition("own", 0): 7 if commit else 99}, "own-group")
            (p.commit_transaction if commit else p.abort_transaction)()
    finally:
        p.close()
    assert consume(cluster, "own", "read_committed", 12) == [
        f"{x}-{i}".encode() for x in ("c1", "c2") for i in range(6)
    ]
    assert len(consume(cluster, "own", "read_uncommitted", 18)) == 18
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "own-group"})
    assert c.committed([TopicPartition("own", 0)], timeout=WAIT_S)[0].offset == 7
    c.close()
