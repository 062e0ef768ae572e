"""Transactions on three brokers: the coordinator sends WriteTxnMarkers to the other leaders.

A topic of 6 partitions (RF 2) spread over 3 brokers, with `__transaction_state` at RF 3 and
min.isr 2. Invariants: after commit, abort, commit of transactions touching every partition,
a read_committed consumer sees exactly the committed records and read_uncommitted sees all;
when the transaction coordinator's broker is killed (-9) with a transaction open, a new
coordinator takes over (coordinator epoch = the new leader epoch), the producer commits, and
read_committed sees every committed record exactly once.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

WAIT_S = 90.0
TOPIC, PARTITIONS = "txn3", 6
TXN_STATE_PARTITIONS = 3
OVERRIDES = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
    "offsets.topic.num.partitions": "3",
}

pytestmark = [pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES), pytest.mark.timeout(300)]


def consume_all(
    bootstrap: str, isolation: str, expect: int, idle_s: float = 3.0, topic: str = TOPIC
) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False})  # fmt: skip
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
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


def run_txn(p: Producer, prefix: str, commit: bool) -> list[bytes]:
    p.begin_transaction()
    values = [f"{prefix}-{i}".encode() for i in range(60)]
    for i, v in enumerate(values):
        p.produce(TOPIC, v, partition=i % PARTITIONS)
    p.flush(WAIT_S)
    if commit:
        p.commit_transaction(WAIT_S)
    else:
        p.abort_transaction(WAIT_S)
    return values


def test_markers_reach_leaders_on_every_broker(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 2)])[TOPIC].result(WAIT_S)
    leaders: set[Any] = set()
    deadline = time.monotonic() + WAIT_S
    while len(leaders) < 3 and time.monotonic() < deadline:
        md = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        leaders = {p.leader for p in md.partitions.values()}
        time.sleep(0.2)
    assert len(leaders) == 3, f"partition leaders on every broker: {leaders}"
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-3"})
    p.init_transactions(WAIT_S)
    first = run_txn(p, "c1", True)
    aborted = run_txn(p, "a", False)
    second = run_txn(p, "c2", True)
    committed = consume_all(bootstrap, "read_committed", 120)
    assert sorted(committed) == sorted(first + second)
    assert sorted(consume_all(bootstrap, "read_uncommitted", 180)) == sorted(first + aborted + second)


def coordinator_of(bootstrap: str, transactional_id: str) -> int:
    from kafkapy.client.connection import BrokerConnection
    from kafkapy.protocol.api_keys import ApiKey

    host, port = bootstrap.split(",")[0].split(":")
    with BrokerConnection(host, int(port)) as conn:
        deadline = time.monotonic() + WAIT_S
        while True:
            resp = conn.send(ApiKey.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
            if resp.error_code == 0:  # type: ignore[union-attr]
                return resp.node_id  # type: ignore[union-attr]
            assert time.monotonic() < deadline, resp
            time.sleep(0.2)


def test_coordinator_killed_mid_transaction_then_commit(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("failover", PARTITIONS, 3)])["failover"].result(WAIT_S)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-failover"})
    p.init_transactions(WAIT_S)
    coordinator = coordinator_of(bootstrap, "tx-failover")
    p.begin_transaction()
    first = [f"first-{i}".encode() for i in range(30)]
    for i, v in enumerate(first):
        p.produce("failover", v, partition=i % PARTITIONS)
    p.flush(WAIT_S)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    second = [f"second-{i}".encode() for i in range(30)]
    for i, v in enumerate(second):
        p.produce("failover", v, partition=i % PARTITIONS)
    p.flush(WAIT_S)
    kafkapy_cluster.broker(coordinator).kill()
    p.commit_transaction(WAIT_S)  # librdkafka finds the new coordinator and retries EndTxn
    survivors = ",".join(kafkapy_cluster.broker(b).bootstrap for b in range(3) if b != coordinator)
    got = consume_all(survivors, "read_committed", 60, topic="failover")
    assert sorted(got) == sorted(first + second), "each committed record exactly once"
