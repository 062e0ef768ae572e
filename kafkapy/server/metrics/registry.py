"""BrokerMetrics: the one metrics registry of a broker.

It owns the hot-path meters the request path writes (BrokerTopicMetrics, RequestMetrics) and
the loop's idle counter, and a prometheus_client CollectorRegistry holding one collector
(collector.py) that turns them, and the broker's state, into Kafka's metric families when
scraped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from kafkapy.server.metrics.loop_idle import ThreadCpuClock
from kafkapy.server.metrics.meters import BrokerTopicStats, RequestMetrics

if TYPE_CHECKING:
    from kafkapy.server.kafka_server import KafkaServer


def kafka_request_name(api_name: str) -> str:
    """ApiKey enum name to Kafka's request label: API_VERSIONS -> ApiVersions."""
    return "".join(part.capitalize() for part in api_name.split("_"))


class BrokerMetrics:
    def __init__(self, api_name: Callable[[int], str]) -> None:
        self.topics = BrokerTopicStats()
        self.requests = RequestMetrics(lambda key: kafka_request_name(api_name(key)))
        self._loop_clock: ThreadCpuClock | None = None  # the event loop thread's CPU clock
        self.registry = CollectorRegistry(auto_describe=False)

    def bind(self, server: KafkaServer) -> None:
        """Register the collector over `server`'s state (once its components exist)."""
        from kafkapy.server.metrics.collector import BrokerCollector

        self.registry.register(BrokerCollector(server, self))

    def watch_loop_thread(self) -> None:
        """Call on the event loop's thread: its CPU clock gives the loop's idle share."""
        self._loop_clock = ThreadCpuClock()

    def loop_idle_ns(self) -> int:
        return self._loop_clock.idle_ns() if self._loop_clock is not None else 0
