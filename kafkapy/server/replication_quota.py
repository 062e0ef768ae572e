"""Replication throttles: Kafka's ReplicationQuotaManager (leader side and follower side).

A quota holds an upper bound in bytes/s (`leader.replication.throttled.rate` or
`follower.replication.throttled.rate`, a dynamic broker config) and the partitions it throttles
(from the topic configs `leader/follower.replication.throttled.replicas`). The rate is Kafka's
`Rate` over a `SampledStat`: `replication.quota.window.num` (11) samples of
`replication.quota.window.size.seconds` (1 s); a window younger than samples-1 full windows
counts as that long, so a throttle starts with a burst of about (samples-1) x bound bytes,
exactly as in Kafka. The fetch paths ask `is_throttled` and `is_quota_exceeded` once per
partition per fetch and `record` the bytes of throttled partitions; with nothing throttled
`any_throttled` is False and they skip all of it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkapy.common.topic_partition import TopicPartition

UNBOUNDED = float(2**63 - 1)  # Kafka's default rate: Long.MaxValue
ALL_REPLICAS = "*"
_THROTTLED_REPLICA = re.compile(r"\s*[0-9]+\s*:\s*[0-9]+\s*")


@dataclass(frozen=True, slots=True)
class ReplicationQuotaConfig:
    num_windows: int = 11  # replication.quota.window.num
    window_size_s: float = 1.0  # replication.quota.window.size.seconds


class Rate:
    """Kafka's Rate over a SampledStat: bytes per second over the last `num_windows` windows."""

    def __init__(self, config: ReplicationQuotaConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._samples: list[list[float]] = []  # [window start (s), bytes]

    def record(self, value: float, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        self._purge(now)
        if not self._samples or now - self._samples[-1][0] >= self._config.window_size_s:
            self._samples.append([now, 0.0])
            del self._samples[: -self._config.num_windows]
        self._samples[-1][1] += value

    def measure(self, now: float | None = None) -> float:
        now = self._clock() if now is None else now
        self._purge(now)
        if not self._samples:
            return 0.0
        total = sum(value for _, value in self._samples)
        elapsed = self._window_size(now)
        return total / elapsed if elapsed > 0 else 0.0

    def window_size(self, now: float | None = None) -> float:
        """Seconds the rate is measured over (Kafka's Rate.windowSize): the client quotas'
        throttle time is a fraction of it."""
        now = self._clock() if now is None else now
        self._purge(now)
        return self._window_size(now)

    def _window_size(self, now: float) -> float:
        window = self._config.window_size_s
        elapsed = now - self._samples[0][0] if self._samples else 0.0
        full_windows = int(elapsed // window)
        # A young measurement counts as samples-1 full windows (Kafka's Rate.windowSize).
        if full_windows < self._config.num_windows - 1:
            elapsed += (self._config.num_windows - 1 - full_windows) * window
        return elapsed

    def _purge(self, now: float) -> None:
        horizon = self._config.num_windows * self._config.window_size_s
        while self._samples and now - self._samples[0][0] >= horizon:
            self._samples.pop(0)


class ReplicationQuotaManager:
    """One side's throttle: the bound, the measured rate and the throttled partitions."""

    def __init__(
        self, config: ReplicationQuotaConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = Rate(config or ReplicationQuotaConfig(), clock)
        self._lock = threading.Lock()  # fetcher threads and the event loop record concurrently
        self.upper_bound = UNBOUNDED
        self._throttled: dict[str, frozenset[int] | None] = {}  # None: every partition ("*")
        self.any_throttled = False

    def update_quota(self, bound: float) -> None:
        self.upper_bound = float(bound)

    def is_quota_exceeded(self) -> bool:
        if self.upper_bound >= UNBOUNDED:
            return False
        with self._lock:
            return self._rate.measure() > self.upper_bound

    def record(self, value: int) -> None:
        with self._lock:
            self._rate.record(value)

    def rate(self) -> float:
        with self._lock:
            return self._rate.measure()

    def is_throttled(self, tp: TopicPartition) -> bool:
        if not self.any_throttled:
            return False
        partitions = self._throttled.get(tp.topic, frozenset())
        return partitions is None or tp.partition in partitions

    def mark_throttled(self, topic: str, partitions: Iterable[int] | None) -> None:
        """Throttle these partitions of `topic` (None: all of them)."""
        self._throttled[topic] = None if partitions is None else frozenset(partitions)
        self.any_throttled = True

    def remove_throttle(self, topic: str) -> None:
        self._throttled.pop(topic, None)
        self.any_throttled = bool(self._throttled)


def validate_throttled_replicas(name: str, value: str) -> None:
    """Kafka's ThrottledReplicaListValidator: '*' or partitionId:brokerId pairs."""
    items = [v for v in value.split(",")] if value.strip() else []
    if value.strip() == ALL_REPLICAS or all(_THROTTLED_REPLICA.fullmatch(v) for v in items):
        return
    raise ValueError(
        f"Invalid value {value} for configuration {name}: {name} must be the literal '*' or a list of "
        "replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def parse_throttled_partitions(value: str, broker_id: int) -> list[int] | None:
    """Kafka's parseThrottledPartitions: the partitions whose replica on `broker_id` is listed
    (None for '*': all of them)."""
    value = value.strip()
    if value == ALL_REPLICAS:
        return None
    partitions = []
    for item in value.split(","):
        if not item.strip():
            continue
        partition, _, broker = item.partition(":")
        if int(broker) == broker_id:
            partitions.append(int(partition))
    return partitions


@dataclass(frozen=True, slots=True)
class ReplicationQuotas:
    """The broker's replication throttles (Kafka's QuotaManagers.leader / .follower /
    .alterLogDirs; the last bounds every replica moving between this broker's log dirs)."""

    leader: ReplicationQuotaManager
    follower: ReplicationQuotaManager
    alter_log_dirs: ReplicationQuotaManager

    @classmethod
    def create(cls, config: Any, dynamic: Any) -> ReplicationQuotas:
        """From replication.quota.window.* and the dynamic rates in force (DynamicBrokerConfig)."""
        window = ReplicationQuotaConfig(
            int(config.get("replication.quota.window.num")),
            float(config.get("replication.quota.window.size.seconds")),
        )
        quotas = cls(
            ReplicationQuotaManager(window), ReplicationQuotaManager(window), ReplicationQuotaManager(window)
        )
        quotas.update_rates(dynamic)
        return quotas

    def update_rates(self, dynamic: Any) -> None:
        from kafkapy.server.dynamic_broker_config import (
            FOLLOWER_THROTTLED_RATE,
            LEADER_THROTTLED_RATE,
            LOG_DIRS_THROTTLED_RATE,
        )

        self.leader.update_quota(dynamic.quota_rate(LEADER_THROTTLED_RATE))
        self.follower.update_quota(dynamic.quota_rate(FOLLOWER_THROTTLED_RATE))
        self.alter_log_dirs.update_quota(dynamic.quota_rate(LOG_DIRS_THROTTLED_RATE))

    def update_topic(self, topic: str, overrides: Mapping[str, str], broker_id: int) -> None:
        """Kafka's TopicConfigHandler: a topic's throttled replicas on this broker, per side."""
        for quota, name in (
            (self.leader, "leader.replication.throttled.replicas"),
            (self.follower, "follower.replication.throttled.replicas"),
        ):
            value = overrides.get(name, "")
            if value.strip():
                try:
                    quota.mark_throttled(topic, parse_throttled_partitions(value, broker_id))
                except ValueError:
                    quota.remove_throttle(topic)
            else:
                quota.remove_throttle(topic)
