"""The broker as a process: start-up through the real command, registration, logs, shutdown,
recovery, session expiry and the embedded ZooKeeper default."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkapy.testing import BrokerHandle, KafkapyCluster, free_port

BIN = Path(sys.executable).parent


def _zk(cluster: KafkapyCluster) -> KazooClient:
    zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    return zk


def _server_log(logs: Path) -> str:
    """server.log with its hourly rolled-over parts, as log4j's layout keeps them."""
    parts = sorted(logs.glob("server.log.*")) + [logs / "server.log"]
    return "".join(p.read_text(errors="replace") for p in parts if p.exists())


def _wait(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_broker_registers_with_kafkas_json_and_writes_its_logs(kafkapy_cluster: KafkapyCluster) -> None:
    broker = kafkapy_cluster.brokers[0]
    zk = _zk(kafkapy_cluster)
    try:
        data, stat = zk.get("/brokers/ids/0")
        assert stat.ephemeralOwner != 0
        registration = json.loads(data)
        assert registration["version"] == 5
        assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
        assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert registration["host"] == "127.0.0.1" and registration["port"] == broker.port
        assert registration["jmx_port"] == -1 and registration["timestamp"].isdigit()
        cluster_id = json.loads(zk.get("/cluster/id")[0])
        assert cluster_id["version"] == "1" and len(cluster_id["id"]) == 22
        assert json.loads(zk.get("/controller")[0])["brokerid"] == 0
        assert int(zk.get("/controller_epoch")[0]) >= 1
    finally:
        zk.stop()
        zk.close()
    meta = (broker.log_dir / "meta.properties").read_text()
    assert "broker.id=0" in meta and f"cluster.id={cluster_id['id']}" in meta
    for name in ("server.log", "controller.log", "state-change.log"):
        assert (broker.logs / name).exists(), name
    assert "[KafkaServer id=0] started" in broker.server_log()


def test_a_second_broker_with_the_same_id_fails_with_a_clear_error(kafkapy_cluster: KafkapyCluster) -> None:
    # The twin waits one (short) session timeout for the node to go away before giving up.
    twin = BrokerHandle(
        0,
        free_port(),
        kafkapy_cluster.base_dir / "twin",
        kafkapy_cluster.zookeeper_connect,
        {"zookeeper.session.timeout.ms": "6000"},
    )
    twin.start()
    try:
        assert twin.process is not None
        assert twin.process.wait(60) != 0
        assert "/brokers/ids/0, node already exists" in twin.server_log()
    finally:
        twin.kill()
    assert kafkapy_cluster.brokers[0].is_running()


def test_a_bad_config_value_fails_start_up_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("broker.id=0\nzookeeper.connect=127.0.0.1:1\nnum.partitions=abc\n")
    result = subprocess.run(
        [str(BIN / "kafkapy-server-start"), str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LOG_DIR": str(tmp_path / "logs")},
    )
    assert result.returncode == 1
    assert "Invalid value abc for configuration num.partitions" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_clean_shutdown_leaves_the_marker_and_skips_recovery(kafkapy_cluster: KafkapyCluster) -> None:
    broker = kafkapy_cluster.brokers[0]
    assert broker.stop() == 0
    assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    assert "shut down completed" in broker.server_log()
    broker.start()
    kafkapy_cluster.wait_until_ready()
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()  # removed while running


def test_unclean_shutdown_is_recovered_on_restart(kafkapy_cluster: KafkapyCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = kafkapy_cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce("recovered", key=b"%d" % i, value=b"value-%d" % i)
    assert producer.flush(30) == 0
    broker = kafkapy_cluster.brokers[0]
    broker.kill()
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()
    broker.start()
    kafkapy_cluster.wait_until_ready()
    assert "no clean shutdown file was found" in broker.server_log()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "r", "enable.auto.commit": False})
    consumer.assign([TopicPartition("recovered", 0, 0)])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 200 and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            values.append(msg.value())
    consumer.close()
    assert values == [b"value-%d" % i for i in range(200)]


@pytest.mark.slow
@pytest.mark.kafkapy_cluster(overrides={"zookeeper.session.timeout.ms": "6000"})
def test_an_expired_zookeeper_session_re_registers_the_broker(kafkapy_cluster: KafkapyCluster) -> None:
    zk = _zk(kafkapy_cluster)
    try:
        owner = zk.get("/brokers/ids/0")[1].ephemeralOwner
    finally:
        zk.stop()
        zk.close()
    # A broker frozen for longer than its session timeout (a long GC pause, a stopped VM):
    # ZooKeeper expires the session, and the broker finds out when it runs again.
    broker = kafkapy_cluster.brokers[0]
    assert broker.process is not None
    broker.process.send_signal(signal.SIGSTOP)
    try:
        time.sleep(10)
    finally:
        broker.process.send_signal(signal.SIGCONT)
    zk = _zk(kafkapy_cluster)
    try:

        def re_registered() -> bool:
            stat = zk.exists("/brokers/ids/0")
            return stat is not None and stat.ephemeralOwner != owner

        _wait(re_registered, 60, "re-registration under a new session")
        _wait(lambda: zk.exists("/controller") is not None, 30, "controller re-election")
    finally:
        zk.stop()
        zk.close()
    kafkapy_cluster.wait_until_ready()


def test_the_broker_starts_an_embedded_zookeeper_when_none_answers(tmp_path: Path) -> None:
    zk_port, port = free_port(), free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'data'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}\n"
    )
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        [str(BIN / "kafkapy-server-start"), str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LOG_DIR": str(logs)},
    )
    try:
        _wait(
            lambda: "started" in _server_log(logs),
            60,
            "start",
        )
        text = _server_log(logs)
        assert "starting an embedded Apache ZooKeeper" in text
        assert (tmp_path / "zookeeper-data").is_dir()
        zk = KazooClient(hosts=f"127.0.0.1:{zk_port}", timeout=10)
        zk.start(timeout=15)
        assert zk.exists("/brokers/ids/0") is not None
        zk.stop()
        zk.close()
    finally:
        proc.terminate()
        code = proc.wait(60)
    assert code == 0
    assert "Stopping the embedded ZooKeeper" in _server_log(logs)


def test_kafkapy_server_stop_stops_a_daemon_broker(tmp_path: Path, kafkapy_cluster: KafkapyCluster) -> None:
    port = free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        f"broker.id=7\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'data'}\n"
        f"zookeeper.connect={kafkapy_cluster.zookeeper_connect}\nkafkapy.zookeeper.embedded.enable=false\n"
    )
    env = {**os.environ, "LOG_DIR": str(tmp_path / "logs")}
    subprocess.run(
        [str(BIN / "kafkapy-server-start"), "-daemon", str(config)], env=env, timeout=60, check=True
    )
    zk = _zk(kafkapy_cluster)
    try:
        _wait(lambda: zk.exists("/brokers/ids/7") is not None, 60, "daemon registration")
        subprocess.run([str(BIN / "kafkapy-server-stop"), str(config)], env=env, timeout=60, check=True)
        _wait(lambda: zk.exists("/brokers/ids/7") is None, 60, "daemon shutdown")
    finally:
        zk.stop()
        zk.close()
