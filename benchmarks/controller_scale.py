"""The controller's cost at scale: 3 brokers + ZooKeeper, many partitions at RF 3, timing
topic creation (until every broker's metadata shows a leader and a full ISR for each one),
a controlled shutdown (SIGTERM until exit) and a controller failover (/controller deleted until
the new controller is ready and every partition has a live leader).

    PYTHONPATH=$PWD python -m benchmarks.controller_scale --topics 100 --partitions 100
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
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


def _stamp(log: str, needle: str, after: float = 0.0) -> float | None:
    """The time of the first log line containing `needle` at or after `after` (wall clock), in s."""
    import datetime

    for line in log.splitlines():
        if needle in line and line.startswith("["):
            when = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if when >= after:
                return when
    return None


# The stopping broker's shutdown, phase by phase: (name, log file, line marking the phase's end).
# Each phase runs from the previous mark to its own; the first from SIGTERM.
SHUTDOWN_MARKS = (
    ("sigterm->request", "victim", "Starting controlled shutdown"),
    ("request->controller", "controller", "Shutting down broker {victim}"),
    ("controller->reply", "victim", "Controlled shutdown request returned successfully"),
    ("reply->fetchers", "victim", "] shutting down (kafkapy.server.ReplicaFetcherManager)"),
    ("fetchers stop", "victim", "] shutdown completed (kafkapy.server.ReplicaFetcherManager)"),
    ("->log manager", "victim", "Shutting down. (kafkapy.log.LogManager)"),
    ("closing logs", "victim", "Shutdown complete. (kafkapy.log.LogManager)"),
    ("zk close", "victim", "] shut down completed"),
)


def shutdown_phases(victim_log: str, controller_log: str, victim: int, sigterm: float) -> dict[str, float]:
    """Seconds per phase of one controlled shutdown, from the brokers' logs (a missing mark
    leaves its phase out and the next phase starts from the last mark found)."""
    phases: dict[str, float] = {}
    last = sigterm
    for name, which, needle in SHUTDOWN_MARKS:
        text = controller_log if which == "controller" else victim_log
        at = _stamp(text, needle.format(victim=victim), sigterm - 0.01)
        if at is not None:
            phases[name] = at - last
            last = at
    return phases


def _controller(zk: KazooClient) -> int:
    import json

    try:
        return int(json.loads(zk.get("/controller")[0])["brokerid"])
    except Exception:  # noqa: BLE001
        return -1


def _elect_preferred(zk: KazooClient, topics: int, partitions: int) -> None:
    """A preferred replica election of every partition, as kafka-preferred-replica-election.sh
    asks for it (/admin/preferred_replica_election)."""
    import json

    wanted = [{"topic": f"scale-{i}", "partition": p} for i in range(topics) for p in range(partitions)]
    zk.create("/admin/preferred_replica_election", json.dumps({"version": 1, "partitions": wanted}).encode(),
              makepath=True)  # fmt: skip


def _leaders_of(port: int, broker_id: int) -> int:
    md = _metadata(port)
    if md is None:
        return -1
    topics = md.topics  # type: ignore[attr-defined]
    return len(
        [p for t in topics if t.name.startswith("scale-") for p in t.partitions if p.leader_id == broker_id]
    )


def _start_py_spy(out: Path, cluster: KafkapyCluster, seconds: int = 15) -> list[subprocess.Popen[bytes]]:
    """py-spy on every running broker (on-CPU samples, all threads) for `seconds`, started 1 s
    ahead of the SIGTERM so the first samples are in."""
    import sys

    out.mkdir(parents=True, exist_ok=True)
    spy = str(Path(sys.executable).parent / "py-spy")
    procs = []
    for b in cluster.brokers:
        if b.process is None:
            continue
        cmd = [spy, "record", "-r", "100", "-d", str(seconds), "-f", "raw", "--nonblocking", "-p"]
        cmd += [str(b.process.pid), "-o", str(out / f"broker-{b.broker_id}.txt")]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1.0)
    return procs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--isr-timeout", type=float, default=120, help="how long to wait for full ISRs")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--shutdowns", type=int, default=1, help="controlled shutdowns of one broker (restarted in between)"
    )
    ap.add_argument("--no-failover", action="store_true", help="skip the controller failover step")
    ap.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="py-spy every broker during the last controlled shutdown (collapsed stacks in this dir)",
    )
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

        # --- controlled shutdown of a broker that is not the controller (repeated: min/median/max)
        controller = _controller(zk)
        victim = next(b for b in cluster.brokers if b.broker_id != controller)
        preferred = sum(
            1 for i in range(args.topics) for p in range(args.partitions) if (p + i) % 3 == victim.broker_id
        )
        totals: list[float] = []
        all_phases: list[dict[str, float]] = []
        for cycle in range(args.shutdowns):
            if cycle:
                victim.start()
                try:
                    _wait(
                        lambda: all(_partitions_ready(p, total, {0, 1, 2}, True) for p in ports.values()),
                        args.isr_timeout,
                        "full ISR after restart",
                    )
                except TimeoutError:
                    print("  ISR not full everywhere after the restart; stopping anyway", flush=True)
                _wait(lambda: _controller(zk) == controller, args.timeout, "same controller")
                # A restarted broker leads nothing (auto.leader.rebalance.enable is off): hand it
                # its preferred leaderships back so that each shutdown moves the same ~1/3.
                _elect_preferred(zk, args.topics, args.partitions)
                try:
                    _wait(
                        lambda: _leaders_of(ports[controller], victim.broker_id) >= preferred,
                        args.isr_timeout,
                        "preferred leaders back",
                    )
                except TimeoutError:
                    print("  the restarted broker did not get its leaderships back in time", flush=True)
            spies = []
            if args.profile is not None and cycle == args.shutdowns - 1:
                spies = _start_py_spy(args.profile, cluster)
            load = os.getloadavg()
            sigterm = time.time()
            t0 = time.monotonic()
            code = victim.stop(timeout=args.timeout)
            t_shutdown = time.monotonic() - t0
            totals.append(t_shutdown)
            log = (victim.logs / "server.log").read_text(errors="replace")
            ctl_path = cluster.broker(controller).logs / "controller.log"
            ctl_log = ctl_path.read_text(errors="replace") if ctl_path.exists() else ""
            ok = "Controlled shutdown request returned successfully" in log
            print(
                f"SHUTDOWN broker {victim.broker_id}: {t_shutdown:.2f}s exit={code} moved={ok} "
                f"load={load[0]:.1f}/{load[1]:.1f}",
                flush=True,
            )
            for spy in spies:
                spy.wait(60)
            phases = shutdown_phases(log, ctl_log, victim.broker_id, sigterm)
            phases["->exit"] = sigterm + t_shutdown - (sigterm + sum(phases.values()))
            all_phases.append(phases)
            print("  phases: " + ", ".join(f"{k} {v:.2f}s" for k, v in phases.items()), flush=True)
            live = {b.broker_id for b in cluster.brokers if b.process is not None}
            survivor_ports = [ports[b] for b in live]
            try:
                _wait(
                    lambda live=live, ports=survivor_ports: all(  # type: ignore[misc]  # binds this cycle's
                        _partitions_ready(p, total, live, False) for p in ports
                    ),
                    args.isr_timeout,
                    "leaders after shutdown",
                )
                print(f"  leaders on live brokers after {time.monotonic() - t0:.2f}s", flush=True)
            except TimeoutError:
                print("  some partitions without a live leader", flush=True)
        if len(totals) > 1:
            print(
                f"SHUTDOWN x{len(totals)}: min {min(totals):.2f}s median {statistics.median(totals):.2f}s "
                f"max {max(totals):.2f}s",
                flush=True,
            )
            for name in [m[0] for m in SHUTDOWN_MARKS] + ["->exit"]:
                vals = [p[name] for p in all_phases if name in p]
                if vals:
                    print(
                        f"  {name}: min {min(vals):.2f} median {statistics.median(vals):.2f} max {max(vals):.2f}",
                        flush=True,
                    )
        if args.no_failover:
            zk.stop()
            zk.close()
            return

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
