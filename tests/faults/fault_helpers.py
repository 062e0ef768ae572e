"""Helpers of the replication fault-injection test (test_replication_faults.py).

Three threads that run beside the faults (a sequence-numbered idempotent producer, a consumer
group reading along, a ZooKeeper watcher noting every leader/ISR change), the read-back of
every partition by a fresh consumer, and the byte comparison of the replicas' segment files.
Times are `time.monotonic()` seconds; every event carries the round it happened in (0 = before
the first fault).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kazoo.client import KazooClient

from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.testing import KafkapyCluster, kafkapy_cluster_context


class ProtocolErrors(logging.Handler):
    """Counts librdkafka's PROTOERR lines: responses it could not parse (a broker encoding bug)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("PROTOERR"):
            self.count += 1
            if len(self.first) < 5:
                self.first.append(message)


# librdkafka's own log lines (disconnects, timeouts) go to pytest's log capture, not stderr.
CLIENT_LOG = logging.getLogger("faults.librdkafka")
PROTOCOL_ERRORS = ProtocolErrors()
CLIENT_LOG.addHandler(PROTOCOL_ERRORS)
REQUEST_TIMEOUT_S = 5.0
# KAFKAPY_FAULT_CLIENT_DEBUG=eos,protocol: the producer's librdkafka debug contexts, into that log
# at DEBUG level, which pytest's capture drops: keep them with --log-file=F --log-file-level=DEBUG.
CLIENT_DEBUG = (
    {"debug": os.environ["KAFKAPY_FAULT_CLIENT_DEBUG"]}
    if os.environ.get("KAFKAPY_FAULT_CLIENT_DEBUG")
    else {}
)


def wait_until(condition: Callable[[], Any], what: str, timeout: float, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


# -- ZooKeeper reads ---------------------------------------------------------------------------


def partition_state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any] | None:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    try:
        data, _ = zk.get(path)
    except Exception:
        return None
    return json.loads(data)


def controller_id(zk: KazooClient) -> int | None:
    try:
        data, _ = zk.get("/controller")
    except Exception:
        return None
    return int(json.loads(data)["brokerid"])


def registered_brokers(zk: KazooClient) -> list[int]:
    try:
        return sorted(int(c) for c in zk.get_children("/brokers/ids"))
    except Exception:
        return []


def znode_stat(zk: KazooClient, path: str) -> tuple[int, int] | None:
    """(czxid, version) of a znode: czxid tells a new session's ephemeral node from the old one."""
    try:
        stat = zk.exists(path)
    except Exception:
        return None
    return None if stat is None else (stat.czxid, stat.version)


def topic_partitions(zk: KazooClient, topic: str) -> list[int]:
    try:
        return sorted(int(c) for c in zk.get_children(f"/brokers/topics/{topic}/partitions"))
    except Exception:
        return []


# -- rounds ------------------------------------------------------------------------------------


@dataclass
class Round:
    index: int
    kind: str
    started: float
    notes: list[str] = field(default_factory=list)
    ended: float | None = None


class RoundLog:
    """The rounds run so far; `current` is read by the other threads to stamp their events."""

    def __init__(self) -> None:
        self.rounds: list[Round] = []
        self.t0 = time.monotonic()

    @property
    def current(self) -> int:
        return self.rounds[-1].index if self.rounds else 0

    def begin(self, index: int, kind: str) -> Round:
        r = Round(index, kind, time.monotonic())
        self.rounds.append(r)
        return r

    def note(self, text: str) -> None:
        line = f"[t={self.rel(time.monotonic()):7.2f}s round {self.current}] {text}"
        print(line, flush=True)
        if self.rounds:
            self.rounds[-1].notes.append(line)

    def rel(self, t: float) -> float:
        return t - self.t0

    def describe(self, index: int) -> str:
        if index == 0:
            return "round 0 (before the first fault)"
        r = self.rounds[index - 1]
        return f"round {index} ({r.kind})"


# -- the producer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    seq: int
    partition: int
    offset: int
    t: float
    round: int


@dataclass(frozen=True)
class DeliveryFailure:
    seq: int
    partition: int
    name: str
    fatal: bool
    t: float
    round: int


