"""ConsumerCoordinator: a SimpleConsumer's subscription as a group member (Kafka's
ConsumerCoordinator, eager protocol).

    consumer = SimpleConsumer("127.0.0.1:9092", group_id="g", auto_offset_reset="earliest")
    consumer.subscribe(["events"])        # or subscribe(pattern="events-.*")
    consumer.poll(1000)                   # joins, is assigned partitions, fetches

What the consumer protocol adds to GroupMembership, all run from the caller's poll():
- JoinGroup protocol type "consumer", one protocol per assignor in preference order (range,
  roundrobin by default), each carrying our subscription (ConsumerProtocolSubscription).
- The leader decodes every member's subscription, reads the partition counts of all their
  topics, and runs the assignor the coordinator chose; it rejoins if those counts change.
- Before rejoining (onJoinPrepare): commit what the caller has consumed (enable.auto.commit),
  tell the listener, and give up every partition (eager). After joining: take the assigned
  partitions, whose positions then come from the group's committed offsets, else
  auto.offset.reset.
- Commits carry the generation and member id; a commit refused because the group moved on
  (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS) raises CommitFailedError
  and asks for a rejoin.
- A pattern subscription is re-evaluated on every metadata refresh of all topics.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from kafkapy.client.assignors import ASSIGNORS, Member, parse_strategy
from kafkapy.client.group_membership import (
    COORDINATOR_ERRORS,
    RESET_ERRORS,
    GroupMember,
    GroupMembership,
    JoinedGroup,
)
from kafkapy.client.network_client import NetworkClient
from kafkapy.client.network_client_utils import await_metadata
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    KafkaError,
    RebalanceInProgressException,
    TimeoutException,
    for_code,
)
from kafkapy.protocol.generated.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

if TYPE_CHECKING:
    from kafkapy.client.consumer import SimpleConsumer

log = logging.getLogger("kafkapy.client.ConsumerCoordinator")

OFFSET_COMMIT_MAX_VERSION: Final = 8
_RETRY_COMMIT: Final = COORDINATOR_ERRORS | {CoordinatorLoadInProgressException.code}


class CommitFailedError(Exception):
    """Kafka's CommitFailedException: the group rebalanced and the partitions may now be
    someone else's, so these offsets were not committed."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            "Commit cannot be completed since the group has already rebalanced and assigned the "
            f"partitions to another member ({detail})"
        )


class RebalanceListener(Protocol):
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None: ...
    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None: ...


