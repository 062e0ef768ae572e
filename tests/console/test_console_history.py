"""The console's samplers (kafkapy/console/history.py) against ZooKeeper and three real brokers
with their Prometheus endpoints on.

Invariants: a group's lag is what kafka-consumer-groups --describe computes (log end - committed,
per partition, summed); it rises while records are produced and nothing is consumed, and falls to
0 once they are consumed and committed. Per-topic rates are > 0 while producing, 0 when idle, and
their integral over time equals the bytes the leaders' logs grew by (and the records sent); a
broker that is down is skipped (its endpoint reported) and its counters starting again from 0
after a restart neither produce negative rates nor lose the bytes written after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition

from kafkapy.client.admin import AdminClient, NewTopic
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.history import History
from kafkapy.testing import KafkapyCluster, free_port
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin

WAIT_S = 60.0
INTERVAL_S = 0.4
VALUE = b"x" * 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    # Fixed metrics ports, so a restarted broker serves the same URL again.
    ports = {b: free_port() for b in range(3)}
    c = KafkapyCluster(
        tmp_path_factory.mktemp("console-history"),
        3,
        {"kafkapy.metrics.host": "127.0.0.1", "auto.leader.rebalance.enable": "false"},
        broker_overrides={b: {"kafkapy.metrics.port": str(p)} for b, p in ports.items()},
    )
    c.metrics_urls = [f"http://127.0.0.1:{ports[b]}/metrics" for b in range(3)]  # type: ignore[attr-defined]
    try:
        c.start()
        yield c
    finally:
        c.stop()


def urls(cluster: KafkapyCluster) -> list[str]:
    return list(cluster.metrics_urls)  # type: ignore[attr-defined]


def create(cluster: KafkapyCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    admin = AdminClient(cluster.bootstrap_servers, timeout_ms=20_000)
    try:
        admin.create_topic(NewTopic(topic, replica_assignment=assignment))
    finally:
        admin.close()


def produce(cluster: KafkapyCluster, topic: str, partitions: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 2})
    for i in range(count):
        producer.produce(topic, VALUE, partition=i % partitions)
    assert producer.flush(WAIT_S) == 0


def consume_all(
    cluster: KafkapyCluster, topic: str, partitions: int, count: int, group: str = "reader"
) -> None:
    """Read `count` records from offset 0 of each partition and commit them in `group`."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([ConfluentPartition(topic, p, 0) for p in range(partitions)])
    read = 0
    deadline = time.monotonic() + WAIT_S
    while read < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert read == count


def log_bytes(cluster: KafkapyCluster, topic: str) -> int:
    """Bytes in the logs of `topic` on every broker (replication factor 1: each log once)."""
    return sum(f.stat().st_size for b in cluster.brokers for f in Path(b.log_dir).glob(f"{topic}-*/*.log"))


async def until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.1)


def in_thread(work: Callable[[], None]) -> Awaitable[None]:
    return asyncio.get_running_loop().run_in_executor(None, work)


def integral(series: list[tuple[float, float, float, float]], column: int, after: float) -> float:
    """Sum of rate x interval over the samples taken after time `after`."""
    total = 0.0
    for previous, sample in zip(series, series[1:], strict=False):
        if sample[0] > after:
            total += sample[column] * (sample[0] - previous[0])
    return total


def increase(history: History, topic: str, column: int, after: float) -> float:
    """What the brokers' counters of `topic` grew by, per the samples taken after time `after`."""
    return sum(s.increase[column] for s in history.topic_rate_samples(topic) if s.time > after)


