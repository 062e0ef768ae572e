"""Exactly-once consume-transform-produce under SIGKILL, on three brokers.

A loop process (eos_loop_worker.py, confluent-kafka) reads topic A and, in one transaction per
batch, writes each record's output to topic B and commits A's offsets
(send_offsets_to_transaction). While it runs, the test SIGKILLs (seeded random points, mid-way
through a batch) the loop process, then the broker that is its transaction coordinator (the
broker is started again a moment later), then the loop process again; a loop process that
exits on an error it cannot retry is started again too. The invariant: once every input is
consumed, a read_committed consumer of B sees each input record's output exactly once
(duplicates = 0, lost = 0), although read_uncommitted shows the aborted writes of the killed
transactions.

Short by default (EOS_RECORDS=3000, one round of three kills); EOS_RECORDS, EOS_ROUNDS and
EOS_SEED make it longer or different. The figures are printed.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.testing import KafkapyCluster

RECORDS = int(os.environ.get("EOS_RECORDS", "3000"))
ROUNDS = int(os.environ.get("EOS_ROUNDS", "1"))
SEED = int(os.environ.get("EOS_SEED", "15"))
PARTITIONS, BATCH = 3, 50
SOURCE, SINK, TXN_ID = "eos-a", "eos-b", "eos-loop"
WAIT_S = 180.0
STALL_S = float(os.environ.get("EOS_STALL_S", "120"))  # longest a loop may go without progress
WORKER = Path(__file__).with_name("eos_loop_worker.py")
OVERRIDES = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES),
    pytest.mark.timeout(int(WAIT_S * (3 + 2 * ROUNDS))),
]


class Loop:
    """The loop process: started again whenever it exits; `progress` is the number of input
    records whose transaction committed (the committed offsets, summed: they never go back)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.progress = 0
        self.starts = 0
        self.exits = 0  # ended by themselves (an error they could not retry)
        self.kills = 0
        self.stderr: list[str] = []
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._proc = proc = subprocess.Popen(
            [sys.executable, str(WORKER), self.bootstrap, SOURCE, SINK, str(PARTITIONS), TXN_ID, str(BATCH)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.starts += 1
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()
        threading.Thread(target=self._read_errors, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "committed":
                self.progress = max(self.progress, int(parts[1]))

    def _read_errors(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.stderr = [*self.stderr[-20:], line.rstrip()]

    def keep_running(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self.exits += 1
            self.start()

    def kill(self, count: bool = True) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)
            self.kills += count

    def wait_for(self, records: int, timeout: float = STALL_S) -> None:
        deadline = time.monotonic() + timeout
        while self.progress < records:
            assert time.monotonic() < deadline, (
                f"the loop reached {self.progress} of {records}: {chr(10).join(self.stderr[-8:])}\n{describe(self.bootstrap)}"
            )
            self.keep_running()
            time.sleep(0.05)


def describe(bootstrap: str) -> str:
    """The coordinator's view of the loop's transaction, the topics' leaders and watermarks: a stall's report."""
    r = subprocess.run(
        [sys.executable, "-m", "kafkapy.tools.transactions", "--bootstrap-server", bootstrap, "describe",
         "--transactional-id", TXN_ID],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    out = r.stdout + r.stderr
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "diag"})
    for t in (SOURCE, SINK):
        for p, pm in sorted(md.topics[t].partitions.items()):
            marks = c.get_watermark_offsets(TopicPartition(t, p), timeout=10)
            out += f"{t}-{p}: leader {pm.leader} replicas {pm.replicas} isr {pm.isrs} watermarks {marks}\n"
    c.close()
    return out


def coordinator_of(cluster: KafkapyCluster, transactional_id: str) -> int:
    deadline = time.monotonic() + WAIT_S
    while True:
        for b in cluster.brokers:
            if not b.is_running():
                continue
            try:
                with BrokerConnection("127.0.0.1", b.port) as conn:
                    resp = conn.send(ApiKey.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
                if resp.error_code == 0:  # type: ignore[union-attr]
                    return int(resp.node_id)  # type: ignore[union-attr]
            except OSError:
                pass
        assert time.monotonic() < deadline, "no transaction coordinator found"
        time.sleep(0.2)


def read_outputs(bootstrap: str, isolation: str) -> Counter[bytes]:
    """Every value of B up to the end of each partition (the LSO for read_committed)."""
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"check-{isolation}", "isolation.level": isolation,
        "enable.auto.commit": False, "enable.partition.eof": True,
    })  # fmt: skip
    c.assign([TopicPartition(SINK, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen: Counter[bytes] = Counter()
    done: set[int] = set()
    deadline = time.monotonic() + WAIT_S
    try:
        while len(done) < PARTITIONS:
            assert time.monotonic() < deadline, f"only partitions {done} of {SINK} read to the end"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    done.add(m.partition())
                    continue
                raise AssertionError(m.error())
            seen[m.value()] += 1
    finally:
        c.close()
    return seen


def kill_plan(rng: random.Random) -> list[tuple[float, str]]:
    """(fraction of the input committed, what to kill), each round in its own slice of the run."""
    plan: list[tuple[float, str]] = []
    width = 0.9 / ROUNDS
    for r in range(ROUNDS):
        start = 0.05 + r * width
        for i, what in enumerate(("loop", "coordinator", "loop")):
            plan.append((start + width * (i + rng.uniform(0.1, 0.9)) / 3, what))
    return plan


def test_consume_transform_produce_exactly_once_through_sigkills(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    rng = random.Random(SEED)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 3) for t in (SOURCE, SINK)]).values():
        f.result(WAIT_S)
    inputs = [b"in-%07d" % i for i in range(RECORDS)]
    feeder = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i, v in enumerate(inputs):
        while True:
            try:
                feeder.produce(SOURCE, v, b"k%d" % i, partition=i % PARTITIONS)
                break
            except BufferError:
                feeder.poll(0.1)
    assert feeder.flush(WAIT_S) == 0

    loop = Loop(bootstrap)
    broker_kills: list[int] = []
    started = time.monotonic()
    loop.start()
    try:
        for fraction, what in kill_plan(rng):
            loop.wait_for(int(RECORDS * fraction))
            time.sleep(rng.uniform(0.0, 0.3))  # into the next batch's transaction
            if what == "loop":
                loop.kill()
                loop.start()
                continue
            coordinator = coordinator_of(kafkapy_cluster, TXN_ID)
            broker = kafkapy_cluster.broker(coordinator)
            broker.kill()
            broker_kills.append(coordinator)
            time.sleep(rng.uniform(1.0, 3.0))
            broker.start()
            kafkapy_cluster.wait_until_ready()
        loop.wait_for(RECORDS)
    finally:
        loop.kill(count=False)  # done: every input's transaction committed
    elapsed = time.monotonic() - started

    committed = read_outputs(bootstrap, "read_committed")
    everything = read_outputs(bootstrap, "read_uncommitted")
    expected = {b"out-" + v for v in inputs}
    duplicates = sum(n - 1 for n in committed.values() if n > 1)
    lost = len(expected - set(committed))
    print(
        f"\nexactly-once loop (seed {SEED}): {RECORDS} records in {elapsed:.1f} s, {loop.kills} loop SIGKILLs, "
        f"{len(broker_kills)} coordinator broker SIGKILLs (brokers {broker_kills}), {loop.exits} loop exits on "
        f"errors, {loop.starts} loop starts; read_committed: {sum(committed.values())} records, "
        f"duplicates={duplicates}, lost={lost}; read_uncommitted: {sum(everything.values())} records"
    )
    assert set(committed) <= expected
    assert duplicates == 0 and lost == 0
    assert loop.kills == 2 * ROUNDS and len(broker_kills) == ROUNDS