class SequenceProducer(threading.Thread):
    """Writes value = str(seq) to partition seq % partitions, idempotent with acks=all, and keeps
    every delivery report (Ack or DeliveryFailure) and every client error (fatal ones apart)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rounds: RoundLog, interval: float):
        super().__init__(name="sequence-producer", daemon=True)
        self.topic, self.partitions, self.rounds, self.interval = topic, partitions, rounds, interval
        self.acks: list[Ack] = []
        self.failures: list[DeliveryFailure] = []
        self.client_errors: list[str] = []
        self.fatal_errors: list[str] = []
        self.produced = 0
        self.restarts = 0  # new producers after a fatal error
        self.refusals: Counter[str] = Counter()  # produce() calls refused by the client, by error and round
        self.unfinished = 0
        self.crash: BaseException | None = None
        self._stop_event = threading.Event()
        self.config = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 30000,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 10000,
            # A frozen leader answers nothing: in-flight requests to it time out after this, and
            # only then may the idempotent producer resend their sequence numbers elsewhere.
            # (librdkafka times out a ProduceRequest after socket.timeout.ms, or the first message's
            # remaining message.timeout.ms; request.timeout.ms is the broker's acks=all wait.)
            "socket.timeout.ms": int(REQUEST_TIMEOUT_S * 1000),
            "request.timeout.ms": int(REQUEST_TIMEOUT_S * 1000),
            "socket.connection.setup.timeout.ms": int(REQUEST_TIMEOUT_S * 1000),
            "error_cb": self._on_error,
            "logger": CLIENT_LOG,
            **CLIENT_DEBUG,
        }

    def _on_error(self, err: KafkaError) -> None:
        text = (
            f"t={self.rounds.rel(time.monotonic()):.2f}s {self.rounds.describe(self.rounds.current)}: {err}"
        )
        (self.fatal_errors if err.fatal() else self.client_errors).append(text)

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        seq, now, rnd = int(msg.value()), time.monotonic(), self.rounds.current
        if err is None:
            # librdkafka acknowledges some retried messages implicitly, through a later batch's
            # success: persisted, but at an offset it does not know (None here, -1 in the Ack).
            offset = msg.offset()
            self.acks.append(Ack(seq, msg.partition(), -1 if offset is None else offset, now, rnd))
        else:
            self.failures.append(DeliveryFailure(seq, msg.partition(), err.name(), err.fatal(), now, rnd))
            if err.fatal() and len(self.fatal_errors) < 10:
                self.fatal_errors.append(f"seq {seq}: {err}")

    def run(self) -> None:
        try:
            producer = Producer(self.config)
            seq = 0
            while not self._stop_event.is_set():
                try:
                    producer.produce(
                        self.topic,
                        str(seq).encode(),
                        partition=seq % self.partitions,
                        on_delivery=self._on_delivery,
                    )
                except BufferError:
                    producer.poll(0.1)
                    continue
                except KafkaException as e:
                    if e.args[0].code() != KafkaError._FATAL and not e.args[0].fatal():
                        # Refused at once (e.g. _UNKNOWN_TOPIC: a broker answered metadata without
                        # the topic): not acknowledged, so no promise; try the same seq again.
                        key = f"{e.args[0].name()} in round {self.rounds.current}"
                        if not self.refusals[key]:
                            self.rounds.note(f"the producer's produce() raised {e.args[0]}")
                        self.refusals[key] += 1
                        producer.poll(0.1)
                        continue
                    # Unusable from now on: keep what it reports, carry on with a new producer id.
                    self._on_error(e.args[0])
                    producer.poll(1)
                    producer.purge()
                    producer.poll(1)
                    self.restarts += 1
                    producer = Producer(self.config)
                    continue
                seq += 1
                self.produced = seq
                producer.poll(0)
                time.sleep(self.interval)
            self.unfinished = producer.flush(60)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.crash = e

    def stop(self) -> None:
        self._stop_event.set()
        self.join(90)

    def first_ack_after(self, partition: int, since: float) -> Ack | None:
        found = None
        for a in reversed(self.acks):  # appended in time order: walk back to `since`
            if a.t < since:
                break
            if a.partition == partition:
                found = a
        return found


# -- the consumer group ------------------------------------------------------------------------


class GroupReader(threading.Thread):
    """A consumer group member reading along: records every (partition, offset) -> seq it sees,
    commits its position every `commit_interval` s and reads the committed offsets back.

    Violations it finds on the way: a forward jump in offsets (a skip), a committed offset read
    back lower than one read before or than one the coordinator acknowledged, the same offset
    seen twice with different values."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rounds: RoundLog, commit_interval: float):
        super().__init__(name="group-reader", daemon=True)
        self.topic, self.partitions, self.rounds = topic, partitions, rounds
        self.commit_interval = commit_interval
        self.seen: dict[tuple[int, int], int] = {}
        self.next_offset: dict[int, int | None] = {}
        self.acked_commit: dict[int, int] = {}
        self.attempted_commit: dict[int, int] = {}
        self.read_back: dict[int, int] = {}
        self.commits = 0
        self.read_backs = 0
        self.rewinds: list[str] = []
        self.errors: list[str] = []
        self.violations: list[str] = []
        self.crash: BaseException | None = None
        self._stop_event = threading.Event()
        self.config = {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-group",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "enable.partition.eof": False,
            "error_cb": lambda err: self.errors.append(self._stamp(str(err))),
            "logger": CLIENT_LOG,
        }

    def _stamp(self, text: str) -> str:
        return (
            f"t={self.rounds.rel(time.monotonic()):.2f}s {self.rounds.describe(self.rounds.current)}: {text}"
        )

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            # The first record after an assignment must be at or before the last offset committed.
            self.next_offset[tp.partition] = self.attempted_commit.get(tp.partition, 0)

    def _see(self, partition: int, offset: int, seq: int) -> None:
        expected = self.next_offset.get(partition)
        if expected is not None and offset > expected:
            self.violations.append(
                self._stamp(
                    f"group skipped p{partition} offsets {expected}..{offset - 1} (next seen: {offset})"
                )
            )
        elif expected is not None and offset < expected:
            self.rewinds.append(self._stamp(f"p{partition} rewound from {expected} to {offset}"))
        before = self.seen.get((partition, offset))
        if before is not None and before != seq:
            self.violations.append(
                self._stamp(f"group saw p{partition} offset {offset} as seq {before}, later as seq {seq}")
            )
        self.seen[(partition, offset)] = seq
        self.next_offset[partition] = offset + 1

    def _commit_and_read_back(self, consumer: Consumer) -> None:
        offsets = [
            TopicPartition(self.topic, p, nxt)
            for p, nxt in self.next_offset.items()
            if nxt is not None and nxt != self.attempted_commit.get(p)
        ]
        if offsets:
            for tp in offsets:
                self.attempted_commit[tp.partition] = tp.offset
            try:
                for tp in consumer.commit(offsets=offsets, asynchronous=False) or []:
                    if tp.error is None:
                        self.acked_commit[tp.partition] = tp.offset
                        self.commits += 1
                    else:
                        self.errors.append(self._stamp(f"commit p{tp.partition}: {tp.error}"))
            except KafkaException as e:
                self.errors.append(self._stamp(f"commit: {e}"))
        try:
            committed = consumer.committed(
                [TopicPartition(self.topic, p) for p in range(self.partitions)], timeout=5
            )
        except KafkaException as e:
            self.errors.append(self._stamp(f"committed(): {e}"))
            return
        self.read_backs += 1
        for tp in committed:
            if tp.error is not None or tp.offset < 0:
                continue
            before = self.read_back.get(tp.partition)
            if before is not None and tp.offset < before:
                self.violations.append(
                    self._stamp(
                        f"committed offset of p{tp.partition} went backwards: {before} -> {tp.offset}"
                    )
                )
            acked = self.acked_commit.get(tp.partition)
            if acked is not None and tp.offset < acked and self.attempted_commit.get(tp.partition) == acked:
                self.violations.append(
                    self._stamp(
                        f"committed offset of p{tp.partition} read back as {tp.offset}, "
                        f"below the commit of {acked} the coordinator acknowledged"
                    )
                )
            self.read_back[tp.partition] = tp.offset

    def run(self) -> None:
        try:
            consumer = Consumer(self.config)
            consumer.subscribe([self.topic], on_assign=self._on_assign)
            last_commit = time.monotonic()
            try:
                while not self._stop_event.is_set():
                    for m in consumer.consume(500, 0.2):
                        if m.error() is not None:
                            self.errors.append(self._stamp(f"consume: {m.error()}"))
                        else:
                            self._see(m.partition(), m.offset(), int(m.value()))
                    if time.monotonic() - last_commit >= self.commit_interval:
                        self._commit_and_read_back(consumer)
                        last_commit = time.monotonic()
                self._commit_and_read_back(consumer)
            finally:
                consumer.close()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.crash = e

    def caught_up(self, ends: dict[int, int]) -> bool:
        return all((self.next_offset.get(p) or 0) >= end for p, end in ends.items())

    def stop(self) -> None:
        self._stop_event.set()
        self.join(60)


