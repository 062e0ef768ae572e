"""ConsumerFetcherManager: finds partition leaders and runs one fetcher thread per (broker, fetcher id).

As in Kafka 0.8's consumer: a leader-finder thread takes the owned partitions that have no
fetcher yet, asks a broker (any broker registered in ZooKeeper) for Metadata, and hands each
partition with a leader to the fetcher thread for (leader, hash(topic, partition) %
num.consumer.fetchers). A fetcher that hits an error for a partition (leader moved, broker gone)
gives it back to the leader finder, which looks again after refresh.leader.backoff.ms.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterable

from kafkapy.client.connection import BrokerConnection
from kafkapy.common.java_hash import topic_partition_hash
from kafkapy.consumer_legacy.config import ConsumerConfig
from kafkapy.consumer_legacy.fetcher_thread import ConsumerFetcherThread
from kafkapy.consumer_legacy.stream import PartitionTopicInfo
from kafkapy.consumer_legacy.wire import ClusterMetadata, fetch_metadata, open_connection
from kafkapy.zk.kafka_zk_client import KafkaZkClient

log = logging.getLogger(__name__)

TopicAndPartition = tuple[str, int]


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's Utils.abs(31 * topic.hashCode + partition) % numFetchers, in Java int arithmetic."""
    # The old Scala Utils.abs this consumer used masks the sign bit (not Math.abs).
    return (topic_partition_hash(topic, partition) & 0x7FFFFFFF) % num_fetchers


class ConsumerFetcherManager:
    def __init__(self, consumer_id: str, config: ConsumerConfig, zk: KafkaZkClient) -> None:
        self.consumer_id = consumer_id
        self.config = config
        self.zk = zk
        self._lock = threading.Condition()
        self._partition_map: dict[TopicAndPartition, PartitionTopicInfo] = {}
        self._no_leader: set[TopicAndPartition] = set()
        self._fetchers: dict[tuple[int, int], ConsumerFetcherThread] = {}
        self._leader_finder: threading.Thread | None = None
        self._stopped = threading.Event()
        self._meta_conn: BrokerConnection | None = None

    # -- called by the rebalancer -------------------------------------------------------------

    def start_connections(self, infos: Iterable[PartitionTopicInfo]) -> None:
        with self._lock:
            self._partition_map = {(i.topic, i.partition): i for i in infos}
            self._no_leader = set(self._partition_map)
        self._stopped = threading.Event()
        self._leader_finder = threading.Thread(
            target=self._find_leaders,
            args=(self._stopped,),
            name=f"{self.consumer_id}-leader-finder-thread",
            daemon=True,
        )
        self._leader_finder.start()

    def stop_connections(self) -> None:
        """Stop the leader finder and every fetcher; afterwards nothing more is enqueued."""
        self._stopped.set()
        with self._lock:
            self._lock.notify_all()
        if self._leader_finder is not None:
            self._leader_finder.join()
            self._leader_finder = None
        with self._lock:
            self._partition_map = {}
            self._no_leader = set()
            fetchers, self._fetchers = list(self._fetchers.values()), {}
        for f in fetchers:
            f.initiate_shutdown()
        for f in fetchers:
            f.join()
        if self._meta_conn is not None:
            self._meta_conn.close()
            self._meta_conn = None

    def shutdown(self) -> None:
        self.stop_connections()

    # -- called by fetcher threads ------------------------------------------------------------

    def add_partitions_with_error(self, partitions: Iterable[TopicAndPartition]) -> None:
        with self._lock:
            self._no_leader |= {tp for tp in partitions if tp in self._partition_map}
            self._lock.notify_all()

    # -- leader finder --------------------------------------------------------------------------

    def _find_leaders(self, stopped: threading.Event) -> None:
        backoff_s = self.config.refresh_leader_backoff_ms / 1000
        while not stopped.is_set():
            with self._lock:
                while not self._no_leader and not stopped.is_set():
                    self._lock.wait(1.0)
                wanted = set(self._no_leader)
            if stopped.is_set():
                break
            try:
                metadata = self._metadata({t for t, _ in wanted})
                self._add_fetchers(metadata, wanted, stopped)
            except Exception as e:  # brokers come and go: log, back off, look again
                log.warning(
                    "[%s-leader-finder-thread], Failed to find leader for %s: %s",
                    self.consumer_id,
                    sorted(wanted),
                    e,
                )
                if self._meta_conn is not None:
                    self._meta_conn.close()
                    self._meta_conn = None
            self._shutdown_idle_fetchers()
            stopped.wait(backoff_s)

    def _metadata(self, topics: set[str]) -> ClusterMetadata:
        if self._meta_conn is not None:
            try:
                return fetch_metadata(self._meta_conn, topics)
            except Exception:
                self._meta_conn.close()
                self._meta_conn = None
        brokers = self.zk.get_all_brokers_in_cluster()
        random.shuffle(brokers)
        last: Exception | None = None
        for broker in brokers:
            if not broker.endpoints:
                continue
            endpoint = broker.endpoint("PLAINTEXT") or broker.endpoints[0]
            try:
                conn = open_connection(
                    endpoint.host or "localhost",
                    endpoint.port,
                    self.config.effective_client_id,
                    self.config.socket_timeout_ms / 1000,
                )
                metadata = fetch_metadata(conn, topics)
            except Exception as e:
                last = e
                continue
            self._meta_conn = conn
            return metadata
        raise RuntimeError(
            f"no broker answered Metadata (brokers in ZooKeeper: {[b.id for b in brokers]})"
        ) from last

    def _add_fetchers(
        self, metadata: ClusterMetadata, wanted: set[TopicAndPartition], stopped: threading.Event
    ) -> None:
        with self._lock:
            if stopped.is_set():
                return
            by_fetcher: dict[tuple[int, int], list[PartitionTopicInfo]] = {}
            for tp in wanted:
                leader = metadata.leaders.get(tp, -1)
                info = self._partition_map.get(tp)
                if leader < 0 or info is None or leader not in metadata.brokers:
                    continue
                self._no_leader.discard(tp)
                key = (leader, fetcher_id(tp[0], tp[1], self.config.num_consumer_fetchers))
                by_fetcher.setdefault(key, []).append(info)
            for key, infos in by_fetcher.items():
                fetcher = self._fetchers.get(key)
                host, port = metadata.brokers[key[0]]
                if fetcher is not None and (fetcher.host, fetcher.port) != (host, port):
                    fetcher.initiate_shutdown()  # the broker moved: its old thread drains away
                    fetcher = None
                if fetcher is None or not fetcher.is_alive():
                    fetcher = ConsumerFetcherThread(
                        f"ConsumerFetcherThread-{self.consumer_id}-{key[1]}-{key[0]}",
                        self.config,
                        host,
                        port,
                        self,
                    )
                    self._fetchers[key] = fetcher
                    fetcher.start()
                fetcher.add_partitions(infos)
                log.info(
                    "[%s] Added fetcher for partitions %s",
                    fetcher.name,
                    sorted((i.topic, i.partition, i.fetched_offset) for i in infos),
                )

    def _shutdown_idle_fetchers(self) -> None:
        with self._lock:
            idle = {k: f for k, f in self._fetchers.items() if f.partition_count() == 0}
            for k in idle:
                del self._fetchers[k]
        for f in idle.values():
            f.initiate_shutdown()
