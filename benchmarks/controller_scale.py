"""The controller's cost at scale: 3 brokers + ZooKeeper, many partitions at RF 3, timing
topic creation (until every broker's metadata shows a leader and a full ISR for each one),
a controlled shutdown (SIGTERM until exit) and a controller failover (/controller deleted until
the new controller is ready and every partition has a live leader).

    PYTHONPATH=$PWD python -m benchmarks.controller_scale --topics 100 --partitions 100
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kazoo.client import KazooClient

from kafkapy.client.connection import BrokerConnection
from kafkapy.testing import KafkapyCluster
from kafkapy.zk.cluster_znodes import generate_topic_id
from kafkapy.zk.topic_znodes import TopicZNode

POLL_S = 0.05


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(POLL_S)


def _metadata(port: int) -> object | None:
    try:
        with contextlib.closing(BrokerConnection("127.0.0.1", port, "controller-scale", 30.0)) as conn:
            return conn.send(3, 1, {"topics": None})
    except Exception:  # noqa: BLE001 - broker busy or gone: poll again
        return None


def _partitions_ready(port: int, expected: int, live: set[int], full_isr: bool) -> bool:
    md = _metadata(port)
    if md is None:
        return False
    n = 0
    for t in md.topics:  # type: ignore[attr-defined]
        if not t.name.startswith("scale-"):
            continue
        for p in t.partitions:
            if p.leader_id not in live:
                return False
            if full_isr and len(p.isr_nodes) != len(p.replica_nodes):
                return False
            n += 1
    return n == expected


def _stamp(log: str, needle: str) -> float | None:
    """The time of the first server.log line containing `needle`, in seconds."""
    import datetime

    for line in log.splitlines():
        if needle in line and line.startswith("["):
            when = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")
            return when.timestamp()
    return None


def _controller(zk: KazooClient) -> int:
    import json

    try:
        return int(json.loads(zk.get("/controller")[0])["brokerid"])
    except Exception:  # noqa: BLE001
        return -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--isr-timeout", type=float, default=120, help="how long to wait for full ISRs")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    total = args.topics * args.partitions
    base = Path(tempfile.mkdtemp(prefix="ctl-scale-"))
    cluster = KafkapyCluster(
        base,
        3,
        {
            "auto.leader.rebalance.enable": "false",
            "offsets.topic.num.partitions": "1",
            "log.segment.bytes": "1048576",
            "log.index.size.max.bytes": "65536",
            # The brokers take minutes to apply thousands of new replicas on a loaded box; with
            # the default 30 s the leaders drop the followers from the ISR meanwhile, and a
            # controlled shutdown then has nowhere to move leadership. This measures the controller.
            "replica.lag.time.max.ms": "600000",
        },
    )
    try:
        cluster.start()
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=30)
        zk.start(timeout=15)
        ports = {b.broker_id: b.port for b in cluster.brokers}
        print(
            f"cluster up in {base}; pids {[b.process.pid for b in cluster.brokers if b.process]}", flush=True
        )

        # --- topic creation: the znodes as CreateTopics writes them, all at once
        t0 = time.monotonic()
        pending = []
        for i in range(args.topics):
            assignment = {p: [(p + i + k) % 3 for k in range(3)] for p in range(args.partitions)}
            data = TopicZNode.encode(generate_topic_id(), assignment)
            pending.append(zk.create_async(TopicZNode.path(f"scale-{i}"), data))
        for r in pending:
            r.get()
        t_written = time.monotonic() - t0
        _wait(
            lambda: all(_partitions_ready(p, total, {0, 1, 2}, False) for p in ports.values()),
            args.timeout,
            "creation",
        )
        t_leaders = time.monotonic() - t0
        print(
            f"CREATE {total} partitions: all leaders {t_leaders:.2f}s (znodes written in {t_written:.2f}s)",
            flush=True,
        )
        try:
            _wait(
                lambda: all(_partitions_ready(p, total, {0, 1, 2}, True) for p in ports.values()),
                args.isr_timeout,
                "full ISR",
            )
            print(f"  full ISR everywhere after {time.monotonic() - t0:.2f}s", flush=True)
        except TimeoutError:
            print(f"  ISR not full everywhere after {time.monotonic() - t0:.2f}s (brokers' side)", flush=True)

        # --- controlled shutdown of a broker that is not the controller
        controller = _controller(zk)
        victim = next(b for b in cluster.brokers if b.broker_id != controller)
        t0 = time.monotonic()
        code = victim.stop(timeout=args.timeout)
        t_shutdown = time.monotonic() - t0
        log = (victim.logs / "server.log").read_text(errors="replace")
        ok = (
            "Controlled shutdown request returned successfully" in log or "controlled shutdown" in log.lower()
        )
        print(f"SHUTDOWN broker {victim.broker_id}: {t_shutdown:.2f}s exit={code} logged={ok}", flush=True)
        stamps = {
            what: _stamp(log, line)
            for what, line in (
                ("start", "] shutting down"),
                ("moved", "Controlled shutdown request returned successfully"),
                ("logs", "Shutting down. (kafkapy.log.LogManager)"),
                ("done", "] shut down completed"),
            )
        }
        if all(v is not None for v in stamps.values()):
            print(
                "  controlled shutdown (leadership moved) {:.2f}s, then {:.2f}s until the log manager, "
                "{:.2f}s closing logs".format(
                    stamps["moved"] - stamps["start"],  # type: ignore[operator]
                    stamps["logs"] - stamps["moved"],  # type: ignore[operator]
                    stamps["done"] - stamps["logs"],  # type: ignore[operator]
                ),
                flush=True,
            )
        live = {b.broker_id for b in cluster.brokers if b.process is not None}
        survivor_ports = [ports[b] for b in live]
        try:
            _wait(
                lambda: all(_partitions_ready(p, total, live, False) for p in survivor_ports),
                args.isr_timeout,
                "leaders after shutdown",
            )
            print(f"  leaders on live brokers after {time.monotonic() - t0:.2f}s", flush=True)
        except TimeoutError:
            print("  some partitions without a live leader", flush=True)

        # --- controller failover
        old = _controller(zk)
        epoch_before = int(zk.get("/controller_epoch")[0])
        t0 = time.monotonic()
        zk.delete("/controller")
        _wait(lambda: _controller(zk) >= 0, args.timeout, "new controller")
        t_elected = time.monotonic() - t0
        new = _controller(zk)
        new_broker = cluster.broker(new)
        ready = re.compile(rf"Ready to serve as the new controller with epoch {epoch_before + 1}")

        def _ready() -> bool:
            path = new_broker.logs / "controller.log"
            return path.exists() and ready.search(path.read_text(errors="replace")) is not None

        _wait(_ready, args.timeout, "controller ready")
        t_ready = time.monotonic() - t0
        try:
            _wait(
                lambda: all(_partitions_ready(p, total, live, False) for p in survivor_ports),
                args.isr_timeout,
                "leaders after failover",
            )
            t_leaders = time.monotonic() - t0
        except TimeoutError:
            t_leaders = float("nan")
        print(
            f"FAILOVER {old}->{new}: elected {t_elected:.2f}s, ready {t_ready:.2f}s, "
            f"all leaders {t_leaders:.2f}s",
            flush=True,
        )
        zk.stop()
        zk.close()
    finally:
        cluster.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
