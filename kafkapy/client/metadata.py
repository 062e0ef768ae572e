"""MetadataRefresh: when the NetworkClient asks for cluster metadata, and about which topics.

A refresh is due when one was requested (an error that may mean stale leadership, a new topic,
a leaderless partition) and retry.backoff.ms has passed since the last attempt, or when the
snapshot is older than metadata.max.age.ms. One request at a time. `add_topics` and
`request_update` may be called from any thread: they only set fields the polling thread reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkapy.client.cluster import ClusterMetadata
from kafkapy.protocol.generated.metadata_request import MetadataRequest, MetadataRequestTopic


class MetadataRefresh:
    def __init__(self, max_age: float, retry_backoff: float, request_timeout: float) -> None:
        self.max_age = max_age
        self.retry_backoff = retry_backoff
        self.request_timeout = request_timeout
        self.topics: frozenset[str] = frozenset()
        self.all_topics = False
        self.update_requested = True
        self.in_flight = False
        self.last_attempt = 0.0
        self.allow_auto_topic_creation = True

    def add_topics(self, topics: Iterable[str]) -> None:
        new = set(topics) - self.topics
        if new:
            self.topics = self.topics | new  # a new frozenset: readers never see it half-built
            self.update_requested = True

    def due_in(self, cluster: ClusterMetadata, now: float) -> float:
        """Seconds until a refresh should be sent (0: now)."""
        if self.in_flight:
            return self.request_timeout
        backoff_left = self.last_attempt + self.retry_backoff - now
        if self.update_requested:
            return max(0.0, backoff_left)
        return max(0.0, cluster.updated_at + self.max_age - now, backoff_left)

    def start(self, now: float) -> Any:
        """Mark a request as sent; returns the body builder (topics by version)."""
        self.last_attempt = now
        self.in_flight = True
        self.update_requested = False
        names = None if self.all_topics else sorted(self.topics)

        def build(version: int) -> MetadataRequest:
            # Metadata v0 cannot say "all topics" with null: an empty list meant that then.
            wanted = None if names is None else [MetadataRequestTopic(name=t) for t in names]
            if wanted is None and version == 0:
                wanted = []
            return MetadataRequest(topics=wanted, allow_auto_topic_creation=self.allow_auto_topic_creation)

        return build

    def finish(
        self, resp: Any, exc: BaseException | None, previous: ClusterMetadata
    ) -> ClusterMetadata | None:
        """The new snapshot (None when the request failed, which asks for another)."""
        self.in_flight = False
        if exc is not None:
            self.update_requested = True
            return None
        cluster = ClusterMetadata.from_response(resp, previous)
        # Leaderless partitions (a topic being created, an election under way): ask again soon.
        if cluster.missing_leaders(self.topics):
            self.update_requested = True
        return cluster
