"""Issue 12: an acknowledged write (acks=all, min.insync.replicas=2) survives any single failure,
under repeated, overlapping failures of real broker processes.

Three kafkapy brokers (kafkapy.testing) and a real ZooKeeper; topic `faults` with 3 partitions,
RF 3, min.insync.replicas=2, unclean leader election off; __consumer_offsets is RF 3 too. An
idempotent acks=all confluent-kafka producer writes value = sequence number (seq % 3 picks the
partition) for the whole test and keeps every delivery report; a consumer group reads along,
committing its position every 0.5 s and reading the committed offsets back.

Rounds, drawn by random.Random(KAFKAPY_FAULT_SEED) (KAFKAPY_FAULT_ROUNDS of them, 5 by default;
the first five are the five kinds in a seeded order, so a CI run tries each once):
  kill-leader      SIGKILL a partition leader (from its state znode), restart it at once or
                   after the controller elected new leaders
  kill-controller  SIGKILL the controller (/controller), restart it the same way
  pause-leader     SIGSTOP a leader past the ZooKeeper session (it becomes a zombie), wait for
                   the new leaders, then SIGCONT it
  kill-two         SIGKILL two of the three brokers; while they are down no record produced
                   after they died may be acknowledged, and a probe (acks=all, no retries) gets
                   NOT_ENOUGH_REPLICAS or a timeout; restart both
  rolling-restart  SIGTERM each broker in turn, restart it, wait until it is back in every ISR
After each round the cluster must heal (bounded): every partition led, with an ISR of all 3,
each broker that went down registered by a new ZooKeeper session for 2 s (a broker restarted at
once is otherwise still "in sync" by its old session's znodes until the controller reacts).

Invariants, checked at the end (the figures are printed whatever the outcome):
  1. every acknowledged record is read back, by a fresh consumer from the beginning, at exactly
     its acknowledged partition and offset, and no sequence number appears twice;
  2. after a clean stop, the three replicas of every partition hold byte-identical batches below
     the partition's smallest log end offset (segment files compared batch by batch);
  3. the consumer group's committed offsets never go backwards (nor below a commit the
     coordinator acknowledged), it skips no offset, and it saw every acknowledged record;
  4. acknowledged produce resumes within KAFKAPY_FAULT_RESUME_S (2 s) on every partition once new
     leaders are elected or the ISR is full again (plus the producer's 5 s request timeout and
     1 s to learn the new leader when the old leader is frozen: its in-flight requests must time
     out before the idempotent producer may resend them elsewhere; plus 1 s when the old leader was
     killed: librdkafka finds the new leader by a once-a-second scan and its idempotent producer
     drains the partition until the next one); while two brokers are down nothing produced after
     they died is acknowledged; the producer never gets a fatal error and writes no duplicate.
Also reported as failures: a broker exiting on its own, a round that does not heal, and broker
responses librdkafka cannot parse. librdkafka acknowledges some retried records without an offset
(implicitly, through a later batch): those must be found, once, in their partition.

Run: KAFKAPY_FAULT_SEED=7 KAFKAPY_FAULT_ROUNDS=20 pytest -s tests/faults/test_replication_faults.py
The cluster's base dir (brokers' server.log / state-change.log, data dirs) is printed and kept
when the test fails (KAFKAPY_FAULT_DIR chooses it; KAFKAPY_FAULT_KEEP=1 keeps it always).
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from fault_helpers import (
    CLIENT_LOG,
    PROTOCOL_ERRORS,
    REQUEST_TIMEOUT_S,
    GroupReader,
    RoundLog,
    SequenceProducer,
    ZkWatcher,
    compare_replicas,
    controller_id,
    fault_base_dir,
    group_findings,
    longest_gap,
    lost_and_duplicated,
    partition_state,
    port_taken_in,
    read_partitions,
    registered_brokers,
    started_cluster,
    topic_partitions,
    wait_until,
    znode_stat,
)
from kazoo.client import KazooClient

from kafkapy.testing import BrokerHandle, KafkapyCluster

SEED = int(os.environ.get("KAFKAPY_FAULT_SEED", "12"))
ROUNDS = int(os.environ.get("KAFKAPY_FAULT_ROUNDS", "5"))
RESUME_BOUND_S = float(os.environ.get("KAFKAPY_FAULT_RESUME_S", "2.0"))

TOPIC = "faults"
PARTITIONS = 3
BROKERS = [0, 1, 2]
MIN_ISR = 2
SESSION_S = 6.0
HEAL_TIMEOUT_S = 90.0
# The producer's requests to a frozen leader time out after REQUEST_TIMEOUT_S, counted from the
# last one it sent there, up to ~1 s after the election (until its metadata shows the new leader).
FROZEN_LEADER_EXTRA_S = REQUEST_TIMEOUT_S + 1.0
# A SIGKILLed leader's partitions: librdkafka re-queries the leader of a partition whose broker is
# down once a second (its topic scan timer), and its idempotent producer then parks the partition
# on its internal broker to drain, until the next scan a second later (debug log: "beginning
# partition drain: wait for outstanding requests to finish before producing to new leader", then
# "broker is internal: re-query"). So the client sends to the new leader 1-2 s after the election
# however fast every broker knows it; one scan is allowed on top of the bound.
KILLED_LEADER_EXTRA_S = 1.0
REGISTRATION_SETTLE_S = 2.0  # for the controller to act on a re-registration before a heal counts
ELECTION_TIMEOUT_S = 3 * SESSION_S + 20
REFUSAL_GRACE_S = 0.5  # acks already on the wire when the second broker dies
PRODUCE_INTERVAL_S = 0.004
OVERRIDES = {
    "zookeeper.session.timeout.ms": str(int(SESSION_S * 1000)),
    "min.insync.replicas": str(MIN_ISR),
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "auto.create.topics.enable": "false",
    "replica.lag.time.max.ms": "5000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
}
KINDS = ["kill-leader", "kill-controller", "pause-leader", "kill-two", "rolling-restart"]
REFUSALS = {
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "_MSG_TIMED_OUT",
    "_TIMED_OUT",
    "REQUEST_TIMED_OUT",
}


class RoundAborted(Exception):
    """The cluster did not heal: later rounds would test nothing; the final checks still run."""


@dataclass
class FaultRun:
    cluster: KafkapyCluster
    zk: KazooClient
    rng: random.Random
    rounds: RoundLog
    producer: SequenceProducer
    group: GroupReader | None = None
    violations: list[str] = field(default_factory=list)
    resume_delays: list[tuple[int, str, int, float | None]] = field(default_factory=list)
    probes: list[tuple[int, int, str]] = field(default_factory=list)  # round, partition, outcome
    window_acks: int = 0  # acknowledged with one broker up, of records replicated before the kill
    port_retries: int = 0
    down_czxid: dict[int, int] = field(default_factory=dict)  # registrations a heal must see replaced
    reregistered_at: dict[int, float] = field(default_factory=dict)  # when the new registration showed

    def note(self, text: str) -> None:
        self.rounds.note(text)

    def violation(self, text: str) -> None:
        line = f"{self.rounds.describe(self.rounds.current)}: {text}"
        self.violations.append(line)
        self.note(f"VIOLATION {text}")

    def broker(self, broker_id: int) -> BrokerHandle:
        return self.cluster.broker(broker_id)

    def states(self, topic: str = TOPIC) -> dict[int, dict]:
        return {p: partition_state(self.zk, topic, p) or {} for p in topic_partitions(self.zk, topic)}


# -- waiting for the cluster -----------------------------------------------------------------------


def check_processes(run: FaultRun) -> None:
    for name, thread in (("producer", run.producer), ("group reader", run.group)):
        if thread is not None and thread.crash is not None:
            run.violation(f"the {name} thread failed: {thread.crash!r}")
            thread.crash = None
            raise RoundAborted(f"the {name} thread failed")
    for b in run.cluster.brokers:
        if b.process is not None and b.process.poll() is not None:
            if port_taken_in(b.logs / "kafkaServer.out") and run.port_retries < 3:
                run.port_retries += 1
                run.note(f"broker {b.broker_id} found its port {b.port} taken: starting it again")
                (b.logs / "kafkaServer.out").rename(b.logs / f"kafkaServer.out.port-taken-{run.port_retries}")
                time.sleep(1)
                b.start()
                continue
            run.violation(
                f"broker {b.broker_id} exited on its own with {b.process.returncode}; "
                f"end of its server.log:\n{b.server_log()[-3000:]}"
            )
            b.process = None
            raise RoundAborted(f"broker {b.broker_id} died")


def wait_healed(run: FaultRun, what: str) -> float:
    """Every broker registered and every partition (ours and __consumer_offsets) led, ISR full."""

    def healed() -> bool:
        check_processes(run)
        if registered_brokers(run.zk) != BROKERS:
            return False
        # A broker killed and restarted at once is still registered by its old session, and the
        # partition states still show it leading, in sync, until that session expires: not healed
        # before it registered anew, and the controller had REGISTRATION_SETTLE_S to react to that.
        now = time.monotonic()
        for b, czxid in run.down_czxid.items():
            stat = znode_stat(run.zk, f"/brokers/ids/{b}")
            if stat is None or stat[0] == czxid:
                return False
            if now - run.reregistered_at.setdefault(b, now) < REGISTRATION_SETTLE_S:
                return False
        for topic in (TOPIC, "__consumer_offsets"):
            for s in run.states(topic).values():
                if s.get("leader", -1) < 0 or sorted(s.get("isr", [])) != BROKERS:
                    return False
        return True

    started = time.monotonic()
    try:
        wait_until(healed, what, HEAL_TIMEOUT_S)
    except TimeoutError:
        run.violation(
            f"not healed {HEAL_TIMEOUT_S:.0f}s after {what}: brokers {registered_brokers(run.zk)}, "
            f"{run.states()} / __consumer_offsets {run.states('__consumer_offsets')}"
        )
        raise RoundAborted(what) from None
    now = time.monotonic()
    run.down_czxid.clear()
    run.reregistered_at.clear()
    run.note(f"healed after {what} in {now - started:.1f}s: {run.states()}")
    return now


def going_down(run: FaultRun, *broker_ids: int) -> None:
    """Note, before a broker is killed, frozen or stopped, the registration a heal must see
    replaced by a new session's."""
    for b in broker_ids:
        stat = znode_stat(run.zk, f"/brokers/ids/{b}")
        if stat is not None:
            run.down_czxid.setdefault(b, stat[0])


