"""The legacy consumer's rebalance (Kafka's ZKRebalancerListener), run on one thread of its own.

Watches only set a flag (they fire on kazoo's event thread); the rebalance thread then runs
`synced_rebalance`: up to rebalance.max.retries attempts, rebalance.backoff.ms apart, of

  1. stop the fetchers, drop queued chunks, commit what was consumed (auto.commit.enable),
  2. listener.before_releasing_partitions(owned), delete our /owners/<t>/<p> znodes,
  3. read the group's consumers and subscriptions and the topics' partitions from ZooKeeper,
     compute the assignment (range / roundrobin) and this consumer's share of it,
  4. read the committed offsets of that share from /consumers/<g>/offsets/<t>/<p>,
  5. claim /consumers/<g>/owners/<t>/<p> (ephemeral); if a previous owner still holds one, give
     back what was claimed and retry the attempt after the backoff,
  6. listener.before_starting_fetchers(assignment), start the fetchers.

An attempt that fails also stops fetchers and clears every queue, so no partition is fetched by
two consumers at once; when all attempts fail ConsumerRebalanceFailedException is raised.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from kazoo.exceptions import NodeExistsError

from kafkapy.consumer_legacy.assignors import AssignmentContext, assign
from kafkapy.consumer_legacy.stream import PartitionTopicInfo, clear_queue
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId, TopicCount
from kafkapy.zk.consumer_znodes import ConsumerIdsZNode, ConsumerIdZNode, ConsumerOwnerZNode

if TYPE_CHECKING:
    from kafkapy.consumer_legacy.connector import ZookeeperConsumerConnector

log = logging.getLogger(__name__)

TopicRegistry = dict[str, dict[int, PartitionTopicInfo]]


class ConsumerRebalanceFailedException(Exception):
    pass


class ConsumerRebalanceListener:
    """Hooks around a rebalance; override what you need (Kafka's ConsumerRebalanceListener)."""

    def before_releasing_partitions(self, partition_ownership: dict[str, set[int]]) -> None:
        """Called with the partitions this consumer owns ({topic: {partition}}) before it lets go
        of them; empty on the first rebalance. Offsets may be committed here."""

    def before_starting_fetchers(
        self, global_partition_assignment: dict[str, dict[int, ConsumerThreadId]]
    ) -> None:
        """Called with the whole group's new assignment ({topic: {partition: consumer thread}})
        after the partitions were claimed and before fetching starts."""


class Rebalancer:
    def __init__(self, connector: ZookeeperConsumerConnector) -> None:
        self.c = connector
        self.topic_registry: TopicRegistry = {}
        self.lock = threading.RLock()  # Kafka's rebalanceLock: rebalance vs. shutdown
        self._triggered = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"{connector.consumer_id}_watcher_executor", daemon=True
        )
        self._watched_topics: set[str] = set()
        self.rebalance_count = 0

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._trigger_wakeup()
            self._thread.join(timeout)

    def trigger(self) -> None:
        """Called from watches: ask the rebalance thread for a rebalance."""
        self._triggered.set()

    def _trigger_wakeup(self) -> None:
        self._triggered.set()

    def _run(self) -> None:
        while not self.c.is_shutting_down:
            if not self._triggered.wait(1.0):
                continue  # wake up now and then to see the shutdown flag
            self._triggered.clear()
            if self.c.is_shutting_down:
                break
            try:
                self.synced_rebalance()
            except Exception:
                log.exception("[%s], error during syncedRebalance", self.c.consumer_id)

    def reset_state(self) -> None:
        """After a session expiry the owner znodes died with the session: forget them."""
        self.topic_registry = {}

    # -- the rebalance ----------------------------------------------------------------------------

    def synced_rebalance(self) -> None:
        c = self.c
        with self.lock:
            for attempt in range(c.config.rebalance_max_retries):
                if c.is_shutting_down:
                    return
                log.info("begin rebalancing consumer %s try #%d", c.consumer_id, attempt)
                try:
                    done = self._rebalance()
                except Exception as e:
                    # ZooKeeper may change under our reads (a consumer leaves between listing and
                    # reading it): let it go, another attempt or watch will follow.
                    log.info("exception during rebalance: %s", e, exc_info=True)
                    done = False
                log.info("end rebalancing consumer %s try #%d", c.consumer_id, attempt)
                if done:
                    self.rebalance_count += 1
                    return
                log.info(
                    "Rebalancing attempt failed. Clearing the cache before the next rebalancing operation"
                )
                self._close_fetchers()
                time.sleep(c.config.effective_rebalance_backoff_ms / 1000)
        if not c.is_shutting_down:
            raise ConsumerRebalanceFailedException(
                f"{c.consumer_id} can't rebalance after {c.config.rebalance_max_retries} retries"
            )

    def _rebalance(self) -> bool:
        c, zk = self.c, self.c.zk
        if not zk.get_sorted_broker_list():
            # No brokers yet: the /brokers/ids watch brings us back when one registers.
            log.warning("no brokers found when trying to rebalance.")
            return True
        self._close_fetchers()
        if c.listener is not None:
            c.listener.before_releasing_partitions({t: set(ps) for t, ps in self.topic_registry.items()})
        self._release_ownership()
        ctx = self._assignment_context()
        global_assignment = assign(c.config.partition_assignment_strategy, ctx)
        mine = global_assignment.get(c.consumer_id, {})
        registry: TopicRegistry = {}
        for (topic, partition), thread in sorted(mine.items()):
            offset = c.read_committed_offset(topic, partition)
            start = -1 if offset is None else offset  # -1: auto.offset.reset decides
            info = PartitionTopicInfo(
                topic, partition, c.queue_for(topic, thread), start, start, c.config.fetch_message_max_bytes
            )
            registry.setdefault(topic, {})[partition] = info
            c.checkpointed_offsets[(topic, partition)] = start
        if c.is_shutting_down or not self._reflect_ownership(mine):
            return False
        self.topic_registry = registry
        self._watch_topics(set(ctx.my_topic_thread_ids))
        if c.listener is not None:
            by_topic: dict[str, dict[int, ConsumerThreadId]] = {}
            for owned in global_assignment.values():
                for (topic, partition), thread in owned.items():
                    by_topic.setdefault(topic, {})[partition] = thread
            c.listener.before_starting_fetchers(by_topic)
        infos = [i for ps in registry.values() for i in ps.values()]
        log.info(
            "Consumer %s selected partitions : %s",
            c.consumer_id,
            ",".join(str(i) for i in sorted(infos, key=lambda i: (i.partition, i.topic))),
        )
        c.fetcher.start_connections(infos)
        return True

    def _assignment_context(self) -> AssignmentContext:
        c, zk = self.c, self.c.zk
        all_topics = _memo(lambda: sorted(zk.get_all_topics_in_cluster()))
        consumers = sorted(zk.get_children(ConsumerIdsZNode.path(c.group)))
        consumers_for_topic: dict[str, list[ConsumerThreadId]] = {}
        mine: dict[str, set[ConsumerThreadId]] | None = None
        for consumer in consumers:
            got = zk.get_data(ConsumerIdZNode.path(c.group, consumer))
            if got is None:
                continue  # left meanwhile; its departure triggers another rebalance
            count = TopicCount.from_registration(consumer, ConsumerIdZNode.decode(got[0]))
            threads = count.thread_ids_per_topic(all_topics, c.config.exclude_internal_topics)
            if consumer == c.consumer_id:
                mine = threads
            for topic, ids in threads.items():
                consumers_for_topic.setdefault(topic, []).extend(ids)
        if mine is None:
            raise RuntimeError(
                f"consumer {c.consumer_id} is not registered in {ConsumerIdsZNode.path(c.group)}"
            )
        for thread_ids in consumers_for_topic.values():
            thread_ids.sort()
        partitions = zk.get_partitions_for_topics(consumers_for_topic)
        return AssignmentContext(c.consumer_id, mine, consumers_for_topic, partitions, consumers)

    def _close_fetchers(self) -> None:
        """Stop fetching, drop what was fetched but not consumed, and commit what was."""
        c = self.c
        c.fetcher.stop_connections()
        for infos in self.topic_registry.values():
            for info in infos.values():
                info.revoked = True
        for q in c.all_queues():
            clear_queue(q)
        for stream in c.all_streams():
            stream.clear()  # waits for an in-progress next(), so consumed offsets are final
        if c.config.auto_commit_enable:
            log.info("Committing all offsets after clearing the fetcher queues")
            c.commit_offsets()

    def _release_ownership(self) -> None:
        zk = self.c.zk
        for topic, infos in self.topic_registry.items():
            for partition in infos:
                zk.delete_path(ConsumerOwnerZNode.path(self.c.group, topic, partition))
        self.topic_registry = {}

    def _reflect_ownership(self, mine: dict[tuple[str, int], ConsumerThreadId]) -> bool:
        zk, group = self.c.zk, self.c.group
        owned: list[tuple[str, int]] = []
        failed = False
        for (topic, partition), thread in sorted(mine.items()):
            path = ConsumerOwnerZNode.path(group, topic, partition)
            try:
                zk.create_recursive(path, ConsumerOwnerZNode.encode(str(thread)), ephemeral=True)
                owned.append((topic, partition))
                log.info("%s successfully owned partition %d for topic %s", thread, partition, topic)
            except NodeExistsError:
                got = zk.get_data(path)
                if got is not None and got[1].ephemeralOwner == zk.session_id:
                    owned.append((topic, partition))  # our own create, retried after a connection loss
                    continue
                log.info(
                    "waiting for the partition ownership to be deleted: %d for topic %s", partition, topic
                )
                failed = True
        if failed:
            for topic, partition in owned:
                zk.delete_path(ConsumerOwnerZNode.path(group, topic, partition))
            return False
        return True

    def _watch_topics(self, topics: set[str]) -> None:
        for topic in topics - self._watched_topics:
            self.c.watch_topic(topic)
        self._watched_topics |= topics


_T = TypeVar("_T")


def _memo(fn: Callable[[], _T]) -> Callable[[], _T]:
    # The topic list is read at most once per rebalance, and only if a wildcard subscriber needs it.
    cache: list[_T] = []

    def get() -> _T:
        if not cache:
            cache.append(fn())
        return cache[0]

    return get
