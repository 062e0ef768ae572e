"""Helpers for the ZooKeeper fault tests: a numbered idempotent producer and the log audit.

The invariant the tests check: every record the producer saw acknowledged (acks=all) is in the
log exactly once, at the partition and offset of its acknowledgement, and no record appears twice.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.exceptions import NoNodeError

from kafkapy.testing import zk_controller_id
from tests.faults.fault_helpers import high_watermark


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> float:
    """Poll `condition` until true; returns the seconds it took, fails the test after `timeout`."""
    started = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def wait_quietly(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll `condition` tightly for up to `timeout` s; whether it became true (no failure)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
    return False


def make_controller(zk: Any, broker_id: int, rivals: Sequence[Any] = ()) -> None:
    """Delete /controller until `broker_id` wins the election. `rivals` (broker handles) are
    paused (SIGSTOP) meanwhile, for a second or so, well inside their sessions: a broker that
    reaches ZooKeeper through a proxy is a hop slower to every race and could lose all of them."""
    for _ in range(30):
        if zk_controller_id(zk) == broker_id:
            return
        for rival in rivals:
            rival.pause()
        try:
            with contextlib.suppress(NoNodeError):
                zk.delete("/controller")
            wait_for(lambda: zk_controller_id(zk) != -1, 30, "a controller")
        finally:
            for rival in rivals:
                rival.resume()
    raise AssertionError(f"broker {broker_id} never won the controller election")


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    rf: int,
    configs: dict[str, str],
    assignment: list[list[int]] | None = None,
) -> None:
    """Create `topic`; with `assignment`, partition p's replicas are assignment[p] (first leads)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = (
        NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment, config=configs)
        if assignment
        else NewTopic(topic, partitions, rf, config=configs)
    )
    futures = admin.create_topics([new], request_timeout=30, operation_timeout=20)
    futures[topic].result(40)


@dataclass
class NumberedProducer:
    """Writes b"<n>" for n = 0, 1, ... round-robin over the partitions from a thread of its own,
    acks=all and idempotent, and remembers where each acknowledged record landed."""

    bootstrap: str
    topic: str
    partitions: int
    rate_per_s: float = 200.0
    acked: dict[int, tuple[int, int]] = field(default_factory=dict)
    ack_times: list[float] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    sent: int = 0
    # librdkafka's fatal error (e.g. OUT_OF_ORDER_SEQUENCE_NUMBER: the broker lost acked records).
    fatal: str | None = None

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                # Long enough to outlast every fault here: a record fails only if really lost.
                "message.timeout.ms": 120000,
                "error_cb": self._on_error,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._thread = threading.Thread(target=self._run, name="numbered-producer", daemon=True)

    def start(self) -> NumberedProducer:
        self._thread.start()
        return self

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = str(err)

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        n = int(msg.value())
        with self._lock:
            if err is None:
                self.acked[n] = (msg.partition(), msg.offset())
                self.ack_times.append(time.monotonic())
            else:
                self.failed[n] = str(err)

    def _run(self) -> None:
        interval = 1.0 / self.rate_per_s
        while not self._stop.is_set():
            n = self.sent
            try:
                self._producer.produce(
                    self.topic, b"%d" % n, partition=n % self.partitions, on_delivery=self._on_delivery
                )
                self.sent += 1
            except BufferError:
                pass
            except KafkaException as e:
                self.fatal = str(e)
                return
            self._producer.poll(0)
            time.sleep(interval)

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def acked_since(self, since: float, until: float = float("inf")) -> int:
        with self._lock:
            return sum(1 for t in self.ack_times if since <= t < until)

    def longest_ack_gap(self, start: float, end: float) -> float:
        """The longest time without any acknowledgement inside [start, end]."""
        with self._lock:
            times = [start] + [t for t in self.ack_times if start <= t <= end] + [end]
        return max(b - a for a, b in zip(times, times[1:], strict=False))

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop producing and wait for the outstanding records; returns how many are still unresolved."""
        self._stop.set()
        self._thread.join(10)
        # poll() rather than flush(): after a fatal error flush() raises a KafkaError that takes
        # the whole pytest process down; the error callback has recorded it by then.
        deadline = time.monotonic() + flush_timeout
        while len(self._producer) and self.fatal is None and time.monotonic() < deadline:
            self._producer.poll(0.1)
        return len(self._producer)


def read_partitions(
    bootstrap: str, topic: str, partitions: int, timeout: float = 60.0
) -> dict[int, dict[int, int]]:
    """Everything in the topic up to each partition's high watermark: {partition: {offset: n}}."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "zk-fault-audit",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {p: high_watermark(consumer, topic, p) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any(len(got[p]) < ends[p] and (max(got[p], default=-1) + 1) < ends[p] for p in got):
            assert time.monotonic() < deadline, (
                f"could not read up to {ends}: have {[len(v) for v in got.values()]}"
            )
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            got[msg.partition()][msg.offset()] = int(msg.value())
        return got
    finally:
        consumer.close()


