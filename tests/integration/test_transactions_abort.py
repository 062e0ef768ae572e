"""kafkapy-transactions abort (KIP-664) on hanging transactions.

Two confluent-kafka producers (separate processes, transaction.timeout.ms 15 minutes, so the
coordinator would not end them for a long time) each write a record in an open transaction and
are SIGKILLed. A committed record written after them stays invisible to read_committed
consumers (the last stable offset is the first hanging transaction's first offset). Then:
- `abort` without a transaction named, or with a start offset no transaction starts at,
  fails with Kafka's message and exit code 1;
- `abort --start-offset A` (the producer found through DescribeProducers) ends the first
  one, `abort --producer-id --producer-epoch --coordinator-epoch` (as describe-producers shows
  them) the second; each prints nothing and exits 0;
- read_committed consumers then see the committed record and neither hanging one;
  read_uncommitted sees all three.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

WAIT_S = 60.0
OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}
TOPIC = "hanging"

HANGING_PRODUCER = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
              "transaction.timeout.ms": 900000})
p.init_transactions(60)
p.begin_transaction()
offsets = []
p.produce(sys.argv[3], sys.argv[2].encode(), on_delivery=lambda err, m: offsets.append(m.offset()))
p.flush(60)
print(offsets[0], flush=True)
time.sleep(600)
"""

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


def hang(bootstrap: str, txn_id: str) -> int:
    """Start a producer that leaves a transaction open, SIGKILL it; the transaction's offset."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_PRODUCER, bootstrap, txn_id, TOPIC], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().isdigit(), f"the hanging producer printed {line!r}"
        return int(line)
    finally:
        proc.kill()
        proc.wait(10)


def read_all(bootstrap: str, isolation: str) -> list[tuple[int, bytes]]:
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"r-{time.monotonic()}", "isolation.level": isolation,
        "enable.auto.commit": False, "enable.partition.eof": True,
    })  # fmt: skip
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF: the end (the LSO for read_committed)
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), m.value()))
    finally:
        c.close()
    raise AssertionError("no end of partition")


def tool(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.transactions", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip


def producers_table(bootstrap: str) -> dict[int, dict[str, str]]:
    """describe-producers rows by CurrentTransactionStartOffset (open transactions only)."""
    r = tool(bootstrap, "describe-producers", "--topic", TOPIC, "--partition", "0")
    assert r.returncode == 0, r.stderr
    lines = [[c.strip() for c in line.split("\t")[:-1]] for line in r.stdout.splitlines()]
    rows = [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]
    return {
        int(row["CurrentTransactionStartOffset"]): row
        for row in rows
        if row["CurrentTransactionStartOffset"] != "None"
    }


def test_abort_ends_hanging_transactions_and_read_committed_consumers_move_on(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client cancels its futures
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(WAIT_S)
    first = hang(bootstrap, "hang-a")
    second = hang(bootstrap, "hang-b")
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(TOPIC, b"after")
    assert plain.flush(WAIT_S) == 0
    assert read_all(bootstrap, "read_committed") == []  # held at the first hanging transaction
    table = producers_table(bootstrap)
    assert set(table) == {first, second}

    r = tool(bootstrap, "abort", "--topic", TOPIC, "--partition", "0")
    assert r.returncode == 1 and r.stderr.strip() == (
        "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) "
        "or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"
    )
    r = tool(bootstrap, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", str(second + 100))
    assert r.returncode == 1
    assert (
        r.stderr.strip()
        == f"Could not find any open transactions starting at offset {second + 100} on partition {TOPIC}-0"
    )

    r = tool(bootstrap, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", str(first))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert set(producers_table(bootstrap)) == {second}
    row = table[second]
    r = tool(
        bootstrap, "abort", "--topic", TOPIC, "--partition", "0", "--producer-id", row["ProducerId"],
        "--producer-epoch", row["ProducerEpoch"], "--coordinator-epoch", row["LatestCoordinatorEpoch"],
    )  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert producers_table(bootstrap) == {}

    committed = wait_until(lambda: read_all(bootstrap, "read_committed"), "read_committed to move on")
    assert [v for _, v in committed] == [b"after"]
    assert sorted(v for _, v in read_all(bootstrap, "read_uncommitted")) == [b"after", b"hang-a", b"hang-b"]
