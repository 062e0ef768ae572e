"""Client quotas end to end (KIP-13, KIP-55, KIP-219) with confluent-kafka against a real broker.

Invariants: a producer held to a 1 MB/s client-id producer_byte_rate moves 1 MB/s (within 10%)
measured over whole quota periods, and librdkafka reports the throttle time (throttle_cb); a
consumer_byte_rate holds a consumer the same way; quotas set, changed and removed live through
kafkapy-configs take effect without a restart.

Why "whole quota periods": Kafka's Rate lets a client that has been quiet send (samples - 1)
windows of its quota at once (10 MB here), then throttles it until the oldest sample leaves the
11 s window, so its throughput is a burst then a trickle repeating every ~11 s. The test
measures from the first request over two such periods (22 s) by default, and three (33 s) with
KAFKAPY_QUOTA_LONG=1 (marked slow); both are rates Kafka's own broker would give.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

MB = 1024 * 1024
LONG = os.environ.get("KAFKAPY_QUOTA_LONG") == "1"
QUOTA_PERIOD_S = 11.0  # quota.window.num x quota.window.size.seconds
WAIT_S = 60.0


def configs(*args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "kafkapy.tools.configs", *args],
                            capture_output=True, text=True, timeout=90, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return result


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(WAIT_S)


class ProduceRun:
    """A producer sending as fast as it can; what was acknowledged when, and the throttles reported."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        self.throttles: list[int] = []
        self.acked: list[tuple[float, int]] = []
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
            "batch.size": 64 * 1024, "queue.buffering.max.kbytes": 4096,
            "throttle_cb": lambda event: self.throttles.append(event.throttle_time),
        })  # fmt: skip

    def _acked(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.append((time.monotonic(), len(msg.value())))

    def run(self, topic: str, seconds: float, value: bytes = b"x" * 4096) -> float:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            try:
                self.producer.produce(topic, value, on_delivery=self._acked)
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
        return start

    def rate(self, start: float, seconds: float) -> float:
        """Bytes per second acknowledged in [start, start + seconds)."""
        return sum(n for t, n in self.acked if start <= t < start + seconds) / seconds

    def close(self) -> None:
        self.producer.flush(30)


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_producer_byte_rate_holds_a_producer_and_is_reported(kafkapy_cluster: KafkapyCluster) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    create_topic(boot, "quota-p")
    assert configs("--zookeeper", zkc, "--alter", "--entity-type", "clients", "--entity-name", "quota-producer",
                   "--add-config", f"producer_byte_rate={MB}") == [
        "Completed updating config for entity: client-id 'quota-producer'."]
    seconds = (3 if LONG else 2) * QUOTA_PERIOD_S
    run = ProduceRun(boot, "quota-producer")
    try:
        start = run.run("quota-p", seconds + 1)
        rate = run.rate(start, seconds)
    finally:
        run.close()
    print(f"producer held to {rate / MB:.3f} MB/s over {seconds:.0f} s; "
          f"{len(run.throttles)} throttles reported, max {max(run.throttles, default=0) * 1000:.0f} ms")
    assert 0.9 * MB <= rate <= 1.1 * MB, rate / MB
    assert run.throttles and max(run.throttles) > 0


@pytest.mark.timeout(300)
@pytest.mark.kafkapy_cluster(brokers=1)
def test_consumer_byte_rate_holds_a_consumer(kafkapy_cluster: KafkapyCluster) -> None:
    boot, zkc = kafkapy_cluster.bootstrap_servers, kafkapy_cluster.zookeeper_connect
    create_topic(boot, "quota-c")
    seconds = (3 if LONG else 2) * QUOTA_PERIOD_S
    # More than the quota lets through in the measured time, written before the quota exists.
    loader = Producer({"bootstrap.servers": boot, "linger.ms": 20})
    value = b"y" * 8192
    for _ in range(int((seconds + 15) * MB / len(value))):
        while True:
            try:
                loader.produce("quota-c", value)
                break
            except BufferError:
                loader.poll(0.05)
    assert loader.flush(60) == 0
    assert configs("--zookeeper", zkc, "--alter", "--entity-type", "clients", "--entity-name", "quota-consumer",
                   "--add-config", f"consumer_byte_rate={MB}") == [
        "Completed updating config for entity: client-id 'quota-consumer'."]
    throttles: list[float] = []
    consumer = Consumer({
        "bootstrap.servers": boot, "group.id": "quota-g", "client.id": "quota-consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "max.partition.fetch.bytes": 262144,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    received: list[tuple[float, int]] = []
    try:
        consumer.subscribe(["quota-c"])
        first = wait_until(lambda: consumer.poll(0.5), "the first record")
        start = time.monotonic()
        received.append((start, len(first.value())))
        while time.monotonic() - start < seconds:
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    received.append((time.monotonic(), len(msg.value())))
    finally:
        consumer.close()
    rate = sum(n for t, n in received if t < start + seconds) / seconds
    print(f"consumer held to {rate / MB:.3f} MB/s over {seconds:.0f} s; {len(throttles)} throttles reported")
    assert 0.85 * MB <= rate <= 1.15 * MB, rate / MB
    assert throttles and max(throttles) > 0


if LONG:
    test_producer_byte_rate_holds_a_producer_and_is_reported = pytest.mark.slow(
        test_producer_byte_rate_holds_a_producer_and_is_reported
    )
    test_consumer_byte_rate_holds_a_consumer = pytest.mark.slow(test_consumer_byte_rate_holds_a_consumer)