# -- the ZooKeeper watcher ---------------------------------------------------------------------


class ZkWatcher(threading.Thread):
    """Samples the partitions' state znodes, /controller and /brokers/ids every `interval` s and
    keeps each change, so a failure can be told against the leadership history."""

    def __init__(self, zk_connect: str, topic: str, partitions: int, rounds: RoundLog, interval: float = 0.2):
        super().__init__(name="zk-watcher", daemon=True)
        self.zk_connect, self.topic, self.partitions = zk_connect, topic, partitions
        self.rounds, self.interval = rounds, interval
        self.changes: list[tuple[float, int, str, str]] = []  # (t, round, key, value)
        self._last: dict[str, str] = {}
        self._stop_event = threading.Event()

    def _record(self, key: str, value: str) -> None:
        if self._last.get(key) != value:
            self._last[key] = value
            self.changes.append((time.monotonic(), self.rounds.current, key, value))

    def run(self) -> None:
        zk = KazooClient(hosts=self.zk_connect, timeout=10)
        zk.start(timeout=15)
        try:
            while not self._stop_event.wait(self.interval):
                for p in range(self.partitions):
                    s = partition_state(zk, self.topic, p)
                    if s is not None:
                        value = f"leader={s['leader']} epoch={s['leader_epoch']} isr={s['isr']}"
                        self._record(f"p{p}", value)
                self._record("controller", str(controller_id(zk)))
                self._record("brokers", str(registered_brokers(zk)))
        except Exception:  # noqa: BLE001 - a watcher failure must not hide the test's findings
            pass
        finally:
            zk.stop()
            zk.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)

    def history(self, keys: set[str], since: float = 0.0) -> list[str]:
        return [
            f"t={self.rounds.rel(t):7.2f}s round {rnd}: {key} {value}"
            for t, rnd, key, value in self.changes
            if key in keys and t >= since
        ]


