"""The broker's metrics registry: hot-path meters, quantiles, and Kafka's names on a scrape."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from prometheus_client import generate_latest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.fetch_session import FetchSessionCache, PartitionRequest, new_context
from kafkapy.server.metrics.meters import BrokerTopicStats, Histogram, RequestMetrics
from kafkapy.server.metrics.quantiles import WindowedQuantiles, quantile_us
from kafkapy.server.metrics.registry import BrokerMetrics, kafka_request_name

pytestmark = pytest.mark.timeout(30)


def test_histogram_buckets_are_powers_of_two_microseconds() -> None:
    h = Histogram()
    for us in (0, 1, 2, 3, 1000, 1023, 1024):
        h.observe_us(us)
    assert h.count == 7 and h.sum_us == 0 + 1 + 2 + 3 + 1000 + 1023 + 1024
    assert h.buckets[0] == 1 and h.buckets[1] == 1 and h.buckets[2] == 2
    assert h.buckets[10] == 2 and h.buckets[11] == 1


def test_quantile_interpolates_inside_its_bucket() -> None:
    buckets = [0] * 65
    buckets[11] = 100  # [1024, 2048) us
    assert quantile_us(buckets, 0.5) == pytest.approx(1536)
    assert quantile_us(buckets, 0.99) == pytest.approx(1024 + 1024 * 0.99)
    assert quantile_us([0] * 65, 0.99) == 0.0


def test_windowed_quantiles_forget_what_is_older_than_the_window() -> None:
    now = [0.0]
    q = WindowedQuantiles(clock=lambda: now[0])
    h = Histogram()
    for _ in range(100):
        h.observe_us(1_000_000)  # 1 s, long ago
    assert dict(q.quantiles_ms(h))["0.50"] > 500
    now[0] = 400.0  # a snapshot is taken at each scrape at most every 30 s
    q.quantiles_ms(h)
    for _ in range(100):
        h.observe_us(1000)  # 1 ms, recent
    now[0] = 430.0
    assert dict(q.quantiles_ms(h))["0.99"] < 2.5  # only the recent ones count


def test_request_metrics_split_a_request_into_kafka_s_times() -> None:
    metrics = RequestMetrics(lambda key: {0: "Produce", 1: "Fetch"}[key])
    ms = 1_000_000
    # Produce v9: 1 ms queued, 2 ms handling, answered at once.
    metrics.counts[0][9] += 1  # the processor counts every request, and times a sample
    metrics.record(0, 0, 1 * ms, 3 * ms, 3 * ms, 3 * ms)
    # Fetch v12: waited 100 ms in purgatory, then 5 ms to write its regions.
    metrics.counts[1][12] += 1
    metrics.record(1, 0, 0, 1 * ms, 101 * ms, 106 * ms)
    produce, fetch = metrics.stats(0), metrics.stats(1)
    assert produce.requests == 1 and produce.by_version[9] == 1
    assert produce.remote.count == 0 and produce.send.count == 0 and produce.total.sync_count() == 1
    assert produce.total.sum_us == pytest.approx(3 * ms / 1024, rel=0.01)
    assert fetch.remote.count == 1 and fetch.send.count == 1
    assert fetch.remote.sum_us == pytest.approx(100 * ms / 1024, rel=0.01)
    assert fetch.total.sum_us == pytest.approx(106 * ms / 1024, rel=0.01)
    assert metrics.handler_busy_ns == pytest.approx(3 * ms, rel=0.01)


def test_all_topics_figures_are_the_sum_and_never_go_back() -> None:
    stats = BrokerTopicStats()
    stats.topic("a").bytes_in += 10
    stats.topic("b").bytes_in += 5
    assert stats.all_topics().bytes_in == 15
    stats.remove_topic("a")
    assert "a" not in stats.topics and stats.all_topics().bytes_in == 15


def test_kafka_request_names() -> None:
    assert kafka_request_name("API_VERSIONS") == "ApiVersions"
    assert kafka_request_name("OFFSET_FOR_LEADER_EPOCH") == "OffsetForLeaderEpoch"
    assert kafka_request_name("PRODUCE") == "Produce"


# -- a scrape over fake broker state (fakes, not mocks) -------------------------------------------


@dataclass
class FakePartition:
    tp: TopicPartition
    leader_id: int
    isr: frozenset[int]
    assignment: tuple[int, ...]
    local_broker_id: int = 0
    log: object = field(
        default_factory=lambda: SimpleNamespace(config=SimpleNamespace(min_insync_replicas=2))
    )


class FakeController:
    def __init__(self, active: bool) -> None:
        self._active = active
        self.controller_state = 0
        offline = SimpleNamespace(value="OfflinePartition")
        online = SimpleNamespace(value="OnlinePartition")
        self.context = SimpleNamespace(
            topics_to_be_deleted=set(),
            all_topics={"t"},
            partition_states={TopicPartition("t", 0): online, TopicPartition("t", 1): offline},
        )

    def is_active(self) -> bool:
        return self._active


def fake_server(metrics: BrokerMetrics, active: bool) -> SimpleNamespace:
    partitions = {
        TopicPartition("t", 0): FakePartition(TopicPartition("t", 0), 0, frozenset({0}), (0, 1, 2)),
        TopicPartition("t", 1): FakePartition(TopicPartition("t", 1), 1, frozenset({1, 0}), (1, 0)),
    }
    members = SimpleNamespace(members={"m1": object(), "m2": object()}, state=SimpleNamespace(name="STABLE"))
    sessions = FetchSessionCache(10)
    req = PartitionRequest(0, 1024)
    full = new_context(sessions, 0, 0, {("t", 0): req, ("t", 1): req}, [], True, False)
    full.respond({})
    return SimpleNamespace(
        state=3,
        apis=SimpleNamespace(fetch_sessions=sessions),
        replica_manager=SimpleNamespace(
            partitions=partitions, fetcher_manager=SimpleNamespace(max_lag=lambda: 7)
        ),
        controller=FakeController(active),
        group_coordinator=SimpleNamespace(manager=SimpleNamespace(groups={"g": members})),
        zk=SimpleNamespace(session_state=lambda: "CONNECTED"),
        log_manager=SimpleNamespace(failure_channel=SimpleNamespace(offline_dirs=frozenset({"/data/1"}))),
    )


def scrape(active: bool = True) -> dict[str, float]:
    metrics = BrokerMetrics(lambda key: {0: "PRODUCE"}.get(key, "FETCH"))
    metrics.topics.topic("t").messages_in += 3
    metrics.topics.topic("t").bytes_in += 300
    metrics.requests.counts[0][9] += 8  # eight Produce requests, one of them timed
    metrics.requests.record(0, 0, 1000, 2000, 2000, 2000)
    metrics.bind(fake_server(metrics, active))  # type: ignore[arg-type]
    samples: dict[str, float] = {}
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_a_scrape_uses_the_jmx_exporter_s_names() -> None:
    s = scrape()
    assert s["kafka_server_brokertopicmetrics_messagesin_total"] == 3
    assert s['kafka_server_brokertopicmetrics_bytesin_total{topic="t"}'] == 300
    assert s['kafka_network_requestmetrics_requests_total{request="Produce",version="9"}'] == 8
    assert s['kafka_network_requestmetrics_totaltimems_count{request="Produce"}'] == 8
    # The sum is the timed request's (2000 ns >> 10 units of 1.024 us) scaled to all eight.
    assert s['kafka_network_requestmetrics_totaltimems_sum{request="Produce"}'] == pytest.approx(
        8 * 1 * 1.024 / 1000
    )
    assert 'kafka_network_requestmetrics_localtimems{quantile="0.99",request="Produce"}' in s
    assert s['kafka_network_requestmetrics_remotetimems{quantile="0.99",request="Produce"}'] == 0
    assert s["kafka_server_replicamanager_partitioncount"] == 2
    assert s["kafka_server_replicamanager_leadercount"] == 1
    assert s["kafka_server_replicamanager_underreplicatedpartitions"] == 1
    assert s["kafka_server_replicamanager_underminisrpartitioncount"] == 1
    assert s["kafka_controller_kafkacontroller_activecontrollercount"] == 1
    assert s["kafka_controller_kafkacontroller_offlinepartitionscount"] == 1
    assert s["kafka_controller_kafkacontroller_globalpartitioncount"] == 2
    assert s['kafka_server_replicafetchermanager_maxlag{clientId="Replica"}'] == 7
    assert s["kafka_server_fetchsessioncache_numincrementalfetchsessions"] == 1
    assert s["kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"] == 2
    assert s["kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"] == 0
    assert s["kafka_coordinator_group_groupmetadatamanager_numgroups"] == 1
    assert s["kafka_coordinator_group_groupmetadatamanager_nummembers"] == 2
    assert s["kafka_coordinator_group_groupmetadatamanager_numgroupsstable"] == 1
    assert s['kafka_server_sessionexpirelistener_sessionstate{state="CONNECTED"}'] == 1
    assert s["kafka_server_kafkaserver_brokerstate"] == 3
    assert s["kafka_log_logmanager_offlinelogdirectorycount"] == 1
    assert "kafka_log_logflushstats_logflushrateandtimems_count" in s
    assert "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count" in s
    assert "kafka_controller_controllerstats_leaderelectionrateandtimems_count" in s
    assert "kafka_controller_controllerstats_uncleanleaderelections_total" in s
    assert 0.0 <= s["kafka_network_socketserver_networkprocessoravgidlepercent"] <= 1.0


def test_only_the_active_controller_reports_controller_counts() -> None:
    s = scrape(active=False)
    assert s["kafka_controller_kafkacontroller_activecontrollercount"] == 0
    assert s["kafka_controller_kafkacontroller_offlinepartitionscount"] == 0
    assert s["kafka_controller_kafkacontroller_globalpartitioncount"] == 0
