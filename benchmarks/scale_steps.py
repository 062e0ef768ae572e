"""The scale benchmark's steps; each returns a dict of figures (seconds unless named otherwise).

Every wait is bounded; a wait that runs out raises StepTimeout, which the driver records with
how far the cluster had got. Times are split into their parts (SIGTERM -> exit, start ->
registered -> serving -> ISRs full...) so a slow total says which part is slow.
"""

from __future__ import annotations

import signal
import statistics
import threading
import time
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window, throughput
from benchmarks.page_cache_cost import recycle_page_cache
from benchmarks.produce import produce
from benchmarks.scale_cluster import ScaleCluster, StepTimeout
from benchmarks.scale_probe import (
    MetadataView,
    controller_in_zk,
    cpu_seconds,
    open_files,
    registered,
    rss_mb,
    threads,
)
from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.client.admin import NewTopic as KafkapyNewTopic

Figures = dict[str, Any]
REPLICATION = 3
TOPIC_PREFIX = "scale-"


def topic_names(topics: int) -> list[str]:
    return [f"{TOPIC_PREFIX}{i:04d}" for i in range(topics)]


def _timeout(partitions: int, base: float, per_1k: float) -> float:
    return base + per_1k * partitions / 1000


def _r(x: float) -> float:
    return round(x, 3)


# -- create ----------------------------------------------------------------------------------


def create(sc: ScaleCluster, partitions: int, topics: int) -> Figures:
    """One CreateTopics request for `topics` topics of partitions/topics partitions each (RF 3),
    timed to its answer, to every partition led (every broker's Metadata) and to full ISRs."""
    per = partitions // topics
    timeout = _timeout(partitions, 120, 60)
    # librdkafka times an in-flight request out after socket.timeout.ms (60 s by default, 300 s at
    # most) whatever the call's request_timeout says; a 10k-partition CreateTopics can take longer
    # than 60 s, and if it takes longer than 300 s the waits below still time the creation.
    admin = AdminClient({"bootstrap.servers": sc.cluster.bootstrap_servers, "socket.timeout.ms": 300_000})
    new = [NewTopic(t, per, REPLICATION) for t in topic_names(topics)]
    started = time.monotonic()
    futures = admin.create_topics(new, operation_timeout=timeout, request_timeout=timeout)
    answer_error = None
    try:
        for f in futures.values():
            f.result(timeout)
    except KafkaException as e:  # the controller may still be creating them: the waits below tell
        answer_error = str(e)
    acked = time.monotonic() - started
    state = {"s": ""}

    def led() -> bool:
        sc.check_alive()  # a broker that died (e.g. out of file descriptors) fails the step
        ok, state["s"] = sc.all_led(per * topics)
        return ok

    def full() -> bool:
        sc.check_alive()
        ok, state["s"] = sc.all_isr_full(per * topics)
        return ok

    all_led = sc.wait("create: every partition led", started, led, timeout, lambda: state["s"])
    isr_full = sc.wait("create: every ISR full", started, full, timeout, lambda: state["s"])
    return {
        "partitions": per * topics,
        "topics": topics,
        "create_topics_response_s": _r(acked) if answer_error is None else None,
        "create_topics_error": answer_error,
        "all_led_s": _r(all_led),
        "all_isr_full_s": _r(isr_full),
        "gauges_after": sc.cluster_gauges(),
    }


# -- metadata --------------------------------------------------------------------------------


def metadata(sc: ScaleCluster, partitions: int, requests: int) -> Figures:
    """All-topics Metadata v9: round-trip latency (sent -> last byte read) and response size, from
    the controller and from another broker; plus this client's decode time."""
    out: Figures = {}
    controller = sc.controller()
    for role, broker in (("controller", controller), ("broker", sc.other_than(controller))):
        sc.metadata(broker)  # connection made, caches warm
        conn = sc._meta[broker]
        times: list[float] = []
        decode: list[float] = []
        size = 0
        for _ in range(requests):
            frame, offset, elapsed = conn.fetch()
            times.append(elapsed)
            size = len(frame) + 4
        for _ in range(min(requests, 5)):
            t0 = time.perf_counter()
            view = sc.metadata(broker)
            decode.append(time.perf_counter() - t0 - view.seconds)
        out[role] = {
            "broker": broker,
            "requests": requests,
            "latency_ms_min": _r(min(times) * 1000),
            "latency_ms_median": _r(statistics.median(times) * 1000),
            "latency_ms_max": _r(max(times) * 1000),
            "response_bytes": size,
            "client_decode_ms_median": _r(statistics.median(decode) * 1000),
            "partitions_seen": view.partitions,
        }
    return out


# -- idle ------------------------------------------------------------------------------------


