"""A compacted topic written by transactions, cleaned on a real broker (Kafka's cleaner rules).

Invariants, read back with librdkafka (confluent-kafka) consumers:
- before cleaning: read_committed sees exactly the committed records in order, read_uncommitted
  every record;
- after cleaning: no aborted value is left in the cleaned part of the log (for either isolation
  level), every key's latest committed value is still there at its offset, read_committed still
  filters the aborted records of the part not cleaned yet (their `.txnindex` entries survived),
  and the log shrank;
- an open transaction bounds cleaning: the cleaner checkpoint never passes its first offset
  (the last stable offset) until it commits, then cleaning moves on to the active segment;
- kill -9 of the broker in the middle of a (throttled) cleaning, then restart: the same
  invariants hold after the next cleaning, and no `.cleaned`/`.swap` file is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkapy.testing import BrokerHandle, KafkapyCluster

WAIT_S = 120.0
OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "log.cleaner.backoff.ms": "200",
}
PLAIN = {"segment.bytes": "4096", "retention.ms": "-1"}
COMPACT = {
    **PLAIN,
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "2000",
}
KEYS = 20
ROUNDS = 12

pytestmark = [
    pytest.mark.kafkapy_cluster(brokers=1, overrides=OVERRIDES),
    pytest.mark.timeout(400),
    pytest.mark.filterwarnings("ignore:alter_configs has been deprecated"),
]

Record = tuple[int, bytes, bytes]


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def create_topic(cluster: KafkapyCluster, topic: str, config: dict[str, str]) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(WAIT_S)
    return admin


def make_compacted(admin: AdminClient, topic: str) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config=COMPACT)
    admin.alter_configs([resource])[resource].result(WAIT_S)


def read_all(cluster: KafkapyCluster, topic: str, isolation: str) -> list[Record]:
    """(offset, key, value) from the beginning to the end (the LSO for read_committed)."""
    c = Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"check-{time.monotonic()}",
        "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True,
    })  # fmt: skip
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Record] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    raise AssertionError(f"no end of partition reading {topic} ({isolation})")


def checkpoint_of(broker: BrokerHandle, topic: str) -> int | None:
    path = broker.log_dir / "cleaner-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        t, _, offset = line.split(" ")
        if t == topic:
            return int(offset)
    return None


def active_base(broker: BrokerHandle, topic: str) -> int:
    return max(int(p.stem) for p in (broker.log_dir / f"{topic}-0").glob("*.log") if p.stem.isdigit())


def log_bytes(broker: BrokerHandle, topic: str) -> int:
    total = 0
    for p in (broker.log_dir / f"{topic}-0").glob("*.log"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass
    return total


def transactional(cluster: KafkapyCluster, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    return p


class Written:
    """Rounds of KEYS keyed records, one transaction each: every third (and the last) aborted."""

    def __init__(self, cluster: KafkapyCluster, topic: str, rounds: int) -> None:
        p = transactional(cluster, f"tx-{topic}")
        self.committed: list[bytes] = []
        self.aborted: set[bytes] = set()
        self.latest: dict[bytes, bytes] = {}
        for r in range(rounds):
            p.begin_transaction()
            values = [b"r%02d-k%02d-%s" % (r, k, b"x" * 80) for k in range(KEYS)]
            for k, v in enumerate(values):
                p.produce(topic, v, b"k%02d" % k)
            p.flush(WAIT_S)
            if r % 3 == 1 or r == rounds - 1:  # the last one aborted: its data is in the active segment
                p.abort_transaction(WAIT_S)
                self.aborted.update(values)
            else:
                p.commit_transaction(WAIT_S)
                self.committed += values
                self.latest.update({b"k%02d" % k: v for k, v in enumerate(values)})


def check_cleaned(
    cluster: KafkapyCluster, topic: str, written: Written, offset_of: dict[bytes, int], before: int
) -> tuple[int, int]:
    """The invariants after a full cleaning; (records left, cleaner checkpoint)."""
    broker = cluster.broker(0)
    wait_until(lambda: (checkpoint_of(broker, topic) or -1) >= active_base(broker, topic), "a full cleaning")
    clean_end = checkpoint_of(broker, topic)
    assert clean_end is not None and clean_end > 0
    after_committed = read_all(cluster, topic, "read_committed")
    after_all = read_all(cluster, topic, "read_uncommitted")
    for records in (after_committed, after_all):
        offsets = [o for o, _, _ in records]
        assert offsets == sorted(set(offsets)), "offsets must strictly increase (nothing duplicated)"
        assert not {v for o, _, v in records if o < clean_end} & written.aborted, (
            "aborted data left in the cleaned part"
        )
    seen = {k: (o, v) for o, k, v in after_committed}
    assert seen == {k: (offset_of[v], v) for k, v in written.latest.items()}, (
        "a key's latest committed value moved or went"
    )
    # Past the cleaned part, read_committed still drops the aborted records (.txnindex intact).
    assert [v for _, _, v in after_committed] == [v for _, _, v in after_all if v not in written.aborted]
    assert {v for _, _, v in after_committed} <= set(written.committed)
    assert len(after_committed) < before
    return len(after_all), clean_end


def test_committed_and_aborted_transactions_read_the_same_before_and_after_cleaning(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    topic, broker = "ctxn", kafkapy_cluster.broker(0)
    admin = create_topic(kafkapy_cluster, topic, PLAIN)
    written = Written(kafkapy_cluster, topic, ROUNDS)
    before_committed = read_all(kafkapy_cluster, topic, "read_committed")
    before_all = read_all(kafkapy_cluster, topic, "read_uncommitted")
    assert [v for _, _, v in before_committed] == written.committed
    assert {v for _, _, v in before_all} == set(written.committed) | written.aborted
    size_before = log_bytes(broker, topic)

    make_compacted(admin, topic)
    left, clean_end = check_cleaned(
        kafkapy_cluster, topic, written, {v: o for o, _, v in before_all}, len(before_committed)
    )
    assert log_bytes(broker, topic) < size_before
    print(
        f"\ncompacted transactions: {len(before_all)} records ({len(written.aborted)} aborted) -> "
        f"{left} after cleaning to offset {clean_end}; {size_before} -> {log_bytes(broker, topic)} bytes"
    )


@pytest.mark.kafkapy_cluster(
    brokers=1, overrides={**OVERRIDES, "log.cleaner.io.max.bytes.per.second": "15000"}
)
def test_kill_9_during_a_transactional_cleaning_loses_and_duplicates_nothing(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    topic, broker = "ckill", kafkapy_cluster.broker(0)
    admin = create_topic(kafkapy_cluster, topic, PLAIN)
    written = Written(kafkapy_cluster, topic, 30)
    before_committed = read_all(kafkapy_cluster, topic, "read_committed")
    before_all = read_all(kafkapy_cluster, topic, "read_uncommitted")
    make_compacted(admin, topic)  # one throttled cleaning (15 KB/s over ~70 KB, read twice)
    cleaner_log = broker.logs / "log-cleaner.log"
    wait_until(
        lambda: cleaner_log.exists() and cleaner_log.read_text().count(f"in log {topic}-0 into") >= 3,
        "a cleaning half done",
    )
    assert f"cleaned log {topic}-0 " not in cleaner_log.read_text(), "killed too late"
    broker.kill()
    broker.start()
    kafkapy_cluster.wait_until_ready()
    left, clean_end = check_cleaned(
        kafkapy_cluster, topic, written, {v: o for o, _, v in before_all}, len(before_committed)
    )
    leftovers = [
        p.name for p in (broker.log_dir / f"{topic}-0").iterdir() if p.suffix in (".swap", ".cleaned")
    ]
    assert leftovers == []
    print(f"\nkill -9 mid-cleaning: {len(before_all)} records -> {left} after cleaning to offset {clean_end}")


def test_an_open_transaction_bounds_cleaning_until_it_commits(kafkapy_cluster: KafkapyCluster) -> None:
    topic, broker = "copen", kafkapy_cluster.broker(0)
    admin = create_topic(kafkapy_cluster, topic, PLAIN)
    writer = transactional(kafkapy_cluster, "tx-writer")
    holder = transactional(kafkapy_cluster, "tx-holder")

    def committed_round(r: int) -> None:
        writer.begin_transaction()
        for k in range(KEYS):
            writer.produce(topic, b"w%02d-%s" % (r, b"x" * 80), b"k%02d" % k)
        writer.commit_transaction(WAIT_S)

    for r in range(3):
        committed_round(r)
    first_open: list[int] = []
    holder.begin_transaction()
    holder.produce(topic, b"held", b"k00", on_delivery=lambda err, m: first_open.append(m.offset()))
    holder.flush(WAIT_S)
    assert first_open
    for r in range(3, 9):
        committed_round(r)

    make_compacted(admin, topic)
    wait_until(lambda: checkpoint_of(broker, topic), "a first cleaning")
    time.sleep(2.0)  # several more cleaner passes (backoff 200 ms)
    checkpoint = checkpoint_of(broker, topic)
    assert checkpoint is not None and checkpoint <= first_open[0] < active_base(broker, topic)
    held = read_all(kafkapy_cluster, topic, "read_committed")
    assert held and max(o for o, _, _ in held) < first_open[0], "read_committed passed the open transaction"

    holder.commit_transaction(WAIT_S)
    wait_until(lambda: (checkpoint_of(broker, topic) or -1) >= active_base(broker, topic), "cleaning past it")
    after = read_all(kafkapy_cluster, topic, "read_committed")
    assert (first_open[0], b"k00", b"held") not in after  # k00 was rewritten by later rounds
    values = {k: v for _, k, v in after}
    assert values == {b"k%02d" % k: b"w08-%s" % (b"x" * 80) for k in range(KEYS)}
