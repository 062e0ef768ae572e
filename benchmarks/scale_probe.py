"""How the scale benchmark looks at a cluster: from the outside, the way an operator would.

Three views, each cheap enough to poll every ~0.1-0.3 s:
- Metadata v9 for all topics, sent raw to one broker (its frame size is the response size);
- ZooKeeper (kazoo): /controller, /brokers/ids;
- each broker's Prometheus endpoint (`kafkapy.metrics.port`), parsed for a few gauges;
plus /proc/<pid> for RSS, open files and CPU seconds.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.request
from dataclasses import dataclass

from kafkapy.protocol import framing, messages
from kafkapy.protocol.generated.metadata_response import MetadataResponse

METADATA = 3
METADATA_VERSION = 9


@dataclass(frozen=True)
class MetadataView:
    """What one broker's Metadata answer says about the partitions: counts, not the whole answer."""

    broker: int  # the broker asked
    controller: int
    brokers: tuple[int, ...]
    partitions: int
    leaderless: int  # leader -1 or a broker not in the broker list
    under_replicated: int  # ISR smaller than the replica set
    led_by: dict[int, int]  # broker id -> partitions it leads
    frame_bytes: int
    seconds: float  # request sent -> last byte of the answer read

    @property
    def all_led(self) -> bool:
        return self.partitions > 0 and self.leaderless == 0

    @property
    def all_isr_full(self) -> bool:
        return self.all_led and self.under_replicated == 0


class RawMetadata:
    """A socket to one broker that asks Metadata v9 for every topic and times the round trip."""

    def __init__(self, broker_id: int, port: int, timeout: float = 30.0):
        self.broker_id = broker_id
        self.port = port
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._correlation = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def _recv(self, sock: socket.socket, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionError(f"broker {self.broker_id} closed the connection")
            got += k
        return bytes(buf)

    def fetch(self) -> tuple[bytes, int, float]:
        """(frame, header end offset, seconds) of one all-topics Metadata round trip."""
        self._correlation += 1
        body = {"topics": None, "allow_auto_topic_creation": False}
        payload = messages.encode_request(METADATA, METADATA_VERSION, body)
        request = framing.encode_request_frame(
            METADATA, METADATA_VERSION, self._correlation, "scale-bench", payload
        )
        try:
            sock = self._connect()
            started = time.perf_counter()
            sock.sendall(request)
            size = int.from_bytes(self._recv(sock, 4), "big", signed=True)
            frame = self._recv(sock, size)
            elapsed = time.perf_counter() - started
        except OSError:
            self.close()
            raise
        got, offset = framing.parse_response_header(
            frame, framing.response_header_version(METADATA, METADATA_VERSION)
        )
        if got != self._correlation:
            self.close()
            raise ConnectionError(f"correlation id {got}, expected {self._correlation}")
        return frame, offset, elapsed

    def view(self) -> MetadataView:
        frame, offset, elapsed = self.fetch()
        md = messages.decode_response(METADATA, METADATA_VERSION, frame, offset)
        assert isinstance(md, MetadataResponse)
        live = {b.node_id for b in md.brokers}
        partitions = leaderless = under = 0
        led: dict[int, int] = {}
        for topic in md.topics:
            if topic.error_code != 0:
                continue
            for p in topic.partitions:
                partitions += 1
                if p.leader_id < 0 or p.leader_id not in live:
                    leaderless += 1
                else:
                    led[p.leader_id] = led.get(p.leader_id, 0) + 1
                if len(p.isr_nodes) < len(p.replica_nodes):
                    under += 1
        return MetadataView(
            self.broker_id,
            md.controller_id,
            tuple(sorted(live)),
            partitions,
            leaderless,
            under,
            led,
            len(frame) + 4,
            elapsed,
        )


def scrape(port: int, timeout: float = 10.0) -> dict[str, float]:
    """The unlabelled (or single-labelled) samples of a broker's /metrics, by name (labels dropped,
    the last sample of a name wins: enough for the gauges read here, which have one sample)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name_part, _, value = line.rpartition(" ")
        name = name_part.split("{", 1)[0]
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


def controller_in_zk(zk: object) -> tuple[int, int]:
    """(broker id in /controller or -1, its znode's czxid or -1): czxid tells a re-election by the
    same broker from the znode that was there before."""
    try:
        data, stat = zk.get("/controller")  # type: ignore[attr-defined]
        return int(json.loads(data)["brokerid"]), int(stat.czxid)
    except Exception:  # noqa: BLE001 - no node, or being rewritten
        return -1, -1


def registered(zk: object) -> set[int]:
    try:
        return {int(c) for c in zk.get_children("/brokers/ids")}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return set()


# -- /proc ------------------------------------------------------------------------------------

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))