def wait_for_leaders_without(run: FaultRun, gone: set[int], what: str) -> float | None:
    """Until no partition is led by, or waits in its ISR for, a broker in `gone`, and every ISR
    still has min.insync.replicas members: acks=all can succeed again. The time, or None."""

    def elected() -> bool:
        check_processes(run)
        states = run.states()
        return len(states) == PARTITIONS and all(
            s.get("leader", -1) >= 0
            and s["leader"] not in gone
            and not gone & set(s["isr"])
            and len(s["isr"]) >= MIN_ISR
            for s in states.values()
        )

    try:
        wait_until(elected, what, ELECTION_TIMEOUT_S)
    except TimeoutError:
        run.violation(
            f"no leaders without brokers {sorted(gone)} {ELECTION_TIMEOUT_S:.0f}s after {what}: {run.states()}"
        )
        return None
    now = time.monotonic()
    run.note(f"leaders without {sorted(gone)} after {what}: {run.states()}")
    return now


def check_resume(run: FaultRun, since: float, what: str, bound: float = RESUME_BOUND_S) -> None:
    """Invariant 4: an acknowledgement on every partition within `bound` s of `since`."""
    ack = run.producer.first_ack_after
    try:
        wait_until(lambda: all(ack(p, since) for p in range(PARTITIONS)), "acknowledgements", 30)
    except TimeoutError:
        pass
    for p in range(PARTITIONS):
        a = ack(p, since)
        delay = None if a is None else a.t - since
        run.resume_delays.append((run.rounds.current, what, p, delay))
        if delay is None or delay > bound:
            late = "none within 30s" if delay is None else f"the first after {delay:.2f}s"
            run.violation(f"p{p}: acknowledged produce did not resume within {bound}s of {what} ({late})")


