"""ZooKeeper failures operators meet, on real processes (issue 12).

Each test runs its own ZooKeeper and three kafkapy brokers (kafkapy.testing), a topic with
replication factor 3 and min.insync.replicas=2, and a confluent-kafka producer (acks=all,
idempotent) writing numbered records through the fault. The invariant: every acknowledged
record is read back exactly once at the offset it was acknowledged at, and nothing is written
twice. Each test prints its figures (time to recover, records acknowledged during the fault).
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from kazoo.client import KazooClient

from kafkapy.testing import KafkapyCluster, zk_controller_id
from tests.faults.zk_fault_support import (
    NumberedProducer,
    TcpProxy,
    audit,
    create_topic,
    make_controller,
    metadata_controllers,
    metadata_leaders,
    partition_states,
    read_partitions,
    wait_for,
    wait_quietly,
)

TOPIC = "zk-faults"
PARTITIONS = 3
TOPIC_CONFIG = {"min.insync.replicas": "2"}
BASE = {
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
    "default.replication.factor": "3",
}


def _start_producing(cluster: KafkapyCluster, assignment: list[list[int]] | None = None) -> NumberedProducer:
    create_topic(cluster.bootstrap_servers, TOPIC, PARTITIONS, 3, TOPIC_CONFIG, assignment)
    producer = NumberedProducer(cluster.bootstrap_servers, TOPIC, PARTITIONS).start()
    wait_for(lambda: producer.acked_count() >= 200, 30, "the first 200 acknowledgements")
    return producer


def _finish_and_audit(cluster: KafkapyCluster, producer: NumberedProducer, label: str, figures: dict) -> None:
    """Produce 200 more after the fault, stop, read everything back and check the invariant."""
    before = producer.acked_count()

    def produced_200_more() -> bool:
        # A fatal producer error ends the wait: the audit below says what was lost.
        return producer.fatal is not None or producer.acked_count() >= before + 200

    figures["s_to_next_200_acks"] = round(
        wait_for(produced_200_more, 60, "200 acknowledgements after the fault"), 2
    )
    unresolved = producer.stop()
    result = audit(producer, read_partitions(cluster.bootstrap_servers, TOPIC, PARTITIONS))
    figures.update(
        sent=producer.sent, acked=result.acked, failed=len(producer.failed), unresolved=unresolved,
        in_log=result.in_log, lost=len(result.lost), duplicates=len(result.duplicates), fatal=producer.fatal,
    )  # fmt: skip
    print(f"{label}: {figures}")
    result.assert_clean()
    assert producer.fatal is None, f"the producer failed: {producer.fatal}"
    assert not producer.failed, f"records failed: {list(producer.failed.items())[:5]}"
    assert unresolved == 0


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=BASE)
def test_zookeeper_down_shorter_than_the_session_timeout(kafkapy_cluster: KafkapyCluster) -> None:
    """ZooKeeper stopped 5 s (sessions last 18 s): leaders keep serving, brokers reconnect."""
    producer = _start_producing(kafkapy_cluster)
    down_at = time.monotonic()
    kafkapy_cluster.zookeeper.stop()
    time.sleep(5)
    acked_while_down = producer.acked_since(down_at)
    gap_while_down = producer.longest_ack_gap(down_at, time.monotonic())
    kafkapy_cluster.zookeeper.start()
    up_at = time.monotonic()
    kafkapy_cluster.wait_until_ready(timeout=60)
    figures: dict[str, object] = {
        "acked_while_zk_down": acked_while_down,
        "longest_ack_gap_while_down_s": round(gap_while_down, 2),
        "s_to_cluster_ready": round(time.monotonic() - up_at, 2),
    }
    # Brokers and controller are back on ZooKeeper: a topic created now gets leaders everywhere.
    create_topic(kafkapy_cluster.bootstrap_servers, "after-zk", 1, 3, {})
    figures["s_new_topic_led_on_every_broker"] = round(
        wait_for(
            lambda: all(metadata_leaders(b.port, "after-zk").get(0, -1) >= 0 for b in kafkapy_cluster.brokers),
            30, "the new topic's leader in every broker's metadata",
        ), 2
    )  # fmt: skip
    _finish_and_audit(kafkapy_cluster, producer, "zookeeper down 5 s", figures)
    # Leadership did not change while ZooKeeper was away: the leaders kept taking writes.
    assert acked_while_down > 0


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(
    brokers=3, overrides={**BASE, "zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000"}
)
def test_zookeeper_down_longer_than_the_session_timeout_while_a_broker_dies(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    """ZooKeeper stopped 10 s with 6 s sessions, and a follower SIGKILLed as it goes: the leaders'
    ISR shrinks cannot be written while it is away and are retried; once it is back they land,
    the dead broker's session ends and its partitions get new leaders; then it restarts.

    A ZooKeeper restart keeps the sessions (the server restores them from its snapshot and
    transaction log and restarts their timers), so the live brokers reconnect to the same
    session: only the dead broker's expires. Forced expiry of a live broker is tested below.
    """
    cluster = kafkapy_cluster
    producer = _start_producing(cluster)
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        controller = zk_controller_id(zk)
        victim = next(b.broker_id for b in cluster.brokers if b.broker_id != controller)
    finally:
        zk.stop()
        zk.close()
    down_at = time.monotonic()
    cluster.zookeeper.stop()
    cluster.broker(victim).kill()
    time.sleep(10)
    cluster.zookeeper.start()  # same port, same dataDir
    up_at = time.monotonic()
    figures: dict[str, object] = {"acked_while_zk_down": producer.acked_since(down_at, up_at)}
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        figures["s_to_isr_without_victim"] = round(
            wait_for(
                lambda: all(victim not in s["isr"] and s["leader"] != victim
                            for s in partition_states(zk, TOPIC, PARTITIONS)),
                60, f"broker {victim} out of every ISR and leadership",
            ), 2
        )  # fmt: skip
        figures["acked_before_restart"] = producer.acked_since(down_at)
        cluster.broker(victim).start()
        restarted_at = time.monotonic()
        cluster.wait_until_ready(timeout=60)
        figures["s_to_full_isr_after_restart"] = round(
            wait_for(
                lambda: all(sorted(s["isr"]) == [0, 1, 2] for s in partition_states(zk, TOPIC, PARTITIONS)),
                60, "every ISR to be whole again",
            ), 2
        )  # fmt: skip
        figures["s_restart_to_full_isr"] = round(time.monotonic() - restarted_at, 2)
    finally:
        zk.stop()
        zk.close()
    _finish_and_audit(cluster, producer, "zookeeper down 10 s, a broker killed", figures)
    logs = "".join(b.server_log() for b in cluster.brokers if b.broker_id != victim)
    # The leaders did try to shrink while ZooKeeper was away, and the write landed later.
    assert "Shrinking ISR" in logs and "ISR updated to" in logs


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.kafkapy_cluster(
    brokers=3, overrides={**BASE, "zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "5000"}
)
def test_controller_session_expires_while_it_runs(kafkapy_cluster: KafkapyCluster) -> None:
    """SIGSTOP the controller past its 6 s session, then SIGCONT: another broker becomes controller
    and re-elects leaders; the old one resigns, re-registers and rejoins every ISR."""
    cluster = kafkapy_cluster
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        producer = _start_producing(cluster)
        victim = zk_controller_id(zk)
        process = cluster.broker(victim).process
        assert process is not None
        stopped_at = time.monotonic()
        os.kill(process.pid, signal.SIGSTOP)
        try:
            figures = {
                "s_to_new_controller": round(
                    wait_for(lambda: zk_controller_id(zk) not in (-1, victim), 30, "another controller"), 2
                ),
                "s_to_old_registration_gone": round(
                    wait_for(lambda: not zk.exists(f"/brokers/ids/{victim}"), 30, "the expired registration"),
                    2,
                ),
            }
            figures["s_to_leaders_moved"] = round(
                wait_for(
                    lambda: all(s["leader"] not in (-1, victim) for s in partition_states(zk, TOPIC, PARTITIONS)),
                    30, "leaders off the stopped broker",
                ), 2
            )  # fmt: skip
        finally:
            os.kill(process.pid, signal.SIGCONT)
        resumed_at = time.monotonic()
        figures["acked_while_stopped"] = producer.acked_since(stopped_at, resumed_at)
        figures["s_to_reregistered"] = round(
            wait_for(lambda: zk.exists(f"/brokers/ids/{victim}"), 30, "the broker's new registration"), 2
        )
        figures["s_to_full_isr"] = round(
            wait_for(
                lambda: all(sorted(s["isr"]) == [0, 1, 2] for s in partition_states(zk, TOPIC, PARTITIONS)),
                60, "every ISR to be whole again",
            ), 2
        )  # fmt: skip
        controller = zk_controller_id(zk)
        figures["s_to_agreeing_metadata"] = round(
            wait_for(
                lambda: set(metadata_controllers(cluster).values()) == {controller},
                30, f"every broker to name controller {controller}",
            ), 2
        )  # fmt: skip
        assert controller != victim
        assert "Resigned" in cluster.broker(victim).server_log()
        _finish_and_audit(cluster, producer, "controller session expired", figures)
    finally:
        zk.stop()
        zk.close()


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("role", ["leader", "controller"])
@pytest.mark.kafkapy_cluster(
    brokers=3, overrides={**BASE, "zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "5000"}
)
def test_leader_cut_off_zookeeper_past_its_session(kafkapy_cluster: KafkapyCluster, role: str) -> None:
    """A running leader (and, with role=controller, the controller) loses ZooKeeper alone (a proxy
    drops its connection) past its session: another controller and leader are elected while it
    keeps running; when its ZooKeeper comes back it finds its session expired, resigns,
    re-registers, follows and rejoins the ISR."""
    cluster = kafkapy_cluster
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    proxy = TcpProxy(cluster.zookeeper.port)
    try:
        controller = zk_controller_id(zk)
        victim = controller if role == "controller" else min({0, 1, 2} - {controller})
        other, third = sorted({0, 1, 2} - {victim})
        handle = cluster.broker(victim)
        handle.overrides = {**handle.overrides, "zookeeper.connect": proxy.connect}
        handle.restart()
        cluster.wait_until_ready(timeout=60)
        if role == "controller":
            make_controller(zk, victim, rivals=[cluster.broker(other), cluster.broker(third)])
            cluster.wait_until_ready(timeout=60)  # every broker's metadata names it
            assert zk_controller_id(zk) == victim
        # The victim leads partition 0, and `other` is next in line for it.
        assignment = [[victim, other, third], [other, third, victim], [third, victim, other]]
        producer = _start_producing(cluster, assignment)
        cut_at = time.monotonic()
        proxy.cut()
        try:
            figures: dict[str, object] = {
                "s_to_registration_gone": round(
                    wait_for(
                        lambda: not zk.exists(f"/brokers/ids/{victim}"), 30, "the victim's session to expire"
                    ),
                    2,
                )
            }
            figures["s_to_new_leader"] = round(
                wait_for(lambda: partition_states(zk, TOPIC, 1)[0]["leader"] == other, 30, "a new leader"), 2
            )
            time.sleep(1)
            assert handle.is_running(), "the victim must keep running without ZooKeeper"
        finally:
            proxy.restore()
        restored_at = time.monotonic()
        figures["acked_while_cut"] = producer.acked_since(cut_at, restored_at)
        figures["s_to_reregistered"] = round(
            wait_for(lambda: zk.exists(f"/brokers/ids/{victim}"), 60, "the victim's new registration"), 2
        )
        figures["s_to_full_isr"] = round(
            wait_for(
                lambda: all(sorted(s["isr"]) == [0, 1, 2] for s in partition_states(zk, TOPIC, PARTITIONS)),
                60, "every ISR to be whole again",
            ), 2
        )  # fmt: skip
        current = zk_controller_id(zk)
        figures["s_to_agreeing_metadata"] = round(
            wait_for(
                lambda: set(metadata_controllers(cluster).values()) == {current}
                and metadata_leaders(handle.port, TOPIC).get(0) == other,
                30, "the victim's metadata to catch up",
            ), 2
        )  # fmt: skip
        assert "re-registering broker" in handle.server_log()
        assert current != victim
        _finish_and_audit(cluster, producer, f"{role} cut off ZooKeeper", figures)
    finally:
        proxy.close()
        zk.stop()
        zk.close()


# Who takes over the killed leader's partition first. "survivor": the controller elects the
# third broker, which keeps leading. "controller": it elects itself and dies: the third broker,
# the controller's follower for a moment, becomes the leader. Before leader epochs that follower
# had truncated to its high watermark and lost acknowledged records (KIP-101's case); now it
# truncates only where its leader's epoch ends, so both must keep everything.
NEXT_LEADER = ["survivor", "controller"]


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("next_leader", NEXT_LEADER)
@pytest.mark.kafkapy_cluster(brokers=3, overrides={**BASE, "zookeeper.session.timeout.ms": "6000"})
def test_controller_killed_during_a_leader_election(
    kafkapy_cluster: KafkapyCluster, next_leader: str
) -> None:
    """SIGKILL a leader, and the controller the moment the leader's registration disappears (while
    it elects new leaders): the next controller finishes the job, every leader comes from the ISR."""
    cluster = kafkapy_cluster
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        controller = zk_controller_id(zk)
        leader, survivor = sorted({0, 1, 2} - {controller})
        second = survivor if next_leader == "survivor" else controller
        third = controller if next_leader == "survivor" else survivor
        # Partition 0 is the killed leader's; the controller and the survivor lead one each.
        assignment = [[leader, second, third], [controller, survivor, leader], [survivor, leader, controller]]
        producer = _start_producing(cluster, assignment)
        before = partition_states(zk, TOPIC, PARTITIONS)
        assert all(len(s["isr"]) == 3 for s in before), before
        killed_at = time.monotonic()
        cluster.broker(leader).kill()
        wait_for(lambda: not zk.exists(f"/brokers/ids/{leader}"), 30, "the leader's session to expire", 0.002)
        figures: dict[str, object] = {"s_leader_session_expiry": round(time.monotonic() - killed_at, 2)}
        # The controller is now electing: kill it as soon as its first state change lands in
        # ZooKeeper (its LeaderAndIsr requests and the rest of its writes not yet done).
        epochs = [(s["leader_epoch"], s["isr"]) for s in before]
        figures["controller_wrote_before_kill"] = wait_quietly(
            lambda: (
                [(s["leader_epoch"], s["isr"]) for s in partition_states(zk, TOPIC, PARTITIONS)] != epochs
            ),
            2.0,
        )
        cluster.broker(controller).kill()
        figures["s_to_new_controller"] = round(
            wait_for(lambda: zk_controller_id(zk) == survivor, 30, f"broker {survivor} to become controller"),
            2,
        )

        def all_led_by_survivor() -> bool:
            states = partition_states(zk, TOPIC, PARTITIONS)
            return all(s["leader"] == survivor and survivor in s["isr"] for s in states)

        figures["s_to_leaders_elected"] = round(wait_for(all_led_by_survivor, 30, "leaders from the ISR"), 2)
        # The survivor was told, not only ZooKeeper: its Metadata names itself as controller and leader.
        survivor_port = cluster.broker(survivor).port
        figures["s_to_survivor_metadata"] = round(
            wait_for(
                lambda: metadata_controllers(cluster) == {survivor: survivor}
                and set(metadata_leaders(survivor_port, TOPIC).values()) == {survivor},
                30, "the survivor's metadata",
            ), 2
        )  # fmt: skip
        acked_alone = producer.acked_count()
        restarted_at = time.monotonic()
        cluster.broker(leader).start()
        cluster.broker(controller).start()
        cluster.wait_until_ready(timeout=60)
        figures["s_to_restarted_ready"] = round(time.monotonic() - restarted_at, 2)
        figures["s_to_full_isr"] = round(
            wait_for(
                lambda: all(sorted(s["isr"]) == [0, 1, 2] for s in partition_states(zk, TOPIC, PARTITIONS)),
                60, "every ISR to be whole again",
            ), 2
        )  # fmt: skip
        figures["acked_before_restart"] = acked_alone
        _finish_and_audit(
            cluster, producer, f"controller killed during an election ({next_leader} next)", figures
        )
    finally:
        zk.stop()
        zk.close()