# -- read-back and replica comparison ----------------------------------------------------------


def high_watermark(consumer: Any, topic: str, partition: int, timeout: float = 30.0) -> int:
    """The partition's high watermark, asking again while a retriable error says the metadata
    of a just-healed cluster is still moving (NOT_LEADER_OR_FOLLOWER until UpdateMetadata lands)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)[1])
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def read_partitions(
    bootstrap: str, topic: str, partitions: int, timeout: float = 90.0
) -> dict[tuple[int, int], int]:
    """{(partition, offset): seq} of every record below each partition's high watermark, read by a
    fresh assign()-style consumer from the beginning."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"{topic}-read-back",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.max.bytes": 8 * 1024 * 1024,
        "logger": CLIENT_LOG,
    })  # fmt: skip
    try:
        ends = {p: high_watermark(consumer, topic, p) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: dict[tuple[int, int], int] = {}
        next_offset = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + timeout
        while any(next_offset[p] < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read-back stuck at {next_offset}, high watermarks {ends}")
            for m in consumer.consume(1000, 0.5):
                if m.error() is None:
                    records[(m.partition(), m.offset())] = int(m.value())
                    next_offset[m.partition()] = m.offset() + 1
        return records
    finally:
        consumer.close()


@dataclass(frozen=True)
class BatchOnDisk:
    base_offset: int
    length: int
    leader_epoch: int
    crc: int
    digest: str  # of the batch's bytes, so equal digests mean byte-identical batches
    segment: str

    def brief(self) -> str:
        return (
            f"base {self.base_offset} len {self.length} epoch {self.leader_epoch} crc {self.crc:#010x} "
            f"({self.segment})"
        )


def batches_on_disk(partition_dir: Path) -> tuple[list[BatchOnDisk], list[str]]:
    """Every v2 batch of the partition's segment files, in offset order, and any problem met."""
    batches: list[BatchOnDisk] = []
    problems: list[str] = []
    for segment in sorted(partition_dir.glob("*.log")):
        buf = memoryview(segment.read_bytes())
        position = 0
        try:
            for position, h in iter_batches(buf):  # noqa: B007 - position is reported on failure
                digest = hashlib.sha1(buf[position : position + h.size]).hexdigest()
                batches.append(
                    BatchOnDisk(
                        h.base_offset, h.batch_length, h.partition_leader_epoch, h.crc, digest, segment.name
                    )
                )
        except CorruptRecordException as e:
            problems.append(f"{segment}: unreadable batch after position {position}: {e}")
    return batches, problems


def log_end(batches: list[BatchOnDisk], partition_dir: Path) -> int:
    if not batches:
        return 0
    last = batches[-1]
    buf = memoryview((partition_dir / last.segment).read_bytes())
    for _, h in iter_batches(buf):
        if h.base_offset == last.base_offset:
            return h.next_offset
    raise AssertionError(f"batch {last} vanished from {partition_dir}")


@dataclass
class ReplicaComparison:
    divergent_batches: int = 0
    compared_batches: int = 0
    findings: list[str] = field(default_factory=list)
    log_ends: dict[int, dict[int, int]] = field(default_factory=dict)  # partition -> broker -> LEO


def compare_replicas(base_dir: Path, broker_ids: list[int], topic: str, partitions: int) -> ReplicaComparison:
    """Compare every replica's batches byte for byte below the partition's smallest log end offset."""
    result = ReplicaComparison()
    for p in range(partitions):
        per_broker: dict[int, dict[int, BatchOnDisk]] = {}
        ends: dict[int, int] = {}
        for b in broker_ids:
            pdir = base_dir / f"broker-{b}" / "data" / f"{topic}-{p}"
            batches, problems = batches_on_disk(pdir)
            result.findings += [f"p{p} broker {b}: {x}" for x in problems]
            per_broker[b] = {x.base_offset: x for x in batches}
            ends[b] = log_end(batches, pdir)
        result.log_ends[p] = ends
        common_end = min(ends.values())
        bases = sorted({o for batches in per_broker.values() for o in batches if o < common_end})
        for base in bases:
            versions = {b: per_broker[b].get(base) for b in broker_ids}
            result.compared_batches += 1
            if len({(v.digest if v else None) for v in versions.values()}) > 1:
                result.divergent_batches += 1
                if result.divergent_batches <= 20:
                    result.findings.append(
                        f"p{p} batch at offset {base} differs: "
                        + "; ".join(
                            f"broker {b}: {v.brief() if v else 'no batch starts here'}"
                            for b, v in versions.items()
                        )
                    )
    return result


# -- the final checks --------------------------------------------------------------------------


def lost_and_duplicated(
    acks: list[Ack], records: dict[tuple[int, int], int], rounds: RoundLog, watcher: ZkWatcher
) -> tuple[list[str], dict[str, int]]:
    """Invariant 1: each acknowledged record at its acknowledged (partition, offset) in `records`
    (an offset-less acknowledgement: somewhere in its partition), no sequence number twice, no
    offset acknowledged twice. The findings and the counts."""
    where: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (p, off), seq in records.items():
        where[seq].append((p, off))
    lost = [
        a
        for a in acks
        if (
            records.get((a.partition, a.offset)) != a.seq
            if a.offset >= 0
            else a.partition not in {p for p, _ in where[a.seq]}
        )
    ]
    findings = []
    for a in lost[:20]:
        found = records.get((a.partition, a.offset))
        findings.append(
            f"LOST: seq {a.seq} acknowledged at p{a.partition} offset "
            f"{a.offset if a.offset >= 0 else '(unknown)'} in {rounds.describe(a.round)} "
            f"(t={rounds.rel(a.t):.2f}s); the log holds {'nothing' if found is None else f'seq {found}'} there"
            f"{f', and seq {a.seq} at {where[a.seq]}' if where.get(a.seq) else ''}; "
            f"p{a.partition}'s leadership since: {watcher.history({f'p{a.partition}'}, a.t - 1)[:12]}"
        )
    duplicated = {seq: pos for seq, pos in where.items() if len(pos) > 1}
    for seq, pos in sorted(duplicated.items())[:20]:
        findings.append(f"DUPLICATE: seq {seq} is in the log {len(pos)} times, at {sorted(pos)}")
    same_offset = Counter((a.partition, a.offset) for a in acks if a.offset >= 0)
    for (p, off), n in sorted(same_offset.items()):
        if n > 1:
            seqs = [a.seq for a in acks if (a.partition, a.offset) == (p, off)]
            findings.append(f"ACKNOWLEDGED TWICE: p{p} offset {off} was acknowledged for seqs {seqs}")
    counts = {
        "lost": len(lost),
        "duplicated": len(duplicated),
        "acknowledged without an offset (found in their partition)": sum(a.offset < 0 for a in acks),
    }
    return findings, counts


def group_findings(
    acks: list[Ack], records: dict[tuple[int, int], int], group: GroupReader, rounds: RoundLog
) -> tuple[list[str], int]:
    """Invariant 3: what the group found on the way, and every acknowledged record still in the log
    that it never saw. The findings and the number missed."""
    findings = [f"GROUP: {v}" for v in group.violations]
    seen_seqs = set(group.seen.values())
    missed = [
        a
        for a in acks
        if (
            records.get((a.partition, a.offset)) == a.seq and group.seen.get((a.partition, a.offset)) != a.seq
            if a.offset >= 0
            else a.seq not in seen_seqs
        )
    ]
    for a in missed[:10]:
        findings.append(
            f"GROUP: never saw seq {a.seq} at p{a.partition} offset {a.offset} (it saw "
            f"{group.seen.get((a.partition, a.offset))}), acknowledged in {rounds.describe(a.round)}"
        )
    return findings, len(missed)


def longest_gap(acks: list[Ack], rounds: RoundLog) -> tuple[float, str]:
    """The longest time between two consecutive acknowledgements, and where it ended."""
    times = sorted((a.t, a.round) for a in acks)
    best, where = 0.0, "-"
    for (t0, _), (t1, rnd) in zip(times, times[1:], strict=False):
        if t1 - t0 > best:
            best, where = t1 - t0, f"ending t={rounds.rel(t1):.2f}s in {rounds.describe(rnd)}"
    return best, where


# -- the cluster -------------------------------------------------------------------------------


def fault_base_dir(seed: int) -> Path:
    """KAFKAPY_FAULT_DIR, or a new temporary directory named after the seed."""
    chosen = os.environ.get("KAFKAPY_FAULT_DIR")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return Path(tempfile.mkdtemp(prefix=f"kafkapy-faults-seed{seed}-"))


@contextlib.contextmanager
def started_cluster(base_dir: Path, brokers: int, overrides: dict[str, str]) -> Iterator[KafkapyCluster]:
    """kafkapy_cluster_context, started again from scratch when a broker found its free port taken
    before it could bind it (a hazard of a shared test machine, not of the broker)."""
    for attempt in range(1, 4):
        started = False
        try:
            with kafkapy_cluster_context(brokers, overrides, base_dir) as cluster:
                started = True
                yield cluster
            return
        except RuntimeError:
            logs = [base_dir / f"broker-{b}" / "logs" / "kafkaServer.out" for b in range(brokers)]
            if started or not any(port_taken_in(p) for p in logs) or attempt == 3:
                raise
            print(
                f"a broker's port was taken during start-up (attempt {attempt}): starting again", flush=True
            )
            for child in base_dir.iterdir():
                shutil.rmtree(child, ignore_errors=True)


def port_taken_in(broker_out: Path) -> bool:
    """Whether a broker's kafkaServer.out ends with its port found taken (a client's ephemeral
    port may take a free port the test chose, before the broker binds it)."""
    return broker_out.exists() and "address already in use" in broker_out.read_text(errors="replace")[-5000:]
