"""A broker's cost per partition: all-topics Metadata latency, idle CPU, RSS, open files, start-up.

    python -m benchmarks.broker_scale_probe --brokers 3 --topics 100 --partitions 100 --rf 3

Starts ZooKeeper + N brokers through kafkapy.testing, creates topics x partitions with the given
replication factor, waits until every partition has a leader, then measures (per broker):
Metadata(all topics) latency (min/median/max over --metadata-runs), response size, idle CPU
(% of a core over --idle-s), RSS, open fds; then broker 0's restart after SIGTERM (clean) and
after SIGKILL (unclean): seconds until its server.log says it started, and until the cluster's
metadata shows every partition led again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import closing
from pathlib import Path

from kafkapy.client.connection import BrokerConnection
from kafkapy.testing import BrokerHandle, kafkapy_cluster_context

CLK_TCK = os.sysconf("SC_CLK_TCK")
STARTED = "started (kafka.server.KafkaServer)"


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def metadata(port: int, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    with closing(BrokerConnection("127.0.0.1", port, "scale-probe", timeout)) as conn:
        t0 = time.perf_counter()
        md = conn.send(3, 9, {"topics": None, "allow_auto_topic_creation": False})
        return time.perf_counter() - t0, md


def led_partitions(port: int) -> int:
    _, md = metadata(port)
    return sum(1 for t in md.topics for p in t.partitions if p.error_code == 0 and p.leader_id >= 0)


def create_topics(bootstrap: str, topics: int, partitions: int, rf: int) -> None:
    """CreateTopics in batches; a timed-out answer is not fatal (the topics may still come:
    `wait_led` decides), an existing topic is fine (a retried batch)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 180000})
    batch = 20
    for start in range(0, topics, batch):
        new = [NewTopic(f"scale-{i:04d}", partitions, rf) for i in range(start, min(topics, start + batch))]
        for name, fut in admin.create_topics(new, request_timeout=180, operation_timeout=180).items():
            try:
                fut.result()
            except KafkaException as e:
                print(f"create {name}: {e}", flush=True)


def wait_led(port: int, want: int, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if led_partitions(port) >= want:
                return time.monotonic() - t0
        except Exception:  # noqa: BLE001 - broker still starting
            pass
        time.sleep(0.5)
    raise TimeoutError(f"fewer than {want} partitions led after {timeout}s")


def started_after(b: BrokerHandle, t0: float, before: int, timeout: float = 600) -> float:
    """Seconds until the broker logs its `before + 1`-th "started" line (server.log rolls over)."""
    while time.monotonic() - t0 < timeout:
        if b.server_log().count(STARTED) > before:
            return time.monotonic() - t0
        if b.process is not None and b.process.poll() is not None:
            raise RuntimeError("broker exited")
        time.sleep(0.05)
    raise TimeoutError("broker did not start")


def restart(b: BrokerHandle, other_port: int, want: int, clean: bool) -> tuple[float, float, float]:
    t0 = time.monotonic()
    if clean:
        b.stop(timeout=600)
    else:
        b.kill()
    stop_s = time.monotonic() - t0
    before = b.server_log().count(STARTED)
    t0 = time.monotonic()
    b.start()
    up = started_after(b, t0, before)
    led = wait_led(other_port, want, 300) + up
    return stop_s, up, led


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--idle-s", type=float, default=20)
    ap.add_argument("--metadata-runs", type=int, default=10)
    ap.add_argument("--no-restart", action="store_true")
    args = ap.parse_args()
    want = args.topics * args.partitions
    with kafkapy_cluster_context(args.brokers, {"num.partitions": "1"}) as c:
        t0 = time.monotonic()
        create_topics(c.bootstrap_servers, args.topics, args.partitions, args.rf)
        created = time.monotonic() - t0
        led = wait_led(c.brokers[0].port, want, 600) + created
        print(f"create {want} partitions rf{args.rf}: acked {created:.1f}s, all led {led:.1f}s", flush=True)
        time.sleep(5)
        for b in c.brokers:
            times = []
            size = 0
            for _ in range(args.metadata_runs):
                dt, md = metadata(b.port)
                times.append(dt * 1000)
                size = sum(len(t.partitions) for t in md.topics)
            print(
                f"broker {b.broker_id} metadata(all, {size} partitions) ms: min {min(times):.1f} "
                f"median {statistics.median(times):.1f} max {max(times):.1f}",
                flush=True,
            )
        pids = {b.broker_id: b.process.pid for b in c.brokers if b.process}
        before = {i: cpu_ticks(p) for i, p in pids.items()}
        time.sleep(args.idle_s)
        for i, p in pids.items():
            cpu = (cpu_ticks(p) - before[i]) / CLK_TCK / args.idle_s * 100
            print(f"broker {i} idle cpu {cpu:.1f}% rss {rss_mb(p):.0f} MB fds {open_fds(p)}", flush=True)
        if args.no_restart:
            return
        b = c.brokers[0]
        other = c.brokers[-1].port
        for clean in (True, False):
            stop_s, up, led_s = restart(b, other if len(c.brokers) > 1 else b.port, want, clean)
            kind = "clean (SIGTERM)" if clean else "unclean (SIGKILL)"
            print(
                f"restart after {kind}: stop {stop_s:.1f}s, started {up:.1f}s, all led {led_s:.1f}s",
                flush=True,
            )
            time.sleep(3)
        p = b.process.pid if b.process else 0
        print(f"broker 0 after restarts rss {rss_mb(p):.0f} MB fds {open_fds(p)}", flush=True)


if __name__ == "__main__":
    main()