def leader_of(run: FaultRun, partition: int) -> int:
    return int(run.states()[partition]["leader"])


# -- the rounds ------------------------------------------------------------------------------------


def kill_and_restart(run: FaultRun, victim: int, role: str) -> None:
    at_once = run.rng.random() < 0.5
    run.note(f"SIGKILL {role} broker {victim}, restart {'at once' if at_once else 'after the election'}")
    going_down(run, victim)
    run.broker(victim).kill()
    if not at_once:
        elected = wait_for_leaders_without(run, {victim}, f"SIGKILL of broker {victim}")
        if elected is not None:
            check_resume(
                run,
                elected,
                f"the election after broker {victim} died",
                RESUME_BOUND_S + KILLED_LEADER_EXTRA_S,
            )
    run.broker(victim).start()


def kill_leader(run: FaultRun) -> None:
    p = run.rng.randrange(PARTITIONS)
    kill_and_restart(run, leader_of(run, p), f"p{p}'s leader")


def kill_controller(run: FaultRun) -> None:
    victim = controller_id(run.zk)
    assert victim is not None, "no controller"
    kill_and_restart(run, victim, "controller")


def pause_leader(run: FaultRun) -> None:
    p = run.rng.randrange(PARTITIONS)
    victim = leader_of(run, p)
    broker = run.broker(victim)
    run.note(f"SIGSTOP p{p}'s leader broker {victim} (session {SESSION_S:.0f}s)")
    going_down(run, victim)
    broker.pause()
    try:
        elected = wait_for_leaders_without(run, {victim}, f"SIGSTOP of broker {victim}")
        if elected is not None:
            # The producer's requests in flight to the frozen leader must time out first.
            check_resume(
                run,
                elected,
                f"the election while broker {victim} is paused",
                RESUME_BOUND_S + FROZEN_LEADER_EXTRA_S,
            )
        time.sleep(run.rng.uniform(0, 2))
    finally:
        broker.resume()
        run.note(f"SIGCONT broker {victim}: a zombie leader until it learns it was replaced")


