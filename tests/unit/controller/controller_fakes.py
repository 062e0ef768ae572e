"""In-memory fakes for controller unit tests: a ControllerZk over dicts, brokers, and a recorder
for the requests the controller sends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafkapy.protocol.errors import ControllerMovedException
from kafkapy.protocol.message import Message
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from kafkapy.server.controller.request_batch import ControllerBrokerRequestBatch, ControllerRequest
from kafkapy.server.controller.zk_interface import TopicAssignment, UpdateLeaderAndIsrResult
from kafkapy.zk.cluster_znodes import BrokerInfo, EndPoint


def broker(broker_id: int, port: int | None = None, rack: str | None = None) -> BrokerInfo:
    return BrokerInfo(
        broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", port or 9090 + broker_id, "PLAINTEXT"),), rack
    )


class FakeZk:
    """ControllerZk in memory. Partition states carry a zk version that bumps on every write,
    so conditional updates behave like ZooKeeper's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.controller: int | None = None
        self.controller_epoch = 0
        self.controller_epoch_version = 0
        self.brokers: dict[int, tuple[Any, int]] = {}
        self.topics: dict[str, TopicAssignment] = {}
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.deletions: set[str] = set()
        self.isr_notifications: dict[str, set[TopicPartition]] = {}
        self.log_dir_events: dict[str, int] = {}  # sequence number -> broker id
        self.preferred: set[TopicPartition] | None = None
        self.watches: dict[str, tuple[Callable[[], None], Callable[[], None] | None]] = {}
        # Fault injection: partitions whose next update hits a version conflict.
        self.conflict_once: set[TopicPartition] = set()
        self.deleted_topics: list[str] = []
        # /admin/reassign_partitions; None when the znode does not exist
        self.reassignment: dict[TopicPartition, list[int]] | None = None

    # --- helpers for tests ---

    def add_topic(
        self, topic: str, assignment: dict[int, list[int]], topic_id: str | None = "AAAAAAAAAAAAAAAAAAAAAQ"
    ) -> None:
        self.topics[topic] = TopicAssignment(
            topic_id, {p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()}
        )
        self.fire_children("/brokers/topics")

    def fire(self, path: str, deleted: bool = False) -> None:
        entry = self.watches.get(path)
        if entry is not None:
            callback, on_delete = entry
            (on_delete or callback)() if deleted else callback()

    def fire_children(self, path: str) -> None:
        self.fire(path)

    def _fence(self, epoch_zk_version: int) -> None:
        if epoch_zk_version >= 0 and epoch_zk_version != self.controller_epoch_version:
            raise ControllerMovedException("Controller epoch zkVersion check fails")

    # --- ControllerZk ---

    def get_controller_id(self) -> int | None:
        return self.controller

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        with self.lock:
            if self.controller is not None:
                raise ControllerMovedException("Controller moved to another broker")
            self.controller = broker_id
            self.controller_epoch += 1
            self.controller_epoch_version += 1
            return self.controller_epoch, self.controller_epoch_version

    def delete_controller(self, epoch_zk_version: int) -> None:
        self.controller = None

    def get_all_brokers_and_epochs(self) -> dict[int, tuple[Any, int]]:
        return dict(self.brokers)

    def get_all_topics(self) -> set[str]:
        return set(self.topics)

    def get_replica_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        return {t: self.topics[t] for t in topics if t in self.topics}

    def set_topic_id(
        self, topic: str, topic_id: str, assignment: TopicAssignment, epoch_zk_version: int
    ) -> None:
        self.topics[topic] = TopicAssignment(topic_id, assignment.partitions)

    def get_unclean_leader_election_enabled(self, topics: Iterable[str], default: bool) -> dict[str, bool]:
        return {
            t: self.topic_configs.get(t, {}).get("unclean.leader.election.enable", str(default).lower())
            == "true"
            for t in topics
        }

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return {tp: self.states[tp] for tp in partitions if tp in self.states}

    def create_partition_states(
        self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, Exception | None]:
        self._fence(epoch_zk_version)
        result: dict[TopicPartition, Exception | None] = {}
        for tp, state in states.items():
            if tp in self.states:
                result[tp] = KeyError(f"{tp} exists")
            else:
                self.states[tp] = state
                result[tp] = None
        return result

    def update_leader_and_isr(
        self, states: dict[TopicPartition, LeaderAndIsr], controller_epoch: int, epoch_zk_version: int
    ) -> UpdateLeaderAndIsrResult:
        self._fence(epoch_zk_version)
        ok: dict[TopicPartition, LeaderAndIsr] = {}
        retry: list[TopicPartition] = []
        for tp, lai in states.items():
            current = self.states.get(tp)
            if tp in self.conflict_once:
                # Someone else (the leader shrinking its ISR) wrote first.
                self.conflict_once.discard(tp)
                assert current is not None
                cur = current.leader_and_isr
                self.states[tp] = LeaderIsrAndControllerEpoch(
                    cur.with_zk_version(cur.zk_version + 1), current.controller_epoch
                )
                retry.append(tp)
                continue
            if current is None or current.leader_and_isr.zk_version != lai.zk_version:
                retry.append(tp)
                continue
            written = lai.with_zk_version(lai.zk_version + 1)
            self.states[tp] = LeaderIsrAndControllerEpoch(written, controller_epoch)
            ok[tp] = written
        return UpdateLeaderAndIsrResult(ok, retry, {})

    def get_topic_deletions(self) -> set[str]:
        return set(self.deletions)

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        self.deletions -= set(topics)

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self._fence(epoch_zk_version)
        self.topics.pop(topic, None)
        for tp in [tp for tp in self.states if tp.topic == topic]:
            del self.states[tp]
        self.deletions.discard(topic)
        self.deleted_topics.append(topic)

    def get_isr_change_notifications(self) -> list[str]:
        return sorted(self.isr_notifications)

    def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: list[str]
    ) -> set[TopicPartition]:
        return set().union(*(self.isr_notifications.get(s, set()) for s in sequence_numbers))

    def delete_isr_change_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        for s in list(self.isr_notifications) if sequence_numbers is None else sequence_numbers:
            self.isr_notifications.pop(s, None)

    def get_log_dir_event_notifications(self) -> list[str]:
        return sorted(self.log_dir_events)

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: list[str]) -> list[int]:
        return sorted({self.log_dir_events[s] for s in sequence_numbers if s in self.log_dir_events})

    def delete_log_dir_event_notifications(
        self, sequence_numbers: list[str] | None, epoch_zk_version: int
    ) -> None:
        for s in list(self.log_dir_events) if sequence_numbers is None else sequence_numbers:
            self.log_dir_events.pop(s, None)

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        return set(self.preferred or ())

    def delete_preferred_replica_election(self, epoch_zk_version: int) -> None:
        self.preferred = None

    def update_topic_assignment(self, topic: str, assignment: TopicAssignment, epoch_zk_version: int) -> None:
        self._fence(epoch_zk_version)
        self.topics[topic] = TopicAssignment(assignment.topic_id, dict(assignment.partitions))

    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]] | None:
        return None if self.reassignment is None else dict(self.reassignment)

    def set_partition_reassignment(
        self, reassignment: dict[TopicPartition, list[int]], epoch_zk_version: int
    ) -> None:
        self._fence(epoch_zk_version)
        self.reassignment = {tp: list(r) for tp, r in reassignment.items()}

    def delete_partition_reassignment(self, epoch_zk_version: int) -> None:
        self._fence(epoch_zk_version)
        self.reassignment = None

    def set_isr(self, tp: TopicPartition, isr: tuple[int, ...]) -> None:
        """What a leader's ISR expansion does: a new ISR, same epoch, next zk version; fires the watch."""
        cur = self.states[tp]
        lai = cur.leader_and_isr
        self.states[tp] = LeaderIsrAndControllerEpoch(
            lai.new_isr(isr).with_zk_version(lai.zk_version + 1), cur.controller_epoch
        )
        self.fire(f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state")

    def watch_children(self, path: str, callback: Callable[[], None]) -> None:
        self.watches[path] = (callback, None)

    def watch_node(
        self, path: str, callback: Callable[[], None], on_delete: Callable[[], None] | None = None
    ) -> bool:
        self.watches[path] = (callback, on_delete)
        return self.reassignment is not None if path == "/admin/reassign_partitions" else True

    def unwatch(self, path: str) -> None:
        self.watches.pop(path, None)


@dataclass
class Sent:
    broker_id: int
    api_key: int
    version: int
    body: ControllerRequest
    callback: Callable[[Message], None] | None


class Recorder:
    """Stands in for ControllerChannelManager.send_request."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []

    def __call__(
        self,
        broker_id: int,
        api_key: int,
        version: int,
        body: ControllerRequest,
        callback: Callable[[Message], None] | None,
    ) -> None:
        self.sent.append(Sent(broker_id, api_key, version, body, callback))

    def of(self, api_key: int, broker_id: int | None = None) -> list[Sent]:
        return [
            s for s in self.sent if s.api_key == api_key and (broker_id is None or s.broker_id == broker_id)
        ]

    def clear(self) -> None:
        self.sent.clear()


def make_context(live: Iterable[int], epoch: int = 1) -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = epoch
    ctx.epoch_zk_version = 1
    ctx.set_live_brokers([(broker(b), 100 + b) for b in live])
    return ctx


def make_batch(
    ctx: ControllerContext, controller_id: int = 0
) -> tuple[ControllerBrokerRequestBatch, Recorder, list[Any]]:
    recorder = Recorder()
    events: list[Any] = []
    return ControllerBrokerRequestBatch(controller_id, ctx, recorder, events.append), recorder, events


def assign(
    ctx: ControllerContext,
    topic: str,
    assignment: dict[int, list[int]],
    topic_id: str = "AAAAAAAAAAAAAAAAAAAAAQ",
) -> list[TopicPartition]:
    ctx.all_topics.add(topic)
    ctx.topic_ids[topic] = topic_id
    for p, replicas in assignment.items():
        ctx.update_partition_full_replica_assignment(
            TopicPartition(topic, p), ReplicaAssignment(tuple(replicas))
        )
    return [TopicPartition(topic, p) for p in sorted(assignment)]
