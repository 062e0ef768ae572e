"""ZookeeperConsumerConnector: Kafka 0.8's high-level consumer, coordinating through ZooKeeper.

    connector = ZookeeperConsumerConnector(ConsumerConfig.from_props({
        "group.id": "g", "zookeeper.connect": "127.0.0.1:2181", "auto.offset.reset": "smallest"}))
    streams = connector.create_message_streams({"events": 2})["events"]
    for m in streams[0]:            # MessageAndMetadata(topic, partition, offset, key, message)
        ...
    connector.shutdown()

The consumer registers itself as the ephemeral /consumers/<group>/ids/<consumer id> (Kafka's
JSON), watches the group's ids, /brokers/ids and its topics (and, with a topic filter,
/brokers/topics), and rebalances on every change and on a new ZooKeeper session (rebalance.py).
Offsets live in /consumers/<group>/offsets/<topic>/<partition>: written every
auto.commit.interval.ms, after a rebalance stops the fetchers, on commit_offsets(), and at
shutdown when auto-commit is on.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator

from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkapy.consumer_legacy.config import ConsumerConfig
from kafkapy.consumer_legacy.fetcher import ConsumerFetcherManager
from kafkapy.consumer_legacy.rebalance import ConsumerRebalanceListener, Rebalancer
from kafkapy.consumer_legacy.stream import SHUTDOWN_COMMAND, FetchedDataChunk, KafkaStream, clear_queue
from kafkapy.consumer_legacy.topic_count import ConsumerThreadId, TopicCount, make_consumer_id
from kafkapy.consumer_legacy.topic_filter import TopicFilter
from kafkapy.zk.cluster_znodes import BrokerIdsZNode
from kafkapy.zk.consumer_znodes import ConsumerIdsZNode, ConsumerIdZNode, ConsumerOffsetZNode
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.topic_znodes import TopicsZNode, TopicZNode
from kafkapy.zk.watchers import ZNodeChangeHandler, ZNodeChildChangeHandler
from kafkapy.zk.zk_io import NEW_SESSION

log = logging.getLogger(__name__)


class MessageStreamsExistException(Exception):
    pass


class _OnChildren(ZNodeChildChangeHandler):
    def __init__(self, path: str, callback: Callable[[], None]) -> None:
        super().__init__(path)
        self._callback = callback

    def handle_child_change(self) -> None:
        self._callback()


class _OnData(ZNodeChangeHandler):
    def __init__(self, path: str, callback: Callable[[], None]) -> None:
        super().__init__(path)
        self._callback = callback

    def handle_data_change(self) -> None:
        self._callback()

    def handle_creation(self) -> None:
        self._callback()


class ZookeeperConsumerConnector:
    def __init__(self, config: ConsumerConfig, listener: ConsumerRebalanceListener | None = None) -> None:
        self.config = config
        self.group = config.group_id
        self.consumer_id = (
            f"{config.group_id}_{config.consumer_id}"
            if config.consumer_id
            else make_consumer_id(config.group_id)
        )
        self.listener = listener
        self.checkpointed_offsets: dict[tuple[str, int], int] = {}
        self._shutting_down = threading.Event()
        self._streams_created = False
        self._topic_count: TopicCount | None = None
        # Static subscriptions: one queue per (topic, thread); a topic filter shares its
        # num_streams queues across every matching topic (thread n -> queue n).
        self._queues: dict[tuple[str, int], queue.Queue[FetchedDataChunk]] = {}
        self._shared_queues: list[queue.Queue[FetchedDataChunk]] = []
        self._streams: list[KafkaStream] = []
        log.info("[%s], Connecting to zookeeper instance at %s", self.consumer_id, config.zookeeper_connect)
        self.zk = KafkaZkClient(
            config.zookeeper_connect,
            config.zookeeper_session_timeout_ms,
            config.zookeeper_connection_timeout_ms,
        )
        self.zk.start()
        self.fetcher = ConsumerFetcherManager(self.consumer_id, config, self.zk)
        self.rebalancer = Rebalancer(self)
        self._commit_lock = threading.Lock()
        self._auto_committer: threading.Thread | None = None
        if config.auto_commit_enable:
            self._auto_committer = threading.Thread(
                target=self._auto_commit, daemon=True, name=f"{self.consumer_id}-autocommit"
            )
            self._auto_committer.start()

    def __enter__(self) -> ZookeeperConsumerConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def is_shutting_down(self) -> bool:
        return self._shutting_down.is_set()

    # -- public API -------------------------------------------------------------------------------

    def set_consumer_rebalance_listener(self, listener: ConsumerRebalanceListener) -> None:
        if self._streams_created:
            raise MessageStreamsExistException(
                "ZookeeperConsumerConnector can only set consumer rebalance listener before creating streams"
            )
        self.listener = listener

    def create_message_streams(self, topic_count_map: dict[str, int]) -> dict[str, list[KafkaStream]]:
        """{topic: number of streams} -> {topic: [KafkaStream, ...]}; at most once per connector."""
        self._claim_streams()
        count = TopicCount.static(self.consumer_id, topic_count_map)
        result: dict[str, list[KafkaStream]] = {}
        for topic, n in count.topic_count_map.items():
            for i in range(n):
                q = self._new_queue()
                self._queues[(topic, i)] = q
                result.setdefault(topic, []).append(self._new_stream(q))
        self._start(count)
        return result

    def create_message_streams_by_filter(
        self, topic_filter: TopicFilter, num_streams: int = 1
    ) -> list[KafkaStream]:
        """Streams over every topic the Whitelist/Blacklist allows, now and as topics appear."""
        self._claim_streams()
        self._shared_queues = [self._new_queue() for _ in range(num_streams)]
        streams = [self._new_stream(q) for q in self._shared_queues]
        self._start(TopicCount.wildcard(self.consumer_id, topic_filter, num_streams))
        self.zk.register_znode_child_change_handler(_OnChildren(TopicsZNode.path(), self.rebalancer.trigger))
        return streams

    def commit_offsets(self) -> None:
        """Write each owned partition's consumed offset (the next offset to read) to ZooKeeper."""
        with self._commit_lock:
            for topic, infos in list(self.rebalancer.topic_registry.items()):
                for partition, info in list(infos.items()):
                    offset = info.consumed_offset
                    if offset < 0 or self.checkpointed_offsets.get((topic, partition)) == offset:
                        continue  # nothing consumed yet, or nothing new since the last commit
                    self._write_offset(topic, partition, offset)
                    self.checkpointed_offsets[(topic, partition)] = offset

    def owned_partitions(self) -> dict[str, set[int]]:
        return {t: set(ps) for t, ps in self.rebalancer.topic_registry.items()}

    def shutdown(self) -> None:
        """Stop fetching, end every stream's iteration, commit (auto-commit on) and leave the group."""
        if self._shutting_down.is_set():
            return
        self._shutting_down.set()
        log.info("[%s], ZKConsumerConnector shutting down", self.consumer_id)
        start = time.monotonic()
        with self.rebalancer.lock:
            try:
                self.fetcher.stop_connections()
                for q in self.all_queues():
                    clear_queue(q)
                    q.put(SHUTDOWN_COMMAND)
                if self.config.auto_commit_enable:
                    self.commit_offsets()
            except Exception:
                log.exception("[%s], error during consumer connector shutdown", self.consumer_id)
            finally:
                self.zk.close()
        if self._auto_committer is not None:
            self._auto_committer.join(5)
        self.rebalancer.join(5)
        log.info(
            "[%s], ZKConsumerConnector shutdown completed in %d ms",
            self.consumer_id,
            (time.monotonic() - start) * 1000,
        )

    # -- used by the rebalancer -------------------------------------------------------------------

    def all_queues(self) -> Iterator[queue.Queue[FetchedDataChunk]]:
        yield from self._queues.values()
        yield from self._shared_queues

    def all_streams(self) -> list[KafkaStream]:
        return list(self._streams)

    def queue_for(self, topic: str, thread: ConsumerThreadId) -> queue.Queue[FetchedDataChunk]:
        if self._shared_queues:
            return self._shared_queues[thread.thread_id % len(self._shared_queues)]
        return self._queues[(topic, thread.thread_id)]

    def read_committed_offset(self, topic: str, partition: int) -> int | None:
        got = self.zk.get_data(ConsumerOffsetZNode.path(self.group, topic, partition))
        return None if got is None else ConsumerOffsetZNode.decode(got[0])

    def watch_topic(self, topic: str) -> None:
        """A topic's partition count changing (its /brokers/topics/<t> data) means a rebalance."""
        self.zk.register_znode_change_handler(_OnData(TopicZNode.path(topic), self.rebalancer.trigger))

    # -- internals --------------------------------------------------------------------------------

    def _claim_streams(self) -> None:
        if self._streams_created:
            raise MessageStreamsExistException(
                "ZookeeperConsumerConnector can create message streams at most once"
            )
        self._streams_created = True

    def _new_queue(self) -> queue.Queue[FetchedDataChunk]:
        return queue.Queue(self.config.queued_max_message_chunks)

    def _new_stream(self, q: queue.Queue[FetchedDataChunk]) -> KafkaStream:
        stream = KafkaStream(q, self.config.consumer_timeout_ms, self.config.effective_client_id)
        self._streams.append(stream)
        return stream

    def _start(self, count: TopicCount) -> None:
        self._topic_count = count
        self._register_in_zk(count)
        self.zk.register_state_change_handler(self._on_session_event)
        self.zk.register_znode_child_change_handler(
            _OnChildren(ConsumerIdsZNode.path(self.group), self.rebalancer.trigger)
        )
        self.zk.register_znode_child_change_handler(
            _OnChildren(BrokerIdsZNode.path(), self.rebalancer.trigger)
        )
        # The first rebalance runs here, so streams come back with partitions already claimed.
        self.rebalancer.synced_rebalance()
        self.rebalancer.start()

    def _register_in_zk(self, count: TopicCount) -> None:
        """Create our ephemeral registration; a node left by our own expired session is waited out
        (Kafka's ZKCheckedEphemeral)."""
        path = ConsumerIdZNode.path(self.group, self.consumer_id)
        data = ConsumerIdZNode.encode(count.registration())
        log.info("[%s], begin registering consumer %s in ZK", self.consumer_id, self.consumer_id)
        deadline = time.monotonic() + self.config.zookeeper_session_timeout_ms / 1000 * 2
        while True:
            try:
                self.zk.create_recursive(path, data, ephemeral=True)
                break
            except NodeExistsError:
                got = self.zk.get_data(path)
                if got is not None and got[1].ephemeralOwner == self.zk.session_id:
                    break
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        log.info("[%s], end registering consumer %s in ZK", self.consumer_id, self.consumer_id)

    def _on_session_event(self, event: str) -> None:
        # Runs on the ZooKeeper client's session thread, never on kazoo's event thread.
        if event != NEW_SESSION or self.is_shutting_down or self._topic_count is None:
            return
        log.info(
            "[%s], ZK expired; release old broker partition ownership; re-register consumer", self.consumer_id
        )
        with self.rebalancer.lock:
            self.rebalancer.reset_state()
            self._register_in_zk(self._topic_count)
        self.rebalancer.trigger()

    def _write_offset(self, topic: str, partition: int, offset: int) -> None:
        path = ConsumerOffsetZNode.path(self.group, topic, partition)
        data = ConsumerOffsetZNode.encode(offset)
        try:
            self.zk.set_data(path, data)
        except NoNodeError:
            try:
                self.zk.create_recursive(path, data)
            except NodeExistsError:
                self.zk.set_data(path, data)

    def _auto_commit(self) -> None:
        interval = self.config.auto_commit_interval_ms / 1000
        while not self._shutting_down.wait(interval):
            try:
                self.commit_offsets()
            except Exception:  # log it and let it go, as Kafka's autoCommit does
                log.exception("[%s], exception during autoCommit", self.consumer_id)
