"""ReplicaFetcherManager: which fetcher thread replicates which partition.

As in Kafka's AbstractFetcherManager: num.replica.fetchers threads per leader broker, a
partition assigned to fetcher `abs(31 * topic.hashCode() + partition) % num.replica.fetchers`
(Java's String.hashCode, so a partition lands on the same fetcher id as on a Kafka broker),
one connection per thread. Called from the event loop on LeaderAndIsr and StopReplica;
`shutdown` joins the threads and belongs in an executor.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kafkapy.common.java_hash import kafka_abs, topic_partition_hash
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    FetcherConfig,
    InitialFetchState,
    PartitionFetchState,
    ReplicaFetcherThread,
)
from kafkapy.server.replication_quota import ReplicationQuotaManager

log = logging.getLogger("kafkapy.server.ReplicaFetcherManager")


def fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    return kafka_abs(topic_partition_hash(tp.topic, tp.partition)) % max(num_fetchers, 1)


class ReplicaFetcherManager:
    def __init__(
        self,
        broker_id: int,
        config: FetcherConfig,
        num_fetchers: int = 1,
        thread_factory: Callable[..., Any] = ReplicaFetcherThread,
        quota: ReplicationQuotaManager | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.quota = quota  # the follower-side replication throttle, shared by every thread
        self.config = config
        self.num_fetchers = max(num_fetchers, 1)
        self._thread_factory = thread_factory
        self._fetchers: dict[tuple[int, int], Any] = {}  # (leader id, fetcher id) -> thread
        self._lock = threading.Lock()

    def add_fetcher_for_partitions(self, partitions: dict[TopicPartition, InitialFetchState]) -> None:
        by_fetcher: dict[tuple[int, int], dict[TopicPartition, InitialFetchState]] = {}
        for tp, state in partitions.items():
            by_fetcher.setdefault((state.leader.id, fetcher_id(tp, self.num_fetchers)), {})[tp] = state
        with self._lock:
            for key, states in by_fetcher.items():
                leader = next(iter(states.values())).leader
                thread = self._fetchers.get(key)
                if thread is not None and thread.leader != leader:
                    # The leader broker came back on another address: move its partitions over.
                    carried = thread.remove_partitions(thread.partitions())
                    thread.initiate_shutdown()
                    thread = None
                    states = {**{tp: _restart(s, leader) for tp, s in carried.items()}, **states}
                if thread is None or not thread.is_alive():
                    extra = {"quota": self.quota} if self.quota is not None else {}
                    thread = self._thread_factory(self.broker_id, key[1], leader, self.config, **extra)
                    self._fetchers[key] = thread
                    thread.start()
                thread.add_partitions(states)

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition]) -> None:
        tps = list(tps)
        if not tps:
            return
        with self._lock:
            for thread in self._fetchers.values():
                thread.remove_partitions(tps)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        with self._lock:
            for thread in self._fetchers.values():
                state = thread.fetch_state(tp)
                if state is not None:
                    result: PartitionFetchState | None = state
                    return result
        return None

    def shutdown_idle_fetcher_threads(self) -> None:
        """Stop threads left without partitions (they close their connection on the way out)."""
        with self._lock:
            for key, thread in list(self._fetchers.items()):
                if thread.partition_count() == 0:
                    thread.initiate_shutdown()
                    del self._fetchers[key]

    def max_lag(self) -> int:
        """ReplicaFetcherManager MaxLag: the largest follower lag (messages behind the leader's
        high watermark) over every fetcher. Read by the metrics thread without the fetchers'
        locks: dicts copied in one step under the GIL, plain attributes read."""
        lag = 0
        for thread in list(self._fetchers.values()):
            lag = max(lag, thread.max_lag())
        return lag

    def fetcher_count(self) -> int:
        with self._lock:
            return len(self._fetchers)

    def shutdown(self) -> None:
        """Stop every fetcher and wait for them (blocking: run it off the event loop)."""
        log.info("[ReplicaFetcherManager on broker %d] shutting down", self.broker_id)
        with self._lock:
            threads = list(self._fetchers.values())
            self._fetchers.clear()
        for thread in threads:
            thread.initiate_shutdown()
        for thread in threads:
            thread.shutdown()
        log.info("[ReplicaFetcherManager on broker %d] shutdown completed", self.broker_id)


def _restart(state: PartitionFetchState, leader: BrokerEndPoint) -> InitialFetchState:
    return InitialFetchState(leader, state.leader_epoch, state.log)