def idle(sc: ScaleCluster, partitions: int, seconds: float, settle: float) -> Figures:
    """No clients, no scrapes: each broker's CPU share over `seconds`, RSS, open files, threads."""
    sc.close()  # our Metadata connections closed, so nothing of ours runs on the brokers
    time.sleep(settle)
    pids = {b: sc.pid(b) for b in sc.live_ids()}
    cpu0 = {b: cpu_seconds(p) for b, p in pids.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - t0
    out: Figures = {"seconds": _r(wall)}
    for b, p in pids.items():
        out[f"broker{b}"] = {
            "cpu_pct_of_core": round(100 * (cpu_seconds(p) - cpu0[b]) / wall, 2),
            "rss_mb": round(rss_mb(p), 1),
            "open_files": open_files(p),
            "threads": threads(p),
        }
    per = [out[f"broker{b}"] for b in pids]
    out["max_cpu_pct_of_core"] = max(x["cpu_pct_of_core"] for x in per)
    out["max_rss_mb"] = max(x["rss_mb"] for x in per)
    out["max_open_files"] = max(x["open_files"] for x in per)
    return out


# -- restart (shared by shutdown, failover-by-kill and start-up) -------------------------------


def restart(sc: ScaleCluster, broker: int, partitions: int) -> Figures:
    """Start `broker` again; seconds to registered in ZooKeeper, to its "started" line, to serving
    Metadata (naming a controller), and to every partition's ISR full again."""
    timeout = _timeout(partitions, 120, 60)
    started = sc.start(broker)
    got: dict[str, float] = {}
    state = {"s": ""}

    def check() -> bool:
        # Each part's time is read right after its own probe: a Metadata request to a broker that
        # is still starting can wait in its socket for a while.
        sc.check_alive()
        if "registered_s" not in got and broker in registered(sc.zk):
            got["registered_s"] = time.monotonic() - started
        if "started_log_s" not in got and sc.logged_started(broker):
            got["started_log_s"] = time.monotonic() - started
        if "serving_metadata_s" not in got:
            view = sc.try_metadata(broker)
            if view is not None and view.controller >= 0:
                got["serving_metadata_s"] = time.monotonic() - started
        if len(got) == 3:
            ok, state["s"] = sc.all_isr_full(partitions)
            return ok
        state["s"] = f"reached {sorted(got)}"
        return False

    total = sc.wait(f"restart of broker {broker}", started, check, timeout, lambda: state["s"])
    return {**{k: _r(v) for k, v in got.items()}, "all_isr_full_s": _r(total)}


# -- controlled shutdown ------------------------------------------------------------------------


def shutdown(sc: ScaleCluster, partitions: int) -> Figures:
    """SIGTERM to a broker that is not the controller: seconds to leadership moved away (another
    broker's Metadata names it leader of nothing) and to process exit; then its restart."""
    controller = sc.controller()
    victim = sc.other_than(controller)
    timeout = _timeout(partitions, 60, 30)
    # The controller may still be busy from the step before (at 10k a failover's LeaderAndIsr
    # kept a broker's loop from answering for over 30 s): poll, as the later waits do.
    views: list[MetadataView] = []

    def answered() -> bool:
        view = sc.try_metadata(controller)
        if view is not None:
            views.append(view)
        return view is not None

    sc.wait("shutdown: the controller answering Metadata", time.monotonic(), answered, timeout)
    before = views[-1].led_by.get(victim, 0)
    started, watcher, exited = sc.signal_and_watch_exit(victim, signal.SIGTERM)

    def moved() -> bool:
        view = sc.try_metadata(controller)
        return view is not None and view.led_by.get(victim, 0) == 0

    leaders_moved = sc.wait("controlled shutdown: leaders moved", started, moved, timeout)
    code = sc.finish_stop(victim, watcher, timeout)
    exit_s = exited[0] - started if exited else float("nan")
    out: Figures = {
        "broker": victim,
        "leaders_before": before,
        "leaders_moved_s": _r(leaders_moved),
        "sigterm_to_exit_s": _r(exit_s),
        "exit_code": code,
    }
    out["restart"] = restart(sc, victim, partitions)
    return out


# -- controller failover ----------------------------------------------------------------------


def _controller_ready(
    sc: ScaleCluster, old_czxid: int, partitions: int, got: dict[str, float], now: float
) -> bool:
    """The parts of "a new controller is ready", recorded into `got` as they happen."""
    new_id, czxid = controller_in_zk(sc.zk)
    if new_id < 0 or czxid == old_czxid:
        return False
    got.setdefault("elected_s", now)
    got.setdefault("new_controller", new_id)
    if "controller_ready_s" not in got:
        try:
            g = sc.scrape(new_id)
        except Exception:  # noqa: BLE001 - its endpoint is busy or down: poll again
            return False
        if (
            g.get("kafka_controller_kafkacontroller_activecontrollercount") == 1
            and g.get("kafka_controller_kafkacontroller_globalpartitioncount", 0) >= partitions
            and g.get("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
        ):
            got["controller_ready_s"] = now
        else:
            return False
    for b in sc.live_ids():
        view = sc.try_metadata(b)
        if view is None or view.controller != new_id or not view.all_led or view.partitions < partitions:
            return False
    got["all_led_s"] = now
    return True


def failover(sc: ScaleCluster, partitions: int, kill: bool = True) -> Figures:
    """(1) /controller deleted: seconds to a new /controller znode, to the new controller's gauges
    saying active with every partition known and none offline, and to every broker's Metadata
    naming it with every partition led. (2) with `kill`, SIGKILL to the controller's process:
    the same, plus the part that is ZooKeeper's session timeout (until the znode is gone); then
    the killed broker's restart."""
    timeout = _timeout(partitions, 60, 30)
    out: Figures = {}
    old_id, old_czxid = controller_in_zk(sc.zk)
    got: dict[str, float] = {}
    started = time.monotonic()
    sc.zk.delete("/controller")
    sc.wait(
        "failover (znode deleted)",
        started,
        lambda: _controller_ready(sc, old_czxid, partitions, got, time.monotonic() - started),
        timeout,
        lambda: f"reached {sorted(got)}",
    )
    out["znode_deleted"] = {"old_controller": old_id, **{k: _r(v) for k, v in got.items()}}
    if not kill:
        return out
    old_id, old_czxid = controller_in_zk(sc.zk)
    got = {}
    started = sc.kill(old_id)

    def gone_then_ready() -> bool:
        now = time.monotonic() - started
        if "znode_gone_s" not in got:
            cid, czxid = controller_in_zk(sc.zk)
            if czxid == old_czxid:
                return False
            got["znode_gone_s"] = now
        return _controller_ready(sc, old_czxid, partitions, got, now)

    sc.wait(
        "failover (controller killed)",
        started,
        gone_then_ready,
        timeout + 60,
        lambda: f"reached {sorted(got)}",
    )
    killed = {"old_controller": old_id, **{k: _r(v) for k, v in got.items()}}
    killed["after_session_expiry_s"] = _r(got["all_led_s"] - got["znode_gone_s"])
    out["controller_killed"] = killed
    out["killed_restart"] = restart(sc, old_id, partitions)
    return out


# -- start-up with data -----------------------------------------------------------------------


def fill(sc: ScaleCluster, topics: list[str], per_topic: int, records: int, size: int) -> Figures:
    """`records` records of `size` bytes into every partition (acks=all), so start-up has data."""
    producer = Producer(
        {
            "bootstrap.servers": sc.cluster.bootstrap_servers,
            "acks": "all",
            "linger.ms": 20,
            "queue.buffering.max.messages": 2_000_000,
            "delivery.report.only.error": True,
        }
    )
    value = b"x" * size
    started = time.monotonic()
    for _ in range(records):
        for t in topics:
            for p in range(per_topic):
                while True:
                    try:
                        producer.produce(t, value, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.01)
    left = producer.flush(600)
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return {
        "records": records * per_topic * len(topics),
        "record_bytes": size,
        "seconds": _r(time.monotonic() - started),
    }


def startup(sc: ScaleCluster, partitions: int, topics: int, records_per_partition: int) -> Figures:
    """A broker holding its share of the partitions, with data: stopped cleanly (SIGTERM) and
    restarted, then SIGKILLed, its ZooKeeper session let expire, and restarted (log recovery)."""
    out: Figures = {}
    if records_per_partition:
        out["fill"] = fill(sc, topic_names(topics), partitions // topics, records_per_partition, 100)
    victim = sc.other_than(sc.controller())
    timeout = _timeout(partitions, 60, 30)
    out["broker"] = victim
    started, watcher, exited = sc.signal_and_watch_exit(victim, signal.SIGTERM)
    sc.finish_stop(victim, watcher, timeout)
    out["clean_stop_s"] = _r(exited[0] - started) if exited else None
    out["after_clean"] = restart(sc, victim, partitions)
    started = sc.kill(victim)
    session = sc.wait(
        "unclean: session expiry", started, lambda: victim not in registered(sc.zk), timeout + 60
    )
    out["unclean_session_expiry_s"] = _r(session)
    out["after_unclean"] = restart(sc, victim, partitions)
    return out


# -- RF 3 acks=all against RF 1 ---------------------------------------------------------------


class LagSampler(threading.Thread):
    """Every `interval` s, each broker's kafka_server_replicafetchermanager_maxlag (messages)."""

    def __init__(self, sc: ScaleCluster, interval: float = 0.5):
        super().__init__(daemon=True)
        self.sc = sc
        self.interval = interval
        self.samples: list[float] = []
        self.under_replicated: list[float] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            lags: list[float] = []
            under = 0.0
            for b in self.sc.live_ids():
                try:
                    g = self.sc.scrape(b)
                except Exception:  # noqa: BLE001 - a busy endpoint: skip this sample
                    continue
                lags.append(g.get("kafka_server_replicafetchermanager_maxlag", 0.0))
                under += g.get("kafka_server_replicamanager_underreplicatedpartitions", 0.0)
            if lags:
                self.samples.append(max(lags))
                self.under_replicated.append(under)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


def rf3(
    sc: ScaleCluster, sizes: dict[int, int], partitions: int, rounds: int, recycle: bool = True
) -> Figures:
    """Same records (count and size) to an RF 3 topic (leaders on all three brokers) and to an
    RF 1 topic on broker 0 alone, acks=all both, back to back, the order flipped every round.

    `recycle`: before every run, write and delete as many bytes as an RF 3 run appends (three
    copies, plus a tenth) next to the brokers' logs. This VM returns freed memory to its host
    and charges ~2 s of system time per GB of page cache made from fresh memory (see
    page_cache_cost.py), which lands on whichever run comes after the first ~1.6 GB and three
    times as hard on RF 3. Both runs then append into recycled pages, as they would on a machine
    whose memory is its own; the figures say which way they were taken."""
    admin = AdminClient({"bootstrap.servers": sc.cluster.bootstrap_servers})
    t3, t1 = "scale-bench-rf3", "scale-bench-rf1"
    for f in admin.create_topics([NewTopic(t3, partitions, REPLICATION)], operation_timeout=60).values():
        f.result(60)
    # librdkafka 2.16's NewTopic refuses any replica assignment ("default partition count and a
    # replica assignment are mutually exclusive"), so the RF 1 topic pinned to broker 0 is made
    # with kafkapy's own admin client.
    own = KafkapyAdmin(sc.cluster.bootstrap_servers)
    try:
        own.create_topic(KafkapyNewTopic(t1, replica_assignment={p: [0] for p in range(partitions)}))
    finally:
        own.close()
    for t in (t3, t1):
        Producer({"bootstrap.servers": sc.cluster.bootstrap_servers}).list_topics(t, timeout=30)
    time.sleep(2)  # leaders elected and followers fetching before the clock starts
    broker0 = RunningBroker("kafkapy", sc.handle(0).bootstrap, sc.pid(0), sc.handle(0).log_dir)
    out: Figures = {"partitions": partitions, "page_cache_recycled": recycle}
    for size, records in sizes.items():
        runs: dict[str, list[Figures]] = {"rf1": [], "rf3": []}
        lag: list[float] = []
        under: list[float] = []
        for r in range(rounds):
            order = [("rf1", t1), ("rf3", t3)] if r % 2 == 0 else [("rf3", t3), ("rf1", t1)]
            for key, topic in order:
                if recycle:
                    recycle_page_cache(sc.cluster.base_dir, 3.3 * records * size / 1e9)
                cpus0 = {b: cpu_seconds(sc.pid(b)) for b in sc.live_ids()}
                # Scraped during both runs, so both pay the scrapes' cost; only RF 3 has followers.
                sampler = LagSampler(sc)
                sampler.start()
                window = Window(broker0)
                failed = produce(sc.handle(0).bootstrap, topic, size, records, "all", window)
                sampler.stop()
                if key == "rf3":
                    lag += sampler.samples
                    under += sampler.under_replicated
                if failed:
                    raise RuntimeError(f"{key} {size} B: {failed} records failed")
                fig: Figures = dict(throughput(records, size, window))
                fig["brokers_cpu_s"] = {b: _r(cpu_seconds(sc.pid(b)) - c) for b, c in cpus0.items()}
                runs[key].append(fig)
        rate = {k: statistics.median(x["mb_per_s"] for x in v) for k, v in runs.items()}
        pairs = [a["mb_per_s"] / b["mb_per_s"] for a, b in zip(runs["rf3"], runs["rf1"], strict=True)]
        out[f"{size}B"] = {
            "records": records,
            "rf1_mb_per_s_median": _r(rate["rf1"]),
            "rf3_mb_per_s_median": _r(rate["rf3"]),
            "rf3_over_rf1_median": _r(statistics.median(pairs)),
            "rf3_over_rf1_min": _r(min(pairs)),
            "rf3_over_rf1_max": _r(max(pairs)),
            "follower_maxlag_messages_max": max(lag) if lag else None,
            "follower_maxlag_messages_median": statistics.median(lag) if lag else None,
            "under_replicated_max": max(under) if under else None,
            "runs": runs,
        }
    return out


__all__ = ["StepTimeout", "create", "failover", "idle", "metadata", "rf3", "shutdown", "startup"]