@dataclass
class Audit:
    acked: int
    lost: list[int]
    misplaced: list[int]
    duplicates: list[int]
    in_log: int

    def assert_clean(self) -> None:
        assert not self.lost, f"{len(self.lost)} acknowledged records lost, e.g. {self.lost[:10]}"
        assert not self.misplaced, (
            f"{len(self.misplaced)} records not at their acked offset: {self.misplaced[:10]}"
        )
        assert not self.duplicates, f"{len(self.duplicates)} records written twice: {self.duplicates[:10]}"


def audit(producer: NumberedProducer, log: dict[int, dict[int, int]]) -> Audit:
    where: dict[int, list[tuple[int, int]]] = {}
    for p, records in log.items():
        for offset, n in records.items():
            where.setdefault(n, []).append((p, offset))
    lost = sorted(n for n in producer.acked if n not in where)
    misplaced = sorted(n for n, at in producer.acked.items() if n in where and at not in where[n])
    duplicates = sorted(n for n, at in where.items() if len(at) > 1)
    return Audit(len(producer.acked), lost, misplaced, duplicates, sum(len(r) for r in log.values()))


def partition_states(zk: Any, topic: str, partitions: int) -> list[dict[str, Any]]:
    """/brokers/topics/<topic>/partitions/<p>/state of every partition, as written by Kafka."""
    out = []
    for p in range(partitions):
        data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        out.append(json.loads(data))
    return out


def metadata_controllers(cluster: Any) -> dict[int, int]:
    """The controller id each running broker's Metadata answer names (-2: no answer)."""
    from kafkapy.client.connection import BrokerConnection

    out = {}
    for b in cluster.brokers:
        if not b.is_running():
            continue
        try:
            with contextlib.closing(BrokerConnection("127.0.0.1", b.port, "zk-fault-test", 5.0)) as conn:
                out[b.broker_id] = conn.send(3, 1, {"topics": []}).controller_id
        except Exception:  # noqa: BLE001 - an unreachable broker is what this reports
            out[b.broker_id] = -2
    return out


def metadata_leaders(port: int, topic: str) -> dict[int, int]:
    """{partition: leader} as one broker's Metadata answer has them (its metadata cache); empty
    while that broker does not answer (the tests poll this through restarts)."""
    from kafkapy.client.connection import BrokerConnection

    try:
        with contextlib.closing(BrokerConnection("127.0.0.1", port, "zk-fault-test", 5.0)) as conn:
            md = conn.send(3, 1, {"topics": [{"name": topic}]})
    except Exception:  # noqa: BLE001 - an unreachable broker is what this reports
        return {}
    return {p.partition_index: p.leader_id for t in md.topics for p in t.partitions}


class TcpProxy:
    """A loopback TCP forwarder one broker reaches ZooKeeper through, so that the test can cut
    that broker off ZooKeeper alone (its process and every other connection keep running)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="zk-proxy", daemon=True).start()

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            if self._cut.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()

    def cut(self) -> None:
        """Drop every forwarded connection and refuse new ones until restore()."""
        self._cut.set()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self.cut()
        self._server.close()
