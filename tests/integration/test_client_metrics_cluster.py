"""kafkapy's own producer and consumer report Kafka's client metrics through metrics()."""

from __future__ import annotations

import time

import pytest

from kafkapy.client.consumer import SimpleConsumer
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer import KafkaProducer
from kafkapy.testing import KafkapyCluster

RECORDS = 200


@pytest.mark.timeout(120)
def test_producer_and_consumer_metrics_count_what_they_moved(kafkapy_shared_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_shared_cluster.bootstrap_servers
    with KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for _ in range(RECORDS):
            producer.send("client-metrics", value=b"x" * 100, partition=0)
        producer.flush(60)
        sent = producer.metrics()["producer-metrics"]
    assert sent["record-send-total"] == RECORDS
    assert sent["record-error-total"] == 0
    assert sent["request-total"] >= 1 and sent["request-latency-avg"] > 0
    assert sent["record-send-rate"] > 0 and sent["batch-size-avg"] > 100

    consumer = SimpleConsumer(bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("client-metrics", 0)])
        got = 0
        deadline = time.monotonic() + 60
        while got < RECORDS and time.monotonic() < deadline:
            got += len(consumer.poll(1000))
        fetched = consumer.metrics()["consumer-fetch-manager-metrics"]
    finally:
        consumer.close()
    assert got == RECORDS
    assert fetched["records-consumed-total"] == RECORDS
    assert fetched["bytes-consumed-total"] > 100 * RECORDS
    assert fetched["fetch-total"] >= 1 and fetched["fetch-latency-max"] >= 0
    assert fetched["records-lag-max"] >= 0
