"""A seeded mutation fuzzer over real request frames must not take the broker down (issue 19).

Invariants, checked against one real broker process:
- it stays up through every frame;
- after every HEALTH_EVERY frames a fresh connection gets ApiVersions and Metadata answered;
- its RSS (/proc/<pid>/status VmRSS) stays within RSS_BOUND_MB of its RSS once warmed up
  (every seed sent once, so every codec it compiles is compiled);
- afterwards a real client (confluent-kafka) produces to and consumes from a new topic.

Frames come from tests/faults/fuzz_corpus.py: every API the broker advertises (inter-broker
ones included) at three versions, the captured client frames, and their mutants. At most
CONNECTIONS connections are open at once; each carries one request at a time, is reopened
when the broker closes it (as it should after a malformed frame), and is dropped after
PARK_S without an answer (a mutant may legitimately wait: a long-poll fetch, a join).

KAFKAPY_FUZZ_FRAMES sets the number of frames (CI default below), KAFKAPY_FUZZ_SEED the seed.
The figures (frames, rate, peak RSS, outcomes) are printed at the end (`pytest -s`).
"""

from __future__ import annotations

import os
import random
import selectors
import socket
import struct
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import fuzz_corpus as corpus
import pytest
from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.testing import KafkapyCluster

# ~3,100 frames/s measured on a shared 2-core machine (300,000 in 95 s): 250,000 takes ~85 s
# there, under three minutes at half that rate.
DEFAULT_FRAMES = 250_000
FRAMES = int(os.environ.get("KAFKAPY_FUZZ_FRAMES", DEFAULT_FRAMES))
SEED = int(os.environ.get("KAFKAPY_FUZZ_SEED", 19))
CONNECTIONS = 3
HEALTH_EVERY = 2_000
RSS_EVERY = 100
RSS_BOUND_MB = 300
PARK_S = 0.5
# Our connections (CONNECTIONS) plus the ones the broker has yet to notice we closed.
FD_SLACK = 200
HEALTH_TIMEOUT_S = 15.0
BROKER_ID = 0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.kafkapy_cluster(
        # Auto-creation would turn every mutated topic name in a Metadata request into a new
        # topic: a state change Kafka would make too, not a request the broker should refuse.
        overrides={"auto.create.topics.enable": "false", "transaction.state.log.min.isr": "1"}
    ),
]


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_kinds(pid: int) -> Counter[str]:
    """What the broker's descriptors are: sockets, or files by their directory (a topic's)."""
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kinds[target.split(":")[0] if ":" in target else os.path.basename(os.path.dirname(target))] += 1
    return kinds


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


@dataclass
class _Conn:
    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    sent_at: float = 0.0  # when its outstanding request went out; 0: none outstanding


class Fuzzer:
    """Sends frames over a few non-blocking connections, one outstanding request each."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.conns: list[_Conn] = []
        self.outcomes: Counter[str] = Counter()

    def _open(self) -> _Conn:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.setblocking(False)
        conn = _Conn(sock)
        self.selector.register(sock, selectors.EVENT_READ, conn)
        self.conns.append(conn)
        return conn

    def _drop(self, conn: _Conn, outcome: str) -> None:
        self.outcomes[outcome] += 1
        self.selector.unregister(conn.sock)
        conn.sock.close()
        self.conns.remove(conn)

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn, "closed by broker")
            return
        conn.buf += data
        while len(conn.buf) >= 4:  # whole response frames end the outstanding request
            (size,) = struct.unpack_from(">i", conn.buf)
            if len(conn.buf) < 4 + size:
                break
            del conn.buf[: 4 + size]
            conn.sent_at = 0.0
            self.outcomes["answered"] += 1

    def _poll(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            conn = key.data
            if conn in self.conns:
                self._read(conn)
        now = time.monotonic()
        for conn in list(self.conns):
            if conn.sent_at and now - conn.sent_at > PARK_S:
                self._drop(conn, "parked, dropped by us")

    def _idle_connection(self) -> _Conn:
        while True:
            for conn in self.conns:
                if not conn.sent_at:
                    return conn
            if len(self.conns) < CONNECTIONS:
                return self._open()
            self._poll(0.05)

    def send(self, frame: bytes, lies_about_size: bool) -> None:
        conn = self._idle_connection()
        try:
            conn.sock.sendall(frame) if len(frame) < 65536 else self._send_slowly(conn, frame)
        except BlockingIOError:
            self._drop(conn, "send would block")
            return
        except OSError:
            self._drop(conn, "closed by broker")
            return
        if lies_about_size:
            # The broker waits for bytes that never come, or reads the rest as a new frame:
            # either way this connection is done, as a broken client's would be.
            self._drop(conn, "size lie, dropped by us")
            return
        conn.sent_at = time.monotonic()
        self._poll(0)

    def _send_slowly(self, conn: _Conn, frame: bytes) -> None:
        conn.sock.setblocking(True)
        conn.sock.settimeout(5)
        try:
            conn.sock.sendall(frame)
        finally:
            conn.sock.setblocking(False)

    def close(self) -> None:
        for conn in list(self.conns):
            self._drop(conn, "closed at end")


def _health_check(port: int) -> None:
    """A valid ApiVersions and Metadata on a fresh connection must be answered."""
    with BrokerConnection("127.0.0.1", port, timeout=HEALTH_TIMEOUT_S) as c:
        versions = c.send(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "fuzz", "client_software_version": "1"}
        )
        assert versions is not None and versions.error_code == 0
        metadata = c.send(ApiKey.METADATA, 9, {"topics": None, "allow_auto_topic_creation": False})
        assert metadata is not None and [b.node_id for b in metadata.brokers] == [BROKER_ID]


def _unexpected_errors(log: str) -> Counter[str]:
    """The exception line of every traceback the broker logged as an unexpected error: a
    handler that crashed on a frame that decoded, a bug even though the broker survived it."""
    found: Counter[str] = Counter()
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "unexpected error" in line:
            tail = next(
                (
                    t
                    for t in lines[i + 1 : i + 80]
                    if t and not t[0].isspace() and ":" in t and not t.startswith("Traceback")
                ),
                "?",
            )
            found[f"{line.split('unexpected error', 1)[1].strip()} -> {tail[:200]}"] += 1
    return found


def _await_group_coordinator(port: int) -> None:
    """The seeds' group and transactional requests create __consumer_offsets and
    __transaction_state (50 partitions, ~250 files each): wait until both are loaded, so the
    idle figures include them."""
    deadline = time.monotonic() + 60
    with BrokerConnection("127.0.0.1", port, timeout=HEALTH_TIMEOUT_S) as c:
        for key_type in (0, 1):  # group, transaction
            while True:
                found = c.send(ApiKey.FIND_COORDINATOR, 1, {"key": "fuzz-key", "key_type": key_type})
                if found is not None and found.error_code == 0:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"no coordinator for key type {key_type} within 60 s")
                time.sleep(0.2)


def _controller_epoch(zk_connect: str) -> int:
    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(timeout=15)
    try:
        data, _ = zk.get("/controller_epoch")
        return int(data)
    finally:
        zk.stop()
        zk.close()


def _round_trip(bootstrap: str) -> None:
    """confluent-kafka creates a fresh topic, produces 100 messages and reads them all back."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"fuzz-round-trip-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 30000})
    sent = [b"value-%d" % i for i in range(100)]
    for value in sent:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"fuzz-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    assert got == sent


