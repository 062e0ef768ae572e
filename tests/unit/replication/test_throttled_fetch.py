"""Replication throttles on the fetch paths: the follower's fetcher leaves lagging throttled
partitions out of its request while its quota is exceeded (Kafka's shouldFollowerThrottle), the
leader answers a throttled follower outside the ISR with nothing (shouldLeaderThrottle), and
nothing changes while nothing is throttled."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from replication_helpers import TP, batch
from test_replica_manager_replication import leader_and_isr, replica_manager

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    FetcherConfig,
    PartitionFetchState,
    ReplicaFetcherThread,
)
from kafkapy.server.replication_quota import ReplicationQuotaManager

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
CONFIG = FetcherConfig(backoff_ms=50)


class NoConnection:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.connected = False

    def close(self) -> None:
        pass


def fetcher(quota: ReplicationQuotaManager | None) -> ReplicaFetcherThread:
    thread = ReplicaFetcherThread(
        1, 0, BrokerEndPoint(0, "127.0.0.1", 9092), CONFIG, NoConnection, quota=quota
    )
    log = SimpleNamespace(log_start_offset=0)
    for tp in (A, B):
        thread._partitions[tp] = PartitionFetchState(log, 3, fetch_offset=10, truncating=False, lag=100)
    return thread


def requested(thread: ReplicaFetcherThread) -> set[TopicPartition]:
    request, offsets = thread._build_request()
    return set(offsets.fetching) if request is not None else set()


def exceeded_quota() -> ReplicationQuotaManager:
    quota = ReplicationQuotaManager()
    quota.update_quota(1000)
    quota.record(1_000_000)
    return quota


def test_without_a_quota_or_a_throttled_partition_everything_is_fetched() -> None:
    assert requested(fetcher(None)) == {A, B}
    assert requested(fetcher(exceeded_quota())) == {A, B}  # exceeded, but no partition throttled


def test_a_lagging_throttled_partition_sits_out_while_the_quota_is_exceeded() -> None:
    quota = exceeded_quota()
    quota.mark_throttled("t", [0])
    thread = fetcher(quota)
    assert requested(thread) == {B}
    thread._partitions[A].lag = 0  # caught up: in sync replicas are never throttled
    assert requested(thread) == {A, B}


def test_an_everything_throttled_fetcher_backs_off_for_replica_fetch_backoff() -> None:
    quota = exceeded_quota()
    quota.mark_throttled("t", None)
    thread = fetcher(quota)
    assert requested(thread) == set()
    assert thread._idle_wait() == CONFIG.backoff_ms / 1000


def test_under_the_quota_throttled_partitions_are_fetched_and_counted() -> None:
    quota = ReplicationQuotaManager()
    quota.update_quota(1_000_000)
    quota.mark_throttled("t", None)
    assert requested(fetcher(quota)) == {A, B}


def read(rm: Any, replica: int) -> Any:
    # Without moving follower state: the ISR must stay as LeaderAndIsr set it.
    return rm.read_from_local_log(replica, 0, 1 << 20, [(TP, 0, 1 << 20, -1)], update_follower_state=False)


def test_the_leader_gives_a_throttled_out_of_sync_follower_nothing_while_over_quota(tmp_path: Path) -> None:
    """Kafka's shouldLeaderThrottle: only replicas outside the ISR are throttled; the bytes a
    throttled partition does send count against the leader quota."""
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, [0, 1]), {TP.topic: LogConfig()})  # 2 is out of sync
    rm.append_records(1, [(TP, batch(2))])
    quota = ReplicationQuotaManager()
    quota.update_quota(1000)
    rm.leader_quota = quota
    assert read(rm, 2)[TP].size > 0  # nothing throttled
    quota.mark_throttled(TP.topic, [TP.partition])
    first = read(rm, 2)[TP]
    assert first.size > 0 and quota.rate() > 0  # under the bound: sent, and counted
    quota.record(1_000_000)
    assert read(rm, 2)[TP].size == 0
    assert rm.fetchable_bytes(TP, 0, 2, 1, -1) == 0  # its long poll waits rather than spinning
    assert read(rm, 1)[TP].size > 0  # in sync: never throttled
