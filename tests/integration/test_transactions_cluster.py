"""Transactions on three brokers: the coordinator sends WriteTxnMarkers to the other leaders.

A topic of 6 partitions (RF 2) spread over 3 brokers, with `__transaction_state` at RF 3 and
min.isr 2. Invariant: after commit, abort, commit of transactions touching every partition,
a read_committed consumer sees exactly the committed records and read_uncommitted sees all.
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
OVERRIDES = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}

pytestmark = [pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES), pytest.mark.timeout(300)]


def consume_all(bootstrap: str, isolation: str, expect: int, idle_s: float = 3.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False})  # fmt: skip
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
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
