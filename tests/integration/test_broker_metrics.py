"""The Prometheus endpoint of a real 3-broker cluster, scraped while confluent-kafka produces
and consumes.

Invariants: the brokers' MessagesIn/BytesIn for a topic move by exactly the records sent and the
bytes their leaders' logs grew by; BytesOut covers what the consumer read; every API the clients
used has its RequestMetrics; ActiveControllerCount sums to 1 over the live brokers. Killing a
broker (SIGKILL) makes the survivors report the partitions it replicated as under-replicated,
and the controller count the partition whose only replica it held as offline.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from kafkapy.testing import BrokerHandle, KafkapyCluster, kafkapy_cluster_context

WAIT_S = 60.0
OVERRIDES = {
    "kafkapy.metrics.port": "0",
    "kafkapy.metrics.host": "127.0.0.1",
    "auto.leader.rebalance.enable": "false",
}
RECORDS = 300
VALUE = b"v" * 100

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metrics_port(broker: BrokerHandle) -> int:
    found = re.findall(
        r"Metrics endpoint listening on http://127\.0\.0\.1:(\d+)/metrics", broker.server_log()
    )
    assert found, "the broker did not open its metrics endpoint"
    return int(found[-1])


def scrape(broker: BrokerHandle) -> Samples:
    body = (
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port(broker)}/metrics", timeout=10).read().decode()
    )
    samples: Samples = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(brokers: list[BrokerHandle], name: str, **labels: str) -> float:
    return sum(value(scrape(b), name, **labels) for b in brokers)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)
    return result


def create(cluster: KafkapyCluster, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)])[
        topic
    ].result(WAIT_S)


def log_bytes(cluster: KafkapyCluster, topic: str, partitions: int) -> int:
    """Bytes in the leaders' logs of `topic` (every replica holds the same batches: the first)."""
    size = 0
    for p in range(partitions):
        broker = cluster.brokers[0]
        size += sum(f.stat().st_size for f in (broker.log_dir / f"{topic}-{p}").glob("*.log"))
    return size


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_counters_move_by_what_clients_sent_and_read(kafkapy_cluster: KafkapyCluster) -> None:
    brokers = kafkapy_cluster.brokers
    create(kafkapy_cluster, "metered", [[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    producer = Producer(
        {"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "acks": "all", "linger.ms": 5}
    )
    for i in range(RECORDS):
        producer.produce("metered", VALUE, partition=i % 3)
    assert producer.flush(WAIT_S) == 0

    assert total(brokers, "kafka_server_brokertopicmetrics_messagesin_total", topic="metered") == RECORDS
    # Replicated to all three: every replica's log holds the leader's batches byte for byte.
    wait_until(lambda: all((b.log_dir / "metered-0").exists() for b in brokers), "the replicas")
    bytes_in = total(brokers, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered")
    assert bytes_in == wait_until(
        lambda: log_bytes(kafkapy_cluster, "metered", 3) == bytes_in and bytes_in, "replicas"
    )
    assert total(brokers, "kafka_server_brokertopicmetrics_messagesin_total") >= RECORDS  # all topics

    consumer = Consumer({"bootstrap.servers": kafkapy_cluster.bootstrap_servers, "group.id": "metrics-test",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition("metered", p, 0) for p in range(3)])
    read = 0
    deadline = time.monotonic() + WAIT_S
    while read < RECORDS and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            read += 1
    consumer.close()
    assert read == RECORDS
    bytes_out = total(brokers, "kafka_server_brokertopicmetrics_bytesout_total", topic="metered")
    assert bytes_out >= bytes_in  # every batch went out to the consumer at least once
    assert total(brokers, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic="metered") > 0
    # Followers' fetches count as replication, not as BytesOut.
    assert total(brokers, "kafka_server_brokertopicmetrics_replicationbytesout_total") >= 2 * bytes_in

    scrapes = [scrape(b) for b in brokers]
    for api in ("Produce", "Fetch", "Metadata", "ApiVersions"):
        assert any(
            name == "kafka_network_requestmetrics_requests_total" and dict(labels)["request"] == api and v > 0
            for s in scrapes
            for (name, labels), v in s.items()
        ), api
        assert (
            sum(value(s, "kafka_network_requestmetrics_totaltimems_count", request=api) for s in scrapes) > 0
        )
    for s in scrapes:  # the controller's requests reached every broker
        assert value(s, "kafka_network_requestmetrics_localtimems_count", request="LeaderAndIsr") > 0
        assert (
            (
                "kafka_network_requestmetrics_totaltimems",
                frozenset({("request", "Fetch"), ("quantile", "0.99")}),
            )
        ) in s
        assert value(s, "kafka_server_replicamanager_partitioncount") >= 3
        assert value(s, "kafka_server_sessionexpirelistener_sessionstate", state="CONNECTED") == 1
    assert sum(value(s, "kafka_controller_kafkacontroller_activecontrollercount") for s in scrapes) == 1
    assert sum(value(s, "kafka_server_replicamanager_leadercount") for s in scrapes) >= 3


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=3, overrides=OVERRIDES)
def test_a_killed_broker_shows_as_under_replicated_and_offline_partitions(
    kafkapy_cluster: KafkapyCluster,
) -> None:
    brokers = kafkapy_cluster.brokers
    controller = next(
        b for b in brokers if value(scrape(b), "kafka_controller_kafkacontroller_activecontrollercount")
    )
    victim = next(b for b in brokers if b is not controller)
    survivors = [b for b in brokers if b is not victim]
    others = [b.broker_id for b in survivors]
    # Led by the survivors, replicated on the victim; and one partition only the victim holds.
    create(kafkapy_cluster, "replicated", [[others[0], victim.broker_id], [others[1], victim.broker_id]])
    create(kafkapy_cluster, "lonely", [[victim.broker_id]])
    wait_until(lambda: total(survivors, "kafka_server_replicamanager_underreplicatedpartitions") == 0
               and value(scrape(controller), "kafka_controller_kafkacontroller_globalpartitioncount") >= 3,
               "a healthy cluster")  # fmt: skip
    assert value(scrape(controller), "kafka_controller_kafkacontroller_offlinepartitionscount") == 0

    victim.kill()
    wait_until(lambda: total(survivors, "kafka_server_replicamanager_underreplicatedpartitions") >= 2,
               "the survivors to report under-replicated partitions")  # fmt: skip
    wait_until(lambda: value(scrape(controller), "kafka_controller_kafkacontroller_offlinepartitionscount") == 1,
               "the controller to count the lonely partition offline")  # fmt: skip
    assert total(survivors, "kafka_controller_kafkacontroller_activecontrollercount") == 1


@pytest.mark.timeout(180)
def test_the_request_log_has_kafka_s_completed_request_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka.request.logger at TRACE (config/logging.yaml through $KAFKAPY_LOG_CONFIG): one
    "Completed request:" line per request in kafka-request.log, with the request's contents."""
    config = tmp_path / "logging.yaml"
    config.write_text("loggers:\n  kafka.request.logger: TRACE\nretention:\n  max.rolled.files: 2\n")
    monkeypatch.setenv("KAFKAPY_LOG_CONFIG", str(config))
    with kafkapy_cluster_context(1, None, tmp_path / "cluster") as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "request-log-test"})
        producer.produce("logged", b"hello")
        assert producer.flush(WAIT_S) == 0
        request_log = cluster.brokers[0].logs / "kafka-request.log"
        lines = wait_until(
            lambda: [ln for ln in request_log.read_text().splitlines() if "apiKey=PRODUCE" in ln],
            "a Produce line",
        )
    line = lines[0]
    assert "DEBUG Completed request:RequestHeader(apiKey=PRODUCE, apiVersion=" in line
    assert "clientId=request-log-test" in line
    assert re.search(
        r"from connection 127\.0\.0\.1:\d+-127\.0\.0\.1:\d+;totalTime:[\d.]+,requestQueueTime:", line
    )
    assert ",securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:PLAINTEXT," in line
    assert "logged" in line  # TRACE: the request's contents (its topic)
    assert line.endswith("(kafka.request.logger)")
