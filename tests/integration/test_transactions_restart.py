"""Transactions across a broker crash: kill -9 of the only broker while a transaction is open.

Invariant: after the restart, recovery rebuilds the open transaction from the producer state
(snapshot plus the batches after it), so a read_committed consumer stays at the last stable
offset (the transaction's first offset) and sees nothing of it; the coordinator reloads
__transaction_state, the same producer commits, and read_committed then sees exactly the
records before the crash plus the transaction's, once each.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

WAIT_S = 90.0
OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}

pytestmark = [pytest.mark.kafkapy_cluster(brokers=1, overrides=OVERRIDES), pytest.mark.timeout(300)]


def read_committed(bootstrap: str, expect: int, idle_s: float = 3.0) -> tuple[list[bytes], int]:
    """(values from offset 0, the read_committed end offset, i.e. the LSO)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{time.monotonic()}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})  # fmt: skip
    c.assign([TopicPartition("crash", 0, 0)])
    values: list[bytes] = []
    deadline, last = time.monotonic() + WAIT_S, time.monotonic()
    try:
        while time.monotonic() < deadline and (len(values) < expect or time.monotonic() - last < idle_s):
            m = c.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
                last = time.monotonic()
        lso = c.get_watermark_offsets(TopicPartition("crash", 0), timeout=WAIT_S, cached=False)[1]
    finally:
        c.close()
    return values, lso


def test_open_transaction_survives_kill_9_and_commits_after_restart(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("crash", 1, 1)])["crash"].result(WAIT_S)
    plain = Producer({"bootstrap.servers": bootstrap})
    before = [f"before-{i}".encode() for i in range(5)]
    for v in before:
        plain.produce("crash", v)
    plain.flush(WAIT_S)
    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "tx-crash", "transaction.timeout.ms": 120_000}
    )
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    inside = [f"inside-{i}".encode() for i in range(5)]
    for v in inside:
        p.produce("crash", v)
    p.flush(WAIT_S)

    kafkapy_cluster.broker(0).kill()
    kafkapy_cluster.broker(0).start()
    kafkapy_cluster.wait_until_ready()

    values, lso = read_committed(bootstrap, 5)
    assert values == before and lso == 5, "the open transaction holds the LSO after recovery"
    p.commit_transaction(WAIT_S)
    values, lso = read_committed(bootstrap, 10)
    assert values == before + inside
    assert lso == 11  # ten records and the COMMIT marker