def kill_two(run: FaultRun) -> None:
    victims = sorted(run.rng.sample(BROKERS, 2))
    (survivor,) = set(BROKERS) - set(victims)
    run.note(f"SIGKILL brokers {victims}, broker {survivor} alone")
    going_down(run, *victims)
    for v in victims:
        run.broker(v).kill()
    window_start = time.monotonic() + REFUSAL_GRACE_S
    first_unreplicable = run.producer.produced  # handed to the client after both died

    def controller_reacted() -> bool:
        states = run.states()
        return registered_brokers(run.zk) == [survivor] and all(
            s.get("leader") == -1 or (s.get("leader") == survivor and s.get("isr") == [survivor])
            for s in states.values()
        )

    try:
        wait_until(controller_reacted, "the controller to drop the dead brokers", ELECTION_TIMEOUT_S)
        run.note(f"the controller dropped {victims}: {run.states()}")
    except TimeoutError:
        run.note(f"the controller has not dropped {victims} yet: {run.states()}")
    probe_refused(run)
    time.sleep(run.rng.uniform(0, 2))
    window_end = time.monotonic()
    # A record the dead followers had fetched before dying may still be acknowledged (Kafka keeps
    # a caught-up follower in the ISR until the controller drops it); one produced later may not.
    acked = [a for a in list(run.producer.acks) if window_start <= a.t < window_end]
    wrong = [a for a in acked if a.seq >= first_unreplicable]
    if wrong:
        run.violation(
            f"{len(wrong)} records produced after brokers {victims} died were acknowledged while only "
            f"broker {survivor} was up, e.g. "
            + ", ".join(
                f"seq {a.seq} at p{a.partition} offset {a.offset} t={run.rounds.rel(a.t):.2f}s"
                for a in wrong[:5]
            )
        )
    run.window_acks += len(acked) - len(wrong)
    run.note(
        f"{window_end - window_start:.1f}s with one broker: {len(acked)} acknowledgements, all of records "
        f"produced before the kill (seq < {first_unreplicable})"
        if not wrong
        else "restarting"
    )
    for v in victims:
        run.broker(v).start()


def probe_refused(run: FaultRun) -> None:
    """One acks=all record per partition with no retries: it must be refused, never acknowledged."""
    outcomes: dict[int, str] = {}
    probe = Producer({
        "bootstrap.servers": run.cluster.bootstrap_servers,
        "acks": "all",
        "enable.idempotence": False,
        "retries": 0,
        "message.timeout.ms": 5000,
        "request.timeout.ms": 4000,
        "logger": CLIENT_LOG,
    })  # fmt: skip
    for p in range(PARTITIONS):
        value = str(-1 - len(run.probes) - p).encode()  # negative: never one of the producer's seqs

        def report(err, msg, p=p) -> None:  # noqa: ANN001
            outcomes[p] = "ACKNOWLEDGED" if err is None else err.name()

        probe.produce(TOPIC, value, partition=p, on_delivery=report)
    probe.flush(15)
    for p in range(PARTITIONS):
        outcome = outcomes.get(p, "no delivery report")
        run.probes.append((run.rounds.current, p, outcome))
        if outcome not in REFUSALS:
            run.violation(
                f"probe on p{p} with two brokers down: {outcome} (expected one of {sorted(REFUSALS)})"
            )
    run.note(f"probe outcomes: {outcomes}")


