"""IsrManager: a leader's ISR changes, written to ZooKeeper the way Kafka 2.8 brokers do.

A change is a conditional update of /brokers/topics/<t>/partitions/<p>/state at the zk version
the partition last saw (its partition epoch): leader, leader epoch and controller epoch stay,
the ISR is the new one. If the version moved, the znode is re-read: a state equal to the one we
meant to write means an earlier attempt of ours landed (a retry after a connection loss);
anything else means the controller changed the partition, so the change is dropped and the
controller's next LeaderAndIsr brings the truth.

Successful changes are batched into /isr_change_notification like Kafka's isr-change-propagation
task: every 2.5 s, once no change came for 5 s or the last notification is 60 s old, so that
a burst of ISR changes costs the controller one UpdateMetadata round.

Runs on the event loop; the ZooKeeper calls run on the manager's own few threads (not the
broker's shared executor: a follower catching up on thousands of partitions queues thousands
of ISR writes, which must not hold back LeaderAndIsr's and the log tasks' executor steps) and
their results come back to the loop, where the Partition is updated.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.metrics.process_metrics import ISR_EXPANDS, ISR_SHRINKS
from kafkapy.server.partition import Partition, now_ms
from kafkapy.zk.topic_znodes import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartitionStateZNode
from kafkapy.zk.topic_znodes import TopicPartition as ZkTopicPartition

log = logging.getLogger("kafkapy.server.IsrManager")

ISR_CHANGE_PROPAGATION_BLACKOUT_MS = 5000
ISR_CHANGE_PROPAGATION_INTERVAL_MS = 60000
ISR_CHANGE_PROPAGATION_CHECK_MS = 2500
# ZooKeeper writes of ISR changes in flight at once (each is one round trip, mostly waiting).
ISR_WRITE_THREADS = 4


def write_isr(zk: Any, tp: TopicPartition, leader_and_isr: LeaderAndIsr, controller_epoch: int) -> int | None:
    """Conditionally write a new ISR (blocking); the znode's new version, or None if it moved."""
    ztp = ZkTopicPartition(tp.topic, tp.partition)
    path = TopicPartitionStateZNode.path(ztp)
    data = TopicPartitionStateZNode.encode(LeaderIsrAndControllerEpoch(leader_and_isr, controller_epoch))
    ok, version = zk.conditional_update_path(path, data, leader_and_isr.zk_version)
    if ok:
        result: int | None = version
        return result
    current = zk.get_topic_partition_state(ztp)
    if current is None:
        return None
    cur = current.leader_and_isr
    if (
        cur.leader == leader_and_isr.leader
        and cur.leader_epoch == leader_and_isr.leader_epoch
        and set(cur.isr) == set(leader_and_isr.isr)
        and current.controller_epoch == controller_epoch
    ):
        unchanged: int | None = cur.zk_version
        return unchanged
    return None


