"""ClusterConnectionStates: which brokers are waiting out a reconnect backoff, and until when.

After each failed connection (or a connection lost) to a node, the next attempt waits
reconnect.backoff.ms, doubling with every further failure up to reconnect.backoff.max.ms,
with +/-20% jitter so that many clients do not reconnect in step, as Kafka's clients do. A
successful connection clears the node's record.
"""

from __future__ import annotations

import random
from typing import NamedTuple


class _Backoff(NamedTuple):
    until: float  # time.monotonic() before which no attempt is made
    failures: int


class ClusterConnectionStates:
    def __init__(self, reconnect_backoff: float, reconnect_backoff_max: float) -> None:
        self.reconnect_backoff = reconnect_backoff
        self.reconnect_backoff_max = max(reconnect_backoff_max, reconnect_backoff)
        self._backoff: dict[int, _Backoff] = {}

    def is_blacked_out(self, node_id: int, now: float) -> bool:
        """Whether `node_id` failed lately and may not be tried again before its backoff ends."""
        backoff = self._backoff.get(node_id)
        return backoff is not None and backoff.until > now

    def failed(self, node_id: int, now: float) -> float:
        """Record a failure; returns the seconds until the next attempt."""
        previous = self._backoff.get(node_id)
        failures = (previous.failures if previous else 0) + 1
        delay = min(self.reconnect_backoff * 2 ** (failures - 1), self.reconnect_backoff_max)
        delay *= random.uniform(0.8, 1.2)
        self._backoff[node_id] = _Backoff(now + delay, failures)
        return delay

    def connected(self, node_id: int) -> None:
        self._backoff.pop(node_id, None)
