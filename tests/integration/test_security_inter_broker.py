"""Two brokers whose inter-broker listener is SASL_SSL with SCRAM-SHA-256 (the brokers' own
credential in ZooKeeper, created before they start, as Kafka's documentation does it).
Invariants: the controller reaches both brokers over it (both brokers' metadata lists both),
followers replicate an acks=all topic with min.insync.replicas=2 through it, every acknowledged
message is read back, and no inter-broker authentication failed."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.server.security.scram import add_scram_credential
from kafkapy.testing import KafkapyCluster, free_port
from kafkapy.zk.admin_zk_client import AdminZkClient
from kafkapy.zk.kafka_zk_client import KafkaZkClient

# tests/ is not a package: put it on the path to reach the test-only certificate helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from security_pki import Pki, make_pki  # noqa: E402

BROKER_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="broker-secret";'
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    pki: Pki = make_pki(tmp_path_factory.mktemp("pki"))
    holder: dict[str, KafkapyCluster] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        if broker_id == 0:
            # ZooKeeper is up, no broker yet: the brokers' credential goes in first.
            zk = KafkaZkClient(holder["c"].zookeeper_connect, 6000, 10000)
            zk.start()
            try:
                add_scram_credential(AdminZkClient(zk), "broker", "SCRAM-SHA-256", "broker-secret")
            finally:
                zk.close()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            "listener.name.internal.scram-sha-256.sasl.jaas.config": BROKER_JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
            "replica.lag.time.max.ms": "10000",
        }

    c = KafkapyCluster(tmp_path_factory.mktemp("ib"), 2, {"auto.create.topics.enable": "false"}, overrides)
    holder["c"] = c
    try:
        c.start()  # ready = each broker's metadata (sent by the controller over SASL_SSL) lists both
        yield c
    finally:
        c.stop()


@pytest.mark.timeout(240)
def test_replication_over_sasl_ssl_inter_broker_listener(cluster: KafkapyCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = f"ib-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # min.insync.replicas on the topic only: a broker-wide 2 would stall the RF-1 __consumer_offsets.
    admin.create_topics([NewTopic(topic, 2, 2, config={"min.insync.replicas": "2"})])[topic].result(60)
    # Both replicas in the ISR of both partitions: the followers fetch over SASL_SSL.
    deadline = time.monotonic() + 90
    while True:
        md = admin.list_topics(topic, timeout=10).topics[topic]
        if md.partitions and all(len(p.isrs) == 2 and p.leader >= 0 for p in md.partitions.values()):
            break
        assert time.monotonic() < deadline, f"ISR never reached 2: {md.partitions}"
        time.sleep(0.5)

    n = 200
    acked: list[bytes] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 60000})
    for i in range(n):
        producer.produce(
            topic,
            f"v{i}".encode(),
            on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None,
        )
    assert producer.flush(90) == 0
    assert len(acked) == n  # acks=all with min.insync.replicas=2: each one is on both brokers

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: set[bytes] = set()
    try:
        for _ in range(240):
            if len(got) >= n:
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.add(msg.value())
    finally:
        consumer.close()
    assert got == set(acked)
    # The first broker to stop asks the controller over the same listener (the last one cannot
    # move its leaders anywhere, so its controlled shutdown is refused, as in Kafka).
    first = cluster.brokers[0]
    assert first.stop() == 0
    assert "Controlled shutdown request returned successfully" in first.server_log()
    for b in cluster.brokers:
        assert "Failed authentication" not in b.server_log()