def rolling_restart(run: FaultRun) -> None:
    for b in run.rng.sample(BROKERS, len(BROKERS)):
        run.note(f"SIGTERM broker {b} (rolling restart)")
        started = time.monotonic()
        going_down(run, b)
        code = run.broker(b).stop()
        run.note(f"broker {b} stopped with {code} after {time.monotonic() - started:.1f}s")
        if code != 0:
            run.violation(f"broker {b} did not stop cleanly on SIGTERM: exit code {code}")
        elected = wait_for_leaders_without(run, {b}, f"the clean stop of broker {b}")
        if elected is not None:
            check_resume(run, elected, f"the clean stop of broker {b}")
        run.broker(b).start()
        check_resume(run, wait_healed(run, f"the restart of broker {b}"), f"broker {b} rejoining")


ACTIONS: dict[str, Callable[[FaultRun], None]] = {
    "kill-leader": kill_leader,
    "kill-controller": kill_controller,
    "pause-leader": pause_leader,
    "kill-two": kill_two,
    "rolling-restart": rolling_restart,
}


def plan_rounds(rng: random.Random, rounds: int) -> list[str]:
    return (rng.sample(KINDS, len(KINDS)) + [rng.choice(KINDS) for _ in range(max(0, rounds - len(KINDS)))])[
        :rounds
    ]


# -- the checks at the end -------------------------------------------------------------------------


def report(run: FaultRun, group: GroupReader, figures: dict[str, object], base_dir: Path) -> str:
    delays = [d for *_, d in run.resume_delays if d is not None]
    failures = Counter(f.name for f in run.producer.failures)
    lines = [
        f"seed {SEED}, {len(run.rounds.rounds)}/{ROUNDS} rounds: "
        + ", ".join(
            f"{r.index}:{r.kind} {((r.ended or r.started) - r.started):.0f}s" for r in run.rounds.rounds
        ),
        f"records produced {run.producer.produced}, acknowledged {len(run.producer.acks)}, "
        f"failed {len(run.producer.failures)} {dict(failures)}, unfinished {run.producer.unfinished}",
        *(f"{k}: {v}" for k, v in figures.items()),
        f"resume after election/heal: {len(delays)} measured, max {max(delays, default=0):.2f}s, "
        f"bound {RESUME_BOUND_S}s ({RESUME_BOUND_S + KILLED_LEADER_EXTRA_S}s after a killed leader, "
        f"{RESUME_BOUND_S + FROZEN_LEADER_EXTRA_S}s after a frozen one); slowest: "
        + ", ".join(
            f"{d:.2f}s p{p} after {what} (round {rnd})"
            for rnd, what, p, d in sorted(
                (x for x in run.resume_delays if x[3] is not None), key=lambda x: -(x[3] or 0.0)
            )[:4]
        ),
        f"probes with two brokers down: {run.probes}; acknowledged then, of records produced "
        f"before the kill: {run.window_acks}",
        f"group: {len(group.seen)} offsets seen, {group.commits} commits acknowledged, {group.read_backs} "
        f"read-backs, {len(group.rewinds)} rewinds, {len(group.errors)} client errors",
        f"producer fatal errors: {run.producer.fatal_errors} (new producers after them: {run.producer.restarts}); "
        f"produce() refused: {dict(run.producer.refusals)}; responses librdkafka could not parse: "
        f"{PROTOCOL_ERRORS.count}",
        f"base dir: {base_dir}",
    ]
    return "\n".join(lines)


# -- the test --------------------------------------------------------------------------------------


def create_topic(cluster: KafkapyCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    config = {"min.insync.replicas": str(MIN_ISR), "unclean.leader.election.enable": "false"}
    futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config=config)])
    futures[TOPIC].result(30)