class ConsumerCoordinator:
    def __init__(
        self,
        consumer: SimpleConsumer,
        bootstrap_servers: str,
        group_id: str,
        *,
        client_id: str,
        assignors: Sequence[str] = ("range", "roundrobin"),
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        unknown = [a for a in assignors if a not in ASSIGNORS]
        if unknown or not assignors:
            raise ValueError(f"unknown partition assignors {unknown}: we have {sorted(ASSIGNORS)}")
        self.consumer = consumer
        self.assignors = tuple(assignors)
        self.auto_commit = enable_auto_commit
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self.timeout = request_timeout_ms / 1000
        # A connection of its own to the coordinator, as Kafka keeps one: a JoinGroup parked
        # for the whole rebalance must not queue behind (or ahead of) fetches. Its requests
        # may take as long as a rebalance (Kafka: rebalance timeout + 5 s).
        self.client = NetworkClient(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=max(request_timeout_ms, max_poll_interval_ms + 5_000),
            retry_backoff_ms=retry_backoff_ms,
            allow_auto_topic_creation=False,
        )
        self.membership = GroupMembership(
            self.client, group_id, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=max_poll_interval_ms,
            heartbeat_interval_ms=heartbeat_interval_ms, retry_backoff_ms=retry_backoff_ms,
            request_timeout_ms=request_timeout_ms,
        )  # fmt: skip
        self.subscription: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._pattern_checked_at = 0.0
        self.listener: RebalanceListener | None = None
        self._join_prepared = False
        self._snapshot: dict[str, int | None] = {}  # leader: partition counts it assigned from
        self._next_auto_commit = 0.0

    # -- subscription ----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None,
                  listener: RebalanceListener | None = None) -> None:  # fmt: skip
        topics = frozenset(topics)
        if bool(topics) == (pattern is not None):
            raise ValueError("subscribe to a list of topics or to a pattern, not both nor neither")
        self.listener = listener
        with self.membership.lock:
            if pattern is not None:
                self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
                self.client.set_all_topics(True)
                self._refresh_all_topics()
                topics = self._matching_topics()
            else:
                self._pattern = None
                self.client.add_topics(topics)
        self._set_subscription(topics)

    def _set_subscription(self, topics: frozenset[str]) -> None:
        if topics != self.subscription:
            self.subscription = topics
            self.membership.request_rejoin(f"subscription changed to {sorted(topics)}")

    def _refresh_all_topics(self) -> None:
        """Wait (bounded) for a metadata response asked for now: the one we hold may predate
        the all-topics switch."""
        start = self.client.cluster.updated_at
        self.client.request_metadata_update()
        deadline = time.monotonic() + self.timeout
        while self.client.cluster.updated_at == start and time.monotonic() < deadline:
            self.client.poll(0.1)

    def _matching_topics(self) -> frozenset[str]:
        assert self._pattern is not None
        # exclude.internal.topics=true, Kafka's default
        return frozenset(
            t for t in self.client.cluster.topics if self._pattern.fullmatch(t) and not t.startswith("__")
        )

    # -- the caller's poll -----------------------------------------------------------------

    def poll(self, deadline: float) -> None:
        """Heartbeat bookkeeping, rebalance if needed, auto-commit when due."""
        member = self.membership
        member.record_poll()
        if self._pattern is not None and self.client.cluster.updated_at != self._pattern_checked_at:
            self._pattern_checked_at = self.client.cluster.updated_at
            self._set_subscription(self._matching_topics())
        if member.is_leader and self._snapshot != self._partition_counts(self._snapshot):
            member.request_rejoin("the partitions of a subscribed topic changed")
        if member.needs_rejoin:
            if not self._join_prepared:
                self._on_join_prepare()
                self._join_prepared = True
            protocols = [(name, encode_subscription(self.subscription)) for name in self.assignors]
            timeout = max(deadline - time.monotonic(), member.retry_backoff)
            joined = member.join(protocols, self._perform_assignment, timeout)
            if joined is not None:
                self._join_prepared = False
                self._on_join_complete(joined)
        elif self.auto_commit and time.monotonic() >= self._next_auto_commit:
            self._commit_consumed("auto-commit")

    def _on_join_prepare(self) -> None:
        owned = self.consumer.assignment()
        if self.auto_commit and owned:
            self._commit_consumed("before rebalancing")
        if self.listener is not None:
            self.listener.on_partitions_revoked(owned)
        self.consumer.assign([])  # eager: everything is given up before the join

    def _commit_consumed(self, why: str) -> None:
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        try:
            self.commit(self.consumer.consumed_offsets())
        except (CommitFailedError, KafkaError) as e:
            log.warning("Offset commit (%s) failed for group %s: %s", why, self.membership.group_id, e)

    def _on_join_complete(self, joined: JoinedGroup) -> None:
        tps = {TopicPartition(t, p) for t, p in decode_assignment(joined.assignment).partitions}
        if {tp.topic for tp in tps} - self.subscription:
            # The leader assigned from a subscription we have since changed: join again.
            self.membership.request_rejoin("assignment does not match our subscription")
            return
        log.info("Group %s generation %d: assigned %s", self.membership.group_id,
                 joined.generation.generation_id, [f"{t}-{p}" for t, p in sorted(tps)])  # fmt: skip
        self.consumer.assign(sorted(tps))  # positions: committed offsets, else auto.offset.reset
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        if self.listener is not None:
            self.listener.on_partitions_assigned(tps)

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int | None]:
        cluster = self.client.cluster
        return {t: len(parts) if (parts := cluster.partitions_for(t)) else None for t in topics}

    def _perform_assignment(self, protocol: str, members: Sequence[GroupMember]) -> Mapping[str, bytes]:
        """The leader's part: runs inside GroupMembership.join, under its lock."""
        assign = ASSIGNORS[protocol]
        subscriptions = {
            m.member_id: Member(m.member_id, decode_subscription(m.metadata).topics, m.group_instance_id)
            for m in members
        }
        topics = {t for s in subscriptions.values() for t in s.topics}
        await_metadata(self.client, topics, self.timeout)
        self._snapshot = self._partition_counts(topics)
        counts = {t: n for t, n in self._snapshot.items() if n is not None}
        result = assign(counts, subscriptions)
        log.info("Group %s: %s assignment %s", self.membership.group_id, protocol,
                 {m: [f"{tp.topic}-{tp.partition}" for tp in tps] for m, tps in result.items()})  # fmt: skip
        return {member_id: encode_assignment(tps) for member_id, tps in result.items()}

    # -- commits ---------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit as this generation's member; coordinator moves are retried."""
        if not offsets:
            return
        generation = self.membership.generation_if_stable()
        if generation is None:
            raise CommitFailedError("this member is not in a stable group generation")
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(partition_index=tp.partition, committed_offset=offset,
                                             committed_leader_epoch=-1, committed_metadata="")
            )  # fmt: skip
        body = OffsetCommitRequest(
            group_id=self.membership.group_id,
            generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=self.membership.group_instance_id,
            retention_time_ms=-1,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                resp = self.membership.coordinator_request(
                    ApiKey.OFFSET_COMMIT, body, OFFSET_COMMIT_MAX_VERSION
                )
                codes = {p.error_code for t in resp.topics for p in t.partitions} - {0}
            except KafkaError as e:
                if not e.retriable:
                    raise
                codes = {e.code}
            if not codes:
                return
            if codes & _RETRY_COMMIT:
                self.membership.coordinator_unknown()
                if time.monotonic() > deadline:
                    raise TimeoutException(f"OffsetCommit for group {self.membership.group_id} timed out")
                time.sleep(self.membership.retry_backoff)
                continue
            if codes & RESET_ERRORS:
                self.membership.reset_generation(f"OffsetCommit: {for_code(min(codes & RESET_ERRORS)).name}")
                raise CommitFailedError(for_code(min(codes & RESET_ERRORS)).name)
            if RebalanceInProgressException.code in codes:
                self.membership.request_rejoin("OffsetCommit: REBALANCE_IN_PROGRESS")
                raise CommitFailedError(RebalanceInProgressException.name)
            raise for_code(min(codes), f"OffsetCommit for group {self.membership.group_id}")

    def close(self) -> None:
        """Commit what was consumed (enable.auto.commit), then leave the group."""
        try:
            if self.auto_commit and self.consumer.assignment():
                self._commit_consumed("on close")
        finally:
            self.membership.close()


_INT_PROPS: Final = {
    "session.timeout.ms": "session_timeout_ms",
    "heartbeat.interval.ms": "heartbeat_interval_ms",
    "max.poll.interval.ms": "max_poll_interval_ms",
    "auto.commit.interval.ms": "auto_commit_interval_ms",
}


def group_kwargs(props: Mapping[str, str]) -> dict[str, Any]:
    """SimpleConsumer keywords for the group settings among Kafka consumer properties (the
    tools' --consumer-property and --consumer.config)."""
    out: dict[str, Any] = {kw: int(props[name]) for name, kw in _INT_PROPS.items() if name in props}
    if "enable.auto.commit" in props:
        out["enable_auto_commit"] = props["enable.auto.commit"].strip().lower() == "true"
    if "partition.assignment.strategy" in props:
        out["partition_assignment_strategy"] = parse_strategy(props["partition.assignment.strategy"])
    return out
