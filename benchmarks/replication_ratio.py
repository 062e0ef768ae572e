"""Replicated produce throughput: RF 3 acks=all against RF 1, in one run on one machine.

    PYTHONPATH=<tree> python benchmarks/replication_ratio.py [--rounds 3] [--mb 60] [--partitions 6]

One ZooKeeper and three kafkapy brokers. Topic `rf1-<size>` puts every partition on broker 0
alone; topic `rf3-<size>` has three replicas per partition with the leaders spread over the
three brokers (Kafka's default assignment). The same bytes are produced to each with
confluent-kafka (librdkafka), acks=all, alternating RF 1 and RF 3 rounds so that drift of the
shared machine hits both alike. Prints MB/s per round, the medians and the RF3/RF1 ratio per
record size, and the brokers' CPU seconds per GB produced (the three brokers' processes: less
sensitive than MB/s to other load on the machine). Kafka's 2014 benchmark measured about 0.5
for this ratio (three brokers, one per machine); here the three brokers share the machine's
cores, which makes 0.5 harder to reach.

Each round also prints the producer's CPU per GB (this process) and the whole machine's
(/proc/stat, every process) with how many cores were busy. When both rounds keep every core
busy, the RF3/RF1 rate ratio is the ratio of the machine's CPU per GB, whatever the round trips
cost: the summary line prints it, so a run says which bound it met. Run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from benchmarks.brokers import machine_cpu_seconds, python_broker_pid, user_system_seconds  # noqa: E402
from benchmarks.page_cache_cost import recycle_page_cache  # noqa: E402
from benchmarks.produce import producer_config  # noqa: E402
from benchmarks.profiling import py_spy, top_functions  # noqa: E402
from kafkapy.testing import kafkapy_cluster_context  # noqa: E402


def produce(bootstrap: str, topic: str, record_size: int, records: int) -> float:
    """Seconds to send `records` values of `record_size` bytes with acks=all, to the last ack."""
    failed = 0

    def on_failure(err: object, _msg: object) -> None:
        nonlocal failed
        failed += 1

    producer = Producer({**producer_config(bootstrap, "all"), "on_delivery": on_failure})
    producer.list_topics(topic, timeout=30)  # metadata and connections before the clock starts
    value = os.urandom(record_size)
    send, poll = producer.produce, producer.poll
    t0 = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                send(topic, value)
                break
            except BufferError:  # the local queue is full: wait for acks
                poll(0.005)
    remaining = producer.flush(300)
    elapsed = time.perf_counter() - t0
    if failed or remaining:
        raise RuntimeError(f"{topic}: {failed + remaining} of {records} records failed")
    return elapsed


def _create(bootstrap: str, topics: dict[str, list[list[int]]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(t, len(assignment), replica_assignment=assignment) for t, assignment in topics.items()],
        operation_timeout=30,
    )
    for f in futures.values():
        f.result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=30)
        if all(
            t in md.topics
            and len(md.topics[t].partitions) == len(a)
            and all(len(p.isrs) == len(a[0]) and p.leader >= 0 for p in md.topics[t].partitions.values())
            for t, a in topics.items()
        ):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topics {sorted(topics)} not fully in sync after 60 s")


def _warm_up(bootstrap: str, topics: dict[str, list[list[int]]]) -> None:
    """One acks=all record to every partition, acknowledged: the followers of a topic created a
    moment ago fetch (a follower whose first fetch meets a leader that has not taken its
    LeaderAndIsr yet backs off replica.fetch.backoff.ms, 1 s, which the first RF 3 round would
    otherwise pay: a 0.6 s stall of that round's first produce in the request log)."""
    failed = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal failed
        failed += err is not None

    producer = Producer({**producer_config(bootstrap, "all"), "on_delivery": on_delivery})
    for topic, assignment in topics.items():
        for p in range(len(assignment)):
            producer.produce(topic, b"warm-up", partition=p)
    if producer.flush(60) or failed:
        raise RuntimeError(f"warm-up records not acknowledged: {failed} failed")


def _request_log_config() -> Path:
    """config/logging.yaml with kafka.request.logger at DEBUG (Kafka's "Completed request" lines)."""
    text = (REPO / "config" / "logging.yaml").read_text()
    path = Path(tempfile.mkdtemp(prefix="replication-ratio-")) / "logging.yaml"
    path.write_text(text.replace("kafka.request.logger: WARN", "kafka.request.logger: DEBUG"))
    return path


_COMPLETED = re.compile(
    r"apiKey=(\w+),.*clientId=([\w.-]+),.*response:\{size=(\d+)\}.*"
    r"remoteTime:([\d.]+),.*sendTime:([\d.]+),"
)


def _print_request_times(logs: list[Path]) -> None:
    """Brokers 1 and 2 lead only RF 3 partitions: their produces' remote time is the replication
    round trip (append to high watermark); a follower fetch's send time is its answer's trip
    through the socket. Fetches that carried no records (under 1 KB) are left out."""
    for broker, path in enumerate(logs):
        remote: list[float] = []
        send: list[float] = []
        sizes: list[int] = []
        for line in path.read_text().splitlines() if path.exists() else []:
            m = _COMPLETED.search(line)
            if m is None:
                continue
            api, client, size = m.group(1), m.group(2), int(m.group(3))
            if api == "PRODUCE" and broker > 0:
                remote.append(float(m.group(4)))
            elif api == "FETCH" and "-fetcher-" in client and size >= 1024:
                send.append(float(m.group(5)))
                sizes.append(size)
        parts = [f"broker {broker}:"]
        for name, xs in (("produce remoteTime", remote), ("follower fetch sendTime", send)):
            if xs:
                xs.sort()
                parts.append(
                    f"{name} ms median {statistics.median(xs):.2f} p90 {xs[int(0.9 * len(xs))]:.2f} (n={len(xs)})"
                )
        if sizes:
            parts.append(
                f"follower fetches served {len(sizes)}, mean {statistics.mean(sizes) / 1024:.0f} KiB"
            )
        print("  ".join(parts))


def _user_system(pids: list[int]) -> tuple[float, float]:
    """The brokers' utime and stime summed: which side (our code or the kernel's) a cost is on."""
    times = [user_system_seconds(pid) for pid in pids]
    return sum(u for u, _ in times), sum(s for _, s in times)


def _own_cpu_seconds() -> float:
    """This process's CPU so far, every thread: the producer (librdkafka's threads and the Python
    loop that feeds it) runs here, between the round's start and end nothing else does."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _spy(
    pids: list[int], out: Path | None, label: str, gil: bool = False
) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """py-spy on every broker from now until `_stop` (a profiled run's rates are not figures).
    `gil`: sample only the thread holding the GIL, i.e. Python running, not threads in system
    calls or runnable threads waiting for a core (py-spy counts those as active otherwise)."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    spies = []
    for i, pid in enumerate(pids):
        path = out / f"{label}-broker{i}.speedscope.json"
        cmd = [
            py_spy(),
            "record",
            "--nonblocking",
            "-r",
            "200",
            "-f",
            "speedscope",
            "-o",
            str(path),
            "-p",
            str(pid),
            *(["--gil"] if gil else []),
        ]
        spies.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), path))
    time.sleep(1.0)  # py-spy attaches
    return spies