@pytest.mark.timeout(240)
def test_group_lag_rises_while_producing_and_falls_after_consuming(cluster: KafkapyCluster) -> None:
    topic, group = "lagging", "lag-readers"
    create(cluster, topic, {0: [0, 1], 1: [1, 2], 2: [2, 0]})
    groups = GroupAdmin(cluster.bootstrap_servers, timeout_ms=20_000)
    groups.commit_offsets(group, {(topic, p): 0 for p in range(3)})

    async def scenario() -> History:
        made: list[GroupAdmin] = []

        def group_admin() -> GroupAdmin:  # the seam a TLS/SASL console uses
            made.append(GroupAdmin(cluster.bootstrap_servers, timeout_ms=20_000))
            return made[-1]

        history = History(
            cluster.bootstrap_servers, lag_interval_s=INTERVAL_S, group_admin_factory=group_admin
        )
        history.start()
        try:
            await until(lambda: bool(history.group_lag_series(group)), "a first lag sample")
            assert history.group_lag_series(group)[-1][1] == 0
            for _ in range(3):  # three bursts, each seen by a round of its own
                await in_thread(lambda: produce(cluster, topic, 3, 90))
                seen = len(history.group_lag_series(group))
                await until(lambda n=seen: len(history.group_lag_series(group)) > n + 1, "a new sample")
            await until(lambda: history.group_lag_series(group)[-1][1] == 270, "the full lag")
            assert history.partition_lag(group) == {TopicPartition(topic, p): 90 for p in range(3)}
            totals = [lag for _, lag in history.group_lag_series(group)]
            assert totals == sorted(totals) and {90, 180, 270} <= set(totals)

            await in_thread(lambda: consume_all(cluster, topic, 3, 270, group))
            await until(lambda: history.group_lag_series(group)[-1][1] == 0, "the lag to fall")
            assert history.partition_lag(group) == {TopicPartition(topic, p): 0 for p in range(3)}
            assert history.partition_lag_series(group, TopicPartition(topic, 1))[-1][1] == 0
            assert group in history.groups()
            assert len(made) == 1  # one client for every round
            return history
        finally:
            await history.stop()

    history = asyncio.run(scenario())
    groups.close()
    series = history.group_lag_series(group)
    assert max(lag for _, lag in series) == 270 and series[-1][1] == 0
    assert [t for t, _ in series] == sorted(t for t, _ in series)