@pytest.mark.timeout(max(600, FRAMES // 100))
def test_mutated_frames_never_take_the_broker_down(kafkapy_cluster: KafkapyCluster) -> None:
    broker = kafkapy_cluster.broker(BROKER_ID)
    assert broker.process is not None
    pid = broker.process.pid
    with BrokerConnection("127.0.0.1", broker.port, timeout=HEALTH_TIMEOUT_S) as c:
        supported = c.api_versions()
    epoch = _controller_epoch(kafkapy_cluster.zookeeper_connect)
    seeds = corpus.seed_frames(supported)
    rng = random.Random(SEED)
    fuzzer = Fuzzer(broker.port)
    held_back: Counter[str] = Counter()
    mutations: Counter[str] = Counter()
    try:
        for frame in seeds:  # warm-up: each seed once, unmutated
            if corpus.obeyed_state_change(frame, epoch, BROKER_ID) is None:
                fuzzer.send(frame, lies_about_size=False)
        _health_check(broker.port)
        _await_group_coordinator(broker.port)
        idle_kb = peak_kb = rss_kb(pid)
        bound_kb = idle_kb + RSS_BOUND_MB * 1024
        idle_fds = peak_fds = open_fds(pid)
        started = time.monotonic()
        for i in range(1, FRAMES + 1):
            name, frame = corpus.mutate(rng, rng.choice(seeds), seeds)
            reason = corpus.obeyed_state_change(frame, epoch, BROKER_ID)
            if reason is not None:
                held_back[reason.split(" ")[0]] += 1
                continue
            mutations[name] += 1
            fuzzer.send(frame, lies_about_size=name == "size-lie")
            if i % RSS_EVERY == 0:
                assert broker.is_running(), f"broker died after {i} frames"
                peak_kb = max(peak_kb, rss_kb(pid))
                assert peak_kb <= bound_kb, f"RSS {peak_kb} kB after {i} frames (idle {idle_kb} kB)"
                # Every connection we dropped must have been closed by the broker too.
                peak_fds = max(peak_fds, open_fds(pid))
                assert peak_fds <= idle_fds + FD_SLACK, (
                    f"{peak_fds} fds open after {i} frames (idle {idle_fds}): {fd_kinds(pid).most_common(8)}"
                )
            if i % HEALTH_EVERY == 0:
                _health_check(broker.port)
        elapsed = time.monotonic() - started
        fuzzer.close()
        assert broker.is_running()
        _health_check(broker.port)
        _round_trip(broker.bootstrap)
        crashes = _unexpected_errors(broker.server_log())
        assert not crashes, f"{sum(crashes.values())} handler crashes: {crashes.most_common(10)}"
    finally:
        fuzzer.close()
    sent = sum(mutations.values())
    print(
        f"\nfuzz: seed {SEED}, {len(seeds)} seeds, {sent} mutated frames in {elapsed:.1f} s "
        f"({sent / elapsed:.0f} frames/s), RSS idle {idle_kb // 1024} MB, peak {peak_kb // 1024} MB "
        f"(bound {bound_kb // 1024} MB), fds idle {idle_fds} peak {peak_fds}\n  mutations {dict(mutations)}\n  outcomes {dict(fuzzer.outcomes)}"
        f"\n  held back (a correct broker would obey them) {dict(held_back)}"
    )