def _perf(pids: list[int], out: Path | None, label: str) -> subprocess.Popen[bytes] | None:
    """`perf record` (cpu-clock, call graphs, kernel included) of the brokers for one round:
    where their system time goes, which py-spy cannot see."""
    if out is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", str(out / f"{label}.perf.data"),
           "-p", ",".join(map(str, pids))]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # perf attaches
    return proc


def _perf_stop(proc: subprocess.Popen[bytes] | None, out: Path | None, label: str) -> None:
    if proc is None or out is None:
        return
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    report = subprocess.run(
        ["perf", "report", "-i", str(out / f"{label}.perf.data"), "--no-children", "--stdio", "-g", "none",
         "--sort", "sym", "--percent-limit", "1.5"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = [line for line in report.stdout.splitlines() if line.strip() and not line.startswith("#")]
    print(f"  perf {label}: " + "; ".join(" ".join(line.split()) for line in lines[:12]), flush=True)


def _stop(spies: list[tuple[subprocess.Popen[bytes], Path]]) -> None:
    for proc, _ in spies:
        proc.send_signal(signal.SIGINT)
    for proc, path in spies:
        proc.wait(30)
        if path.exists():
            top = top_functions(path, 15)
            print(f"  {path.name}: {json.dumps(top, indent=1)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=60, help="MB produced per round and record size")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--sizes", default="1024,100")
    parser.add_argument("--broker-config", action="append", default=[], help="key=value for every broker")
    parser.add_argument(
        "--request-log",
        action="store_true",
        help="brokers write kafka-request.log (DEBUG): print the RF 3 leaders' produce remote "
        "times and the follower fetches' send times",
    )
    parser.add_argument(
        "--profile", type=Path, default=None,
        help="directory: py-spy every broker during the RF 3 rounds (speedscope files, top functions)",
    )  # fmt: skip
    parser.add_argument("--profile-gil", action="store_true", help="--profile samples only the GIL holder")
    parser.add_argument(
        "--perf", type=Path, default=None,
        help="directory: `perf record` the brokers (kernel included) in every round, print top symbols",
    )  # fmt: skip
    parser.add_argument(
        "--recycle-page-cache-gb", type=float, default=0.0,
        help="before every round write and delete this many GB next to the brokers' logs, so the "
        "round appends into recycled page cache (this VM charges ~2 s/GB for fresh memory)",
    )  # fmt: skip
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    overrides = dict(kv.split("=", 1) for kv in args.broker_config)
    n = args.partitions
    topics: dict[str, list[list[int]]] = {}
    for size in sizes:
        topics[f"rf1-{size}"] = [[0] for _ in range(n)]
        topics[f"rf3-{size}"] = [[(p + i) % 3 for i in range(3)] for p in range(n)]
    request_logs: list[Path] = []
    if args.request_log:
        os.environ["KAFKAPY_LOG_CONFIG"] = str(_request_log_config())
    with kafkapy_cluster_context(3, overrides) as cluster:
        bootstrap = cluster.bootstrap_servers
        _create(bootstrap, topics)
        _warm_up(bootstrap, topics)
        if args.request_log:
            request_logs = [b.logs / "kafka-request.log" for b in cluster.brokers]
        pids = [python_broker_pid(b.process.pid) for b in cluster.brokers if b.process is not None]
        rates: dict[str, list[float]] = {t: [] for t in topics}
        cpu_per_gb: dict[str, list[float]] = {t: [] for t in topics}
        machine_per_gb: dict[str, list[float]] = {t: [] for t in topics}
        cores_busy: dict[str, list[float]] = {t: [] for t in topics}
        for r in range(args.rounds):
            for size in sizes:
                records = args.mb * 1_000_000 // size
                for rf in ("rf1", "rf3"):
                    topic = f"{rf}-{size}"
                    recycle_page_cache(cluster.base_dir, args.recycle_page_cache_gb)
                    us0 = _user_system(pids)
                    spies = (
                        _spy(pids, args.profile, f"{topic}-r{r + 1}", args.profile_gil) if rf == "rf3" else []
                    )
                    perf = _perf(pids, args.perf, f"{topic}-r{r + 1}")
                    own0, machine0, t0 = _own_cpu_seconds(), machine_cpu_seconds(), time.perf_counter()
                    wall_s = produce(bootstrap, topic, size, records)
                    own1, machine1, t1 = _own_cpu_seconds(), machine_cpu_seconds(), time.perf_counter()
                    _perf_stop(perf, args.perf, f"{topic}-r{r + 1}")
                    _stop(spies)
                    us1 = _user_system(pids)
                    user, system = us1[0] - us0[0], us1[1] - us0[1]
                    cpu = user + system
                    gb = records * size / 1e9
                    rate = records * size / wall_s / 1_000_000
                    rates[topic].append(rate)
                    cpu_per_gb[topic].append(cpu / gb)
                    busy, steal = machine1[0] - machine0[0], machine1[1] - machine0[1]
                    machine_per_gb[topic].append(busy / gb)
                    cores_busy[topic].append(busy / (t1 - t0))
                    print(
                        f"{time.strftime('%H:%M:%S')} round {r + 1} {topic:>9}: {rate:7.2f} MB/s ({records} records, {wall_s:.2f} s), "
                        f"brokers' CPU {cpu_per_gb[topic][-1]:.1f} s/GB "
                        f"(user {user / gb:.1f}, sys {system / gb:.1f}), producer {(own1 - own0) / gb:.1f} s/GB, "
                        f"machine {busy / gb:.1f} s/GB, {cores_busy[topic][-1]:.2f} of {os.cpu_count()} cores busy"
                        + (f" (steal {steal / (t1 - t0):.2f})" if steal > 0.05 * (t1 - t0) else ""),
                        flush=True,
                    )
        print()
        for size in sizes:
            rf1, rf3 = rates[f"rf1-{size}"], rates[f"rf3-{size}"]
            m1, m3 = statistics.median(rf1), statistics.median(rf3)
            print(
                f"{size:>5} B  RF1 min/med/max {min(rf1):.2f}/{m1:.2f}/{max(rf1):.2f} MB/s  "
                f"RF3 {min(rf3):.2f}/{m3:.2f}/{max(rf3):.2f} MB/s  RF3/RF1 {m3 / m1:.2f} "
                f"(per round: {' '.join(f'{b / a:.2f}' for a, b in zip(rf1, rf3, strict=True))})"
            )
            c1, c3 = (
                statistics.median(cpu_per_gb[f"rf1-{size}"]),
                statistics.median(cpu_per_gb[f"rf3-{size}"]),
            )
            print(f"        brokers' CPU s/GB median RF1 {c1:.1f}  RF3 {c3:.1f}  RF1/RF3 {c1 / c3:.2f}")
            m1c, m3c = (
                statistics.median(machine_per_gb[f"rf1-{size}"]),
                statistics.median(machine_per_gb[f"rf3-{size}"]),
            )
            print(
                f"        whole machine's CPU s/GB median RF1 {m1c:.1f}  RF3 {m3c:.1f}  RF1/RF3 {m1c / m3c:.2f}; "
                f"cores busy median RF1 {statistics.median(cores_busy[f'rf1-{size}']):.2f}  "
                f"RF3 {statistics.median(cores_busy[f'rf3-{size}']):.2f} of {os.cpu_count()}"
            )
        if args.request_log:
            _print_request_times(request_logs)


if __name__ == "__main__":
    main()