class IsrManager:
    def __init__(
        self,
        broker_id: int,
        zk: Callable[[], Any],
        partitions: Callable[[], Iterable[Partition]],
        on_isr_updated: Callable[[Partition], None],
        replica_lag_time_max_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self._zk = zk  # the KafkaZkClient (a getter: the connection object outlives sessions)
        self._partitions = partitions
        self._on_isr_updated = on_isr_updated
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._isr_changes: set[TopicPartition] = set()
        self._last_isr_change_ms = now_ms()
        self._last_propagation_ms = now_ms()
        self._tasks: list[asyncio.Task[None]] = []
        self._inflight: set[asyncio.Future[Any]] = set()
        self._executor = ThreadPoolExecutor(ISR_WRITE_THREADS, thread_name_prefix="isr-update")

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._tasks.append(
            asyncio.ensure_future(
                self._every("isr-expiration", self.replica_lag_time_max_ms / 2, self.maybe_shrink_isr)
            )
        )
        self._tasks.append(
            asyncio.ensure_future(
                self._every(
                    "isr-change-propagation",
                    ISR_CHANGE_PROPAGATION_CHECK_MS,
                    self.maybe_propagate_isr_changes,
                )
            )
        )

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._tasks.clear()
        if self._inflight:
            await asyncio.wait(list(self._inflight), timeout=5)
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _every(self, name: str, interval_ms: float, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(max(interval_ms, 10) / 1000)
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("Uncaught exception in scheduled task '%s'", name)

    # -- shrink and expand ----------------------------------------------------------------------

    def maybe_shrink_isr(self, at_ms: int | None = None) -> int:
        """The isr-expiration task: propose a smaller ISR for every lagging leader partition."""
        at_ms = now_ms() if at_ms is None else at_ms
        submitted = 0
        for p in list(self._partitions()):
            out = p.out_of_sync_replicas(at_ms)
            if not out:
                continue
            new_isr = p.isr - out
            log.info(
                "[Partition %s broker=%d] Shrinking ISR from %s to %s. Leader: (highWatermark: %d, endOffset: %d). "
                "Out of sync replicas: %s.",
                p.tp, self.broker_id, _ids(p.isr), _ids(new_isr), p.log.high_watermark, p.log.log_end_offset,
                p.describe_replicas(out),
            )  # fmt: skip
            self.submit(p, new_isr)
            submitted += 1
        return submitted

    def maybe_expand_isr(self, p: Partition, new_isr: frozenset[int]) -> None:
        log.info(
            "[Partition %s broker=%d] Expanding ISR from %s to %s",
            p.tp,
            self.broker_id,
            _ids(p.isr),
            _ids(new_isr),
        )
        self.submit(p, new_isr)

    def submit(self, p: Partition, new_isr: frozenset[int]) -> asyncio.Future[Any] | None:
        """Write `new_isr` for `p` off the loop; the partition applies it when the write lands."""
        if p.pending_isr is not None or not p.is_leader:
            return None
        p.pending_isr = new_isr
        lai = LeaderAndIsr(p.leader_id, p.leader_epoch, tuple(sorted(new_isr)), p.partition_epoch)
        controller_epoch = p.controller_epoch
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._executor, write_isr, self._zk(), p.tp, lai, controller_epoch)
        self._inflight.add(fut)
        fut.add_done_callback(lambda f: self._written(p, new_isr, lai, f))
        return fut

    def _written(
        self, p: Partition, new_isr: frozenset[int], lai: LeaderAndIsr, fut: asyncio.Future[Any]
    ) -> None:
        self._inflight.discard(fut)
        if p.leader_epoch != lai.leader_epoch or p.partition_epoch != lai.zk_version:
            return  # the controller changed the partition meanwhile; its LeaderAndIsr stands
        # (A LeaderAndIsr resent with the same epochs cleared `pending_isr`, not our write.)
        if p.pending_isr == new_isr:
            p.pending_isr = None
        error = fut.exception() if not fut.cancelled() else None
        version = None if fut.cancelled() or error is not None else fut.result()
        if version is None:
            if error is not None:
                log.warning("[Partition %s broker=%d] Failed to update ISR to %s in ZooKeeper: %s",
                            p.tp, self.broker_id, _ids(new_isr), error)  # fmt: skip
            else:
                log.info(
                    "[Partition %s broker=%d] Cached zkVersion %d not equal to that in zookeeper, skip updating ISR",
                    p.tp, self.broker_id, lai.zk_version,
                )  # fmt: skip
        else:
            (ISR_SHRINKS if len(new_isr) < len(p.isr) else ISR_EXPANDS).inc()
            p.isr = new_isr
            p.partition_epoch = version
            log.info("[Partition %s broker=%d] ISR updated to %s and zkVersion updated to [%d]",
                     p.tp, self.broker_id, _ids(new_isr), version)  # fmt: skip
            self.record_isr_change(p.tp)
        # A shrink that landed, or an expansion that did not, can let the high watermark move.
        self._on_isr_updated(p)

    # -- propagation ----------------------------------------------------------------------------

    def record_isr_change(self, tp: TopicPartition, at_ms: int | None = None) -> None:
        self._isr_changes.add(tp)
        self._last_isr_change_ms = now_ms() if at_ms is None else at_ms

    def changes_to_propagate(self, at_ms: int) -> list[TopicPartition]:
        """Kafka's rule: after 5 s without a new change, or when the last notice is 60 s old."""
        if not self._isr_changes:
            return []
        if (
            self._last_isr_change_ms + ISR_CHANGE_PROPAGATION_BLACKOUT_MS < at_ms
            or self._last_propagation_ms + ISR_CHANGE_PROPAGATION_INTERVAL_MS < at_ms
        ):
            changes = sorted(self._isr_changes)
            self._isr_changes.clear()
            self._last_propagation_ms = at_ms
            return changes
        return []

    async def maybe_propagate_isr_changes(self) -> None:
        changes = self.changes_to_propagate(now_ms())
        if not changes:
            return
        zk = self._zk()
        partitions = [ZkTopicPartition(tp.topic, tp.partition) for tp in changes]
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, zk.propagate_isr_changes, partitions
            )
        except Exception as e:
            log.warning("Failed to propagate ISR changes for %s: %s; retrying", changes, e)
            self._isr_changes.update(changes)


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in sorted(ids))
