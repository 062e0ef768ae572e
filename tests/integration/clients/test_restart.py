"""A broker restart keeps every acknowledged message and the topic metadata.

One broker of its own (the test stops and kills it): produce with acks=all, stop it cleanly
(SIGTERM) and start it again, produce more, kill it (SIGKILL: no flush, no clean-shutdown
marker, so the logs go through recovery), start it again, then produce once more. After each
start every acknowledged message is read back with every field checked, offsets still
contiguous, and the topics keep their id, partitions, replicas, ISR and config overrides.

zookeeper.session.timeout.ms is 6 s (ZooKeeper's floor with tickTime 2000 ms) so the killed
broker's ephemeral registration expires quickly and the new process can take its place.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_io as ck
import pytest
from client_helpers import (
    WAIT_S,
    Delivered,
    Message,
    check_round_trip,
    make_messages,
    wait_until,
)
from confluent_kafka import TopicCollection
from confluent_kafka.admin import ConfigResource

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.testing import BrokerHandle, KafkapyCluster

pytestmark = pytest.mark.timeout(240)

ROUND = 3000
# topic -> (partitions, codec, config overrides)
TOPICS: dict[str, tuple[int, str, dict[str, str]]] = {
    "restart-keyed": (3, "gzip", {"retention.ms": "7200000", "max.message.bytes": "2000000"}),
    "restart-small-segments": (1, "none", {"segment.bytes": "65536", "cleanup.policy": "delete"}),
}


@pytest.fixture
def broker_log_on_failure(kafkapy_cluster: KafkapyCluster) -> Iterator[BrokerHandle]:
    broker = kafkapy_cluster.brokers[0]
    yield broker
    print("---- server.log (tail) ----")
    print(broker.server_log()[-6000:])


def describe(bootstrap: str) -> dict[str, Any]:
    """Per topic: id, (partition, leader, replicas, isr) rows, and the overridden configs."""
    admin = ck.admin(bootstrap)
    out: dict[str, Any] = {}
    descriptions = admin.describe_topics(TopicCollection(list(TOPICS)))
    for topic, (_, _, overrides) in TOPICS.items():
        d = descriptions[topic].result(ck.OP_TIMEOUT_S)
        rows = [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr]) for p in d.partitions]
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        configs = admin.describe_configs([resource])[resource].result(ck.OP_TIMEOUT_S)
        out[topic] = (str(d.topic_id), rows, {k: configs[k].value for k in overrides})
    return out


def partitions_serving(bootstrap: str) -> bool:
    """Every partition of every topic answers ListOffsets on the (re)started broker."""
    host, port = bootstrap.rsplit(":", 1)
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1} for p in range(n)
                ],
            }
            for topic, (n, _, _) in TOPICS.items()
        ],
    }
    try:
        with BrokerConnection(host, int(port), "restart-test", timeout=5.0) as conn:
            resp = conn.send(ApiKey.LIST_OFFSETS, 5, body)
    except Exception:
        return False
    assert resp is not None
    return all(p.error_code == 0 for t in resp.topics for p in t.partitions)


def test_clean_stop_and_kill_keep_acknowledged_messages_and_topic_metadata(
    kafkapy_cluster: KafkapyCluster, broker_log_on_failure: BrokerHandle
) -> None:
    cluster, broker = kafkapy_cluster, broker_log_on_failure
    bootstrap = cluster.bootstrap_servers
    for topic, (partitions, _, overrides) in TOPICS.items():
        ck.create_topic(bootstrap, topic, partitions, **overrides)
    wait_until(lambda: partitions_serving(bootstrap), "the new topics' leaders")
    metadata = describe(bootstrap)
    assert {t: (rows, configs) for t, (_, rows, configs) in metadata.items()} == {
        topic: ([(p, 0, [0], [0]) for p in range(n)], overrides)
        for topic, (n, _, overrides) in TOPICS.items()
    }

    sent: dict[str, list[Message]] = {t: [] for t in TOPICS}
    delivered: dict[str, list[Delivered]] = {t: [] for t in TOPICS}

    def produce_round(tag: str) -> None:
        for topic, (_, codec, _) in TOPICS.items():
            msgs = make_messages(f"{topic}-{tag}", ROUND, start=len(sent[topic]))
            p = ck.producer(bootstrap, acks="all", **{"compression.type": codec})
            delivered[topic] += ck.produce(p, topic, msgs)  # flushed: every one acknowledged
            sent[topic] += msgs

    def verify(phase: str) -> None:
        wait_until(lambda: partitions_serving(bootstrap), f"partitions serving {phase}", timeout=WAIT_S)
        assert describe(bootstrap) == metadata, phase
        for topic, (partitions, _, _) in TOPICS.items():
            consumed = ck.consume_all(bootstrap, topic, len(sent[topic]), partitions)
            check_round_trip(topic, sent[topic], delivered[topic], consumed, partitions)

    produce_round("before-stop")
    assert broker.stop() == 0, "SIGTERM should be a clean shutdown"
    assert (Path(broker.log_dir) / ".kafka_cleanshutdown").exists()
    broker.start()
    cluster.wait_until_ready()
    verify("after a clean stop and start")

    produce_round("before-kill")
    broker.kill()
    assert not (Path(broker.log_dir) / ".kafka_cleanshutdown").exists()
    broker.restart()
    cluster.wait_until_ready()
    verify("after SIGKILL and start")

    produce_round("after-kill")
    verify("after producing to the recovered logs")
