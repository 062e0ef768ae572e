"""BrokerCollector: Kafka's metrics as the Prometheus JMX exporter's Kafka rules name them.

The exporter's rules (example_configs/kafka-2_0_0.yml) map an MBean
`kafka.<domain>:type=<T>,name=<N>PerSec,<k>=<v>` to the counter `kafka_<domain>_<t>_<n>_total{k="v"}`,
a gauge's Value to `kafka_<domain>_<t>_<n>`, and a histogram or timer to
`kafka_<domain>_<t>_<n>{quantile="0.99"}` plus `kafka_<domain>_<t>_<n>_count` (lower-cased
names, label names kept). Everything here runs on the scrape thread: gauges are computed from
the broker's state by copying its dicts (one C-level copy under the GIL, no lock the loop or the
controller takes) and reading plain attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kafkapy.server.metrics import process_metrics as pm
from kafkapy.server.metrics.loop_idle import IdleRatio
from kafkapy.server.metrics.meters import Histogram
from kafkapy.server.metrics.quantiles import WindowedQuantiles

if TYPE_CHECKING:
    from kafkapy.server.kafka_server import KafkaServer
    from kafkapy.server.metrics.registry import BrokerMetrics

# BrokerTopicMetrics meters: (Kafka's name without PerSec, TopicStats attribute, per topic too)
TOPIC_METERS = (
    ("MessagesIn", "messages_in", True),
    ("BytesIn", "bytes_in", True),
    ("BytesOut", "bytes_out", True),
    ("BytesRejected", "bytes_rejected", True),
    ("FailedProduceRequests", "failed_produce_requests", True),
    ("FailedFetchRequests", "failed_fetch_requests", True),
    ("TotalProduceRequests", "total_produce_requests", True),
    ("TotalFetchRequests", "total_fetch_requests", True),
    ("ReplicationBytesIn", "replication_bytes_in", False),
    ("ReplicationBytesOut", "replication_bytes_out", False),
)
# RequestMetrics histograms: (Kafka's name, ApiStats attribute, recorded only when non-zero)
REQUEST_TIMES = (
    ("TotalTimeMs", "total", False),
    ("RequestQueueTimeMs", "queue", False),
    ("LocalTimeMs", "local", False),
    ("RemoteTimeMs", "remote", True),
    ("ResponseQueueTimeMs", None, True),
    ("ResponseSendTimeMs", "send", True),
)


# The request path's histograms count in 1.024 us units (ns >> 10, no division per request).
REQUEST_UNIT = 1.024


def _name(domain: str, bean_type: str, name: str) -> str:
    return f"kafka_{domain}_{bean_type}_{name}".lower()


class BrokerCollector(Collector):
    def __init__(self, server: KafkaServer, metrics: BrokerMetrics) -> None:
        self._server = server
        self._metrics = metrics
        self._quantiles = WindowedQuantiles()
        self._network_idle = IdleRatio(metrics.loop_idle_ns)
        self._handler_idle = IdleRatio(self._handler_idle_ns)
        self._last_wall_ns = 0

    def collect(self) -> Iterator[Metric]:
        yield from self._broker_topic_metrics()
        yield from self._request_metrics()
        yield from self._replica_manager()
        yield from self._controller()
        yield from self._idle()
        yield from self._fetcher()
        yield from self._fetch_sessions()
        yield from self._group_coordinator()
        yield from self._timer(_name("log", "LogFlushStats", "LogFlushRateAndTimeMs"), pm.LOG_FLUSH.histogram)
        yield from self._zookeeper()
        state = GaugeMetricFamily(_name("server", "KafkaServer", "BrokerState"), "Kafka's BrokerState value")
        state.add_metric([], int(self._server.state))
        yield state

    # -- BrokerTopicMetrics ---------------------------------------------------------------------

    def _broker_topic_metrics(self) -> Iterable[Metric]:
        stats = self._metrics.topics
        per_topic = list(stats.topics.items())
        total = stats.all_topics()
        total.replication_bytes_in += pm.REPLICATION_BYTES_IN.value  # counted by the fetcher threads
        for meter, attr, topics_too in TOPIC_METERS:
            family = CounterMetricFamily(
                _name("server", "BrokerTopicMetrics", meter),
                f"BrokerTopicMetrics {meter}PerSec",
                labels=["topic"],
            )
            family.add_metric([], getattr(total, attr))
            if topics_too:
                for topic, t in per_topic:
                    family.add_metric([topic], getattr(t, attr))
            yield family

    # -- RequestMetrics -------------------------------------------------------------------------

    def _request_metrics(self) -> Iterable[Metric]:
        apis = self._metrics.requests.counted()
        for st in apis:
            for h in (st.queue, st.local, st.total):
                h.sync_count()
        rate = CounterMetricFamily(
            _name("network", "RequestMetrics", "Requests"),
            "RequestMetrics RequestsPerSec",
            labels=["request", "version"],
        )
        for st in apis:
            for version, n in enumerate(list(st.by_version)):
                if n:
                    rate.add_metric([st.name, str(version)], n)
        yield rate
        for kafka_name, attr, implied in REQUEST_TIMES:
            name = _name("network", "RequestMetrics", kafka_name)
            family = Metric(name, f"RequestMetrics {kafka_name}", "summary")
            for st in apis:
                timed = st.total.count  # the sampled requests (all but a share of Produce/Fetch)
                histogram = getattr(st, attr) if attr is not None else None
                zeros = timed - (histogram.count if histogram is not None else 0) if implied else 0
                # _count is every request; _sum is scaled up from the timed ones.
                scale = st.requests / timed if timed else 0.0
                self._summary(
                    family,
                    name,
                    {"request": st.name},
                    histogram or Histogram(),
                    st.requests,
                    zeros,
                    scale,
                    REQUEST_UNIT,
                )
            yield family

    def _summary(
        self, family: Metric, name: str, labels: dict[str, str], h: Histogram, count: int, zeros: int,
        scale: float = 1.0, unit: float = 1.0,
    ) -> None:  # fmt: skip
        for label, value in self._quantiles.quantiles_ms(h, zeros):
            family.add_sample(name, {**labels, "quantile": label}, value * unit)
        family.add_sample(name + "_count", labels, count)
        family.add_sample(name + "_sum", labels, h.sum_us * scale * unit / 1000.0)

    def _timer(self, name: str, h: Histogram) -> Iterable[Metric]:
        family = Metric(name, name, "summary")
        self._summary(family, name, {}, h, h.count, 0)
        yield family

    # -- ReplicaManager -------------------------------------------------------------------------

    def _replica_manager(self) -> Iterable[Metric]:
        rm = self._server.replica_manager
        partitions = list(rm.partitions.values()) if rm is not None else []
        leaders = under = under_min = 0
        for p in partitions:
            if p.leader_id != p.local_broker_id:
                continue
            leaders += 1
            isr = len(p.isr)
            if isr < len(p.assignment):
                under += 1
            log = p.log
            if log is not None and isr < log.config.min_insync_replicas:
                under_min += 1
        for name, value in (
            ("PartitionCount", len(partitions)),
            ("LeaderCount", leaders),
            ("UnderReplicatedPartitions", under),
            ("UnderMinIsrPartitionCount", under_min),
            ("OfflineReplicaCount", len(getattr(rm, "offline_partitions", ()))),
        ):
            yield GaugeMetricFamily(
                _name("server", "ReplicaManager", name), f"ReplicaManager {name}", value=value
            )
        log_manager = self._server.log_manager
        channel = getattr(log_manager, "failure_channel", None)
        yield GaugeMetricFamily(
            _name("log", "LogManager", "OfflineLogDirectoryCount"),
            "LogManager OfflineLogDirectoryCount",
            value=len(list(channel.offline_dirs)) if channel is not None else 0,
        )
        for name, counter in (("IsrShrinks", pm.ISR_SHRINKS), ("IsrExpands", pm.ISR_EXPANDS)):
            yield CounterMetricFamily(
                _name("server", "ReplicaManager", name), f"ReplicaManager {name}PerSec", value=counter.value
            )

    # -- KafkaController ------------------------------------------------------------------------

    def _controller(self) -> Iterable[Metric]:
        controller = self._server.controller
        active = controller is not None and controller.is_active()
        offline = partitions = topics = 0
        state = 0
        if controller is not None:
            state = controller.controller_state
        if active and controller is not None:
            ctx = controller.context
            deleting = set(ctx.topics_to_be_deleted)
            states = list(ctx.partition_states.items())
            partitions = len(states)
            topics = len(ctx.all_topics)
            offline = sum(1 for tp, s in states if s.value == "OfflinePartition" and tp.topic not in deleting)
        for name, value in (
            ("ActiveControllerCount", 1 if active else 0),
            ("OfflinePartitionsCount", offline),
            ("GlobalPartitionCount", partitions),
            ("GlobalTopicCount", topics),
            ("ControllerState", state),
        ):
            yield GaugeMetricFamily(
                _name("controller", "KafkaController", name), f"KafkaController {name}", value=value
            )
        yield from self._timer(
            _name("controller", "ControllerStats", "LeaderElectionRateAndTimeMs"),
            pm.LEADER_ELECTION.histogram,
        )
        yield CounterMetricFamily(
            _name("controller", "ControllerStats", "UncleanLeaderElections"),
            "ControllerStats UncleanLeaderElectionsPerSec",
            value=pm.UNCLEAN_LEADER_ELECTIONS.value,
        )

    # -- idle ratios ----------------------------------------------------------------------------

    def _handler_idle_ns(self) -> int:
        """Idle time of the request handlers: wall time minus their busy (local) time."""
        import time

        return time.monotonic_ns() - self._metrics.requests.handler_busy_ns

    def _idle(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(
            _name("network", "SocketServer", "NetworkProcessorAvgIdlePercent"),
            "Share of wall time the event loop's thread was off the CPU since the previous scrape",
            value=self._network_idle.sample(),
        )
        yield GaugeMetricFamily(
            _name("server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"),
            "Share of wall time no request handler ran on the event loop since the previous scrape",
            value=self._handler_idle.sample(),
        )

    # -- FetchSessionCache ----------------------------------------------------------------------

    def _fetch_sessions(self) -> Iterable[Metric]:
        apis = self._server.apis
        if apis is None:
            return
        cache = apis.fetch_sessions
        for name, value in (
            ("NumIncrementalFetchSessions", len(cache)),
            ("NumIncrementalFetchPartitionsCached", cache.num_partitions),
        ):
            yield GaugeMetricFamily(
                _name("server", "FetchSessionCache", name), f"FetchSessionCache {name}", value=value
            )
        yield CounterMetricFamily(
            _name("server", "FetchSessionCache", "IncrementalFetchSessionEvictions"),
            "FetchSessionCache IncrementalFetchSessionEvictionsPerSec",
            value=cache.evictions,
        )

    # -- ReplicaFetcherManager ------------------------------------------------------------------

    def _fetcher(self) -> Iterable[Metric]:
        rm = self._server.replica_manager
        lag = rm.fetcher_manager.max_lag() if rm is not None else 0
        family = GaugeMetricFamily(
            _name("server", "ReplicaFetcherManager", "MaxLag"),
            "ReplicaFetcherManager MaxLag",
            labels=["clientId"],
        )
        family.add_metric(["Replica"], lag)
        yield family

    # -- GroupMetadataManager -------------------------------------------------------------------

    def _group_coordinator(self) -> Iterable[Metric]:
        coordinator = self._server.group_coordinator
        groups = list(coordinator.manager.groups.values()) if coordinator is not None else []
        by_state: dict[str, int] = {}
        members = 0
        for g in groups:
            by_state[g.state.name] = by_state.get(g.state.name, 0) + 1
            members += len(g.members)
        figures = [("NumGroups", len(groups)), ("NumMembers", members)]
        for kafka_name, state in (
            ("NumGroupsPreparingRebalance", "PREPARING_REBALANCE"),
            ("NumGroupsCompletingRebalance", "COMPLETING_REBALANCE"),
            ("NumGroupsStable", "STABLE"),
            ("NumGroupsDead", "DEAD"),
            ("NumGroupsEmpty", "EMPTY"),
        ):
            figures.append((kafka_name, by_state.get(state, 0)))
        for name, value in figures:
            yield GaugeMetricFamily(
                f"kafka_coordinator_group_groupmetadatamanager_{name.lower()}",
                f"GroupMetadataManager {name}",
                value=value,
            )

    # -- ZooKeeper ------------------------------------------------------------------------------

    def _zookeeper(self) -> Iterable[Metric]:
        yield from self._timer(
            _name("server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs"),
            pm.ZOOKEEPER_REQUEST_LATENCY.histogram,
        )
        family = GaugeMetricFamily(
            _name("server", "SessionExpireListener", "SessionState"),
            "The ZooKeeper session's state (Kafka's SessionState string as a label)",
            labels=["state"],
        )
        family.add_metric([self._server.zk.session_state()], 1)
        yield family
        for name, counter in (
            ("ZooKeeperExpires", pm.ZOOKEEPER_EXPIRES),
            ("ZooKeeperDisconnects", pm.ZOOKEEPER_DISCONNECTS),
        ):
            yield CounterMetricFamily(
                _name("server", "SessionExpireListener", name),
                f"SessionExpireListener {name}PerSec",
                value=counter.value,
            )


__all__ = ["BrokerCollector"]