@pytest.mark.slow
@pytest.mark.timeout(180 + 60 * ROUNDS)
def test_acknowledged_writes_survive_repeated_broker_failures() -> None:
    base_dir = fault_base_dir(SEED)
    print(f"\nreplication faults: seed {SEED}, {ROUNDS} rounds, base dir {base_dir}", flush=True)
    rng = random.Random(SEED)
    rounds = RoundLog()
    with started_cluster(base_dir, len(BROKERS), OVERRIDES) as cluster:
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
        zk.start(timeout=15)
        producer = SequenceProducer(cluster.bootstrap_servers, TOPIC, PARTITIONS, rounds, PRODUCE_INTERVAL_S)
        group = GroupReader(cluster.bootstrap_servers, TOPIC, PARTITIONS, rounds, commit_interval=0.5)
        watcher = ZkWatcher(cluster.zookeeper_connect, TOPIC, PARTITIONS, rounds)
        run = FaultRun(cluster, zk, rng, rounds, producer, group)
        try:
            create_topic(cluster)
            for thread in (watcher, producer, group):
                thread.start()
            wait_until(
                lambda: (
                    all(producer.first_ack_after(p, 0) for p in range(PARTITIONS))
                    and len({p for p, _ in group.seen}) == PARTITIONS
                ),
                "the producer and the group to get going",
                60,
            )
            wait_healed(run, "start-up")
            for index, kind in enumerate(plan_rounds(rng, ROUNDS), 1):
                current = rounds.begin(index, kind)
                run.note(f"--- round {index}: {kind}")
                try:
                    ACTIONS[kind](run)
                    check_resume(
                        run, wait_healed(run, f"round {index} ({kind})"), f"the heal after round {index}"
                    )
                except RoundAborted as e:
                    run.note(f"rounds stop here: {e}")
                    break
                finally:
                    current.ended = time.monotonic()
            try:
                figures = finish(run, group, watcher, base_dir)
            except Exception as e:  # noqa: BLE001 - reported with the other findings
                figures = {}
                run.violation(f"the final checks failed: {e!r}")
        finally:
            for b in cluster.brokers:
                b.resume()
            for thread in (producer, group, watcher):
                if thread.is_alive():
                    thread.stop()
            zk.stop()
            zk.close()
    print(report(run, group, figures, base_dir), flush=True)
    for v in run.violations:
        print("VIOLATION", v, flush=True)
    if run.violations:
        pytest.fail(
            f"{len(run.violations)} violations (seed {SEED}, base dir {base_dir} kept):\n"
            + "\n".join(run.violations),
            pytrace=False,
        )
    if not os.environ.get("KAFKAPY_FAULT_KEEP"):
        shutil.rmtree(base_dir, ignore_errors=True)


def finish(run: FaultRun, group: GroupReader, watcher: ZkWatcher, base_dir: Path) -> dict[str, object]:
    """Stop producing, read everything back, let the group catch up, stop the brokers cleanly and
    compare their replicas; returns the figures to print."""
    run.producer.stop()
    if run.producer.crash is not None:
        run.violation(f"the producer thread failed: {run.producer.crash!r}")
    run.violations += [f"FATAL producer error: {e}" for e in run.producer.fatal_errors]
    if PROTOCOL_ERRORS.count:
        run.violations.append(
            f"PROTOCOL: librdkafka could not parse {PROTOCOL_ERRORS.count} broker responses, e.g. "
            + " | ".join(PROTOCOL_ERRORS.first)
        )
    records = read_partitions(run.cluster.bootstrap_servers, TOPIC, PARTITIONS)
    ends: dict[int, int] = defaultdict(int)
    for p, off in records:
        ends[p] = max(ends[p], off + 1)
    try:
        wait_until(lambda: group.caught_up(ends), "the group to read up to the end", 60)
    except TimeoutError:
        run.violation(f"the group did not catch up with {dict(ends)}: at {group.next_offset}")
    group.stop()
    if group.crash is not None:
        run.violation(f"the group reader thread failed: {group.crash!r}")
    watcher.stop()
    findings, counts = lost_and_duplicated(run.producer.acks, records, run.rounds, watcher)
    run.violations += findings
    findings, missed = group_findings(run.producer.acks, records, group, run.rounds)
    run.violations += findings

    for b in run.cluster.brokers:
        started = time.monotonic()
        code = b.stop()
        run.note(f"broker {b.broker_id} stopped with {code} after {time.monotonic() - started:.1f}s")
    comparison = compare_replicas(base_dir, BROKERS, TOPIC, PARTITIONS)
    run.violations += [f"REPLICAS: {f}" for f in comparison.findings]
    gap, gap_where = longest_gap(run.producer.acks, run.rounds)
    return {
        **counts,
        "records in the log": len(records),
        "divergent batches": f"{comparison.divergent_batches} of {comparison.compared_batches} compared",
        "log end offsets per partition/broker": comparison.log_ends,
        "group missed": missed,
        "longest unavailability (gap between acks)": f"{gap:.2f}s {gap_where}",
    }