@pytest.mark.timeout(240)
def test_topic_rates_follow_production_and_sum_to_the_bytes_written(cluster: KafkapyCluster) -> None:
    topic = "metered-rates"
    create(cluster, topic, {0: [0], 1: [1], 2: [2]})  # each broker leads one partition
    produce(cluster, topic, 3, 3)  # the brokers count a topic from its first request on
    records = 900

    async def scenario() -> tuple[History, float, int]:
        history = History(
            cluster.bootstrap_servers, urls(cluster), lag_interval_s=60, rate_interval_s=INTERVAL_S
        )
        history.start()
        try:
            await until(lambda: len(history.topic_rate_series(topic)) >= 2, "idle samples")
            assert all(s[1:] == (0.0, 0.0, 0.0) for s in history.topic_rate_series(topic))
            start = history.topic_rate_series(topic)[-1][0]
            bytes_at_start = log_bytes(cluster, topic)

            def produce_steadily() -> None:  # ~3 s of production, 30 records every 0.1 s
                for _ in range(records // 30):
                    produce(cluster, topic, 3, 30)
                    time.sleep(0.1)

            await in_thread(produce_steadily)
            produced_at = time.time()
            during = [s for s in history.topic_rate_series(topic) if start < s[0] <= produced_at]
            # Rates while producing: bytes in/s and messages in/s above 0 (a round or two at least).
            assert sum(1 for s in during if s[1] > 0 and s[3] > 0) >= 2, during
            # Two more rounds: the last bytes are counted, then the topic is idle again.
            await until(
                lambda: sum(1 for s in history.topic_rate_series(topic) if s[0] > produced_at) >= 3, "rounds"
            )
            assert history.topic_rate_series(topic)[-1][1:] == (0.0, 0.0, 0.0)
            assert history.endpoint_errors() == {}

            read_from = time.time()
            await in_thread(lambda: consume_all(cluster, topic, 3, records + 3))
            read_at = time.time()
            await until(
                lambda: sum(1 for s in history.topic_rate_series(topic) if s[0] > read_at) >= 2, "rounds"
            )
            assert any(s[2] > 0 for s in history.topic_rate_series(topic) if s[0] > read_from)  # bytes out/s
            return history, start, bytes_at_start
        finally:
            await history.stop()

    history, start, bytes_at_start = asyncio.run(scenario())
    series = history.topic_rate_series(topic)
    written = log_bytes(cluster, topic) - bytes_at_start
    assert increase(history, topic, 0, start) == written  # exactly: BytesIn counts the batches appended
    assert increase(history, topic, 2, start) == records
    # The rates, integrated over the samples' intervals, give the same within the scrapes' jitter.
    assert integral(series, 1, start) == pytest.approx(written, rel=0.05)
    assert integral(series, 3, start) == pytest.approx(records, rel=0.05)
    # Every batch went out to the consumer at least once (BytesOut counts record bytes sent).
    assert increase(history, topic, 1, start) >= written
    assert topic in history.topics()


@pytest.mark.timeout(300)
def test_a_broker_down_is_skipped_and_its_restarted_counters_count_from_zero(cluster: KafkapyCluster) -> None:
    topic = "restarted-rates"
    create(cluster, topic, {0: [2]})  # broker 2 leads the only partition
    victim = cluster.broker(2)
    victim_url = urls(cluster)[2]

    async def scenario() -> tuple[History, float, int]:
        history = History(
            cluster.bootstrap_servers, urls(cluster), lag_interval_s=60, rate_interval_s=INTERVAL_S
        )
        await history.sample_rates()  # the base the first bytes are measured from
        history.start()
        try:
            await in_thread(lambda: produce(cluster, topic, 1, 600))
            await until(lambda: any(s[1] > 0 for s in history.topic_rate_series(topic)), "the first bytes")
            await in_thread(victim.stop)
            await until(lambda: victim_url in history.endpoint_errors(), "the endpoint to be reported")
            other = "rates-while-down"
            await in_thread(lambda: create(cluster, other, {0: [0]}))
            await in_thread(lambda: produce(cluster, other, 1, 50))
            await until(
                lambda: any(s[1] > 0 for s in history.topic_rate_series(other)), "the other brokers' rates"
            )

            await in_thread(victim.start)
            await in_thread(lambda: cluster.wait_until_ready())
            await until(lambda: victim_url not in history.endpoint_errors(), "the endpoint back")
            restarted_at = time.time()
            before = log_bytes(cluster, topic)
            await in_thread(lambda: produce(cluster, topic, 1, 100))  # fewer bytes than before the restart
            after = log_bytes(cluster, topic)
            produced_at = time.time()
            await until(
                lambda: sum(1 for s in history.topic_rate_series(topic) if s[0] > produced_at) >= 2, "rounds"
            )
            return history, restarted_at, after - before
        finally:
            await history.stop()

    history, restarted_at, written_after = asyncio.run(scenario())
    series = history.topic_rate_series(topic)
    assert all(min(s[1:]) >= 0 for s in series)
    # A topic whose leader is down has no counters anywhere: its series has a gap, not zeros, so
    # the bytes are checked through the counters' increases.
    assert increase(history, topic, 0, restarted_at) == written_after
    assert increase(history, topic, 2, restarted_at) == 100


@pytest.mark.timeout(60)
def test_nothing_reachable_leaves_no_samples_and_names_the_endpoints() -> None:
    url = f"http://127.0.0.1:{free_port()}/metrics"

    async def scenario() -> History:
        history = History(f"127.0.0.1:{free_port()}", [url], timeout_ms=500)
        try:
            await history.sample_lag()
            await history.sample_rates()
            await history.sample_rates()
        finally:
            await history.stop()
        return history

    history = asyncio.run(scenario())
    assert history.groups() == [] and history.topics() == []
    assert list(history.endpoint_errors()) == [url]
    assert "Connection refused" in history.endpoint_errors()[url]
