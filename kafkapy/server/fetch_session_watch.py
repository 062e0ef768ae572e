"""Which follower fetch sessions hold which partitions, told of every change a fetch would see.

A follower's incremental fetch (KIP-227) names only the partitions whose request changed; the
leader used to read all the others anyway, to find the few with news. Instead, a follower's
session (`FetchSession.tracked`) reads only the partitions that may have news: those named in
the request, those not idle at their last read, and those marked here since. Idle means the
follower had everything (its fetch offset was the leader's log end offset), in the ISR, with no
error. Such a partition's answer cannot change until one of these events, which all reach
`changed` through the ReplicaManager:

- an append on the leader (log end offset, and with transaction markers the LSO);
- a high watermark move (a follower's fetch, an ISR change landing);
- an ISR change written or failed (the idle follower's membership decides its idleness);
- a LeaderAndIsr changing leadership, leader epoch, ISR or high watermark; a StopReplica;
- a log dir failure;
- a log start offset move: DeleteRecords, and retention (`changed_everything` once it ran,
  as it runs in a thread and touches few logs at a time, every few minutes).

`changed` marks the partition in each session holding it and wakes that session's parked fetch
(the fetch purgatory watches the session itself, one key, not its thousands of partitions).
Everything here runs on the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.purgatory import DelayedOperationPurgatory

if TYPE_CHECKING:
    from kafkapy.server.fetch_session import FetchSession, PartitionKey


class FetchSessionWatch:
    def __init__(self, purgatory: DelayedOperationPurgatory) -> None:
        self._purgatory = purgatory
        self._sessions: dict[TopicPartition, dict[FetchSession, PartitionKey]] = {}

    def watch(self, session: FetchSession, key: PartitionKey, tp: TopicPartition) -> None:
        """From now on, changes to `tp` mark `key` in `session` (until `unwatch`)."""
        session.tps[key] = tp
        self._sessions.setdefault(tp, {})[session] = key

    def unwatch(self, session: FetchSession, key: PartitionKey) -> None:
        tp = session.tps.pop(key, None)
        if tp is None:
            return
        holders = self._sessions.get(tp)
        if holders is not None:
            holders.pop(session, None)
            if not holders:
                del self._sessions[tp]

    def unwatch_session(self, session: FetchSession) -> None:
        """A session left the cache: none of its partitions is watched any more."""
        for key in list(session.tps):
            self.unwatch(session, key)

    def changed(self, tp: TopicPartition) -> None:
        """Something a fetch of `tp` would answer may have changed."""
        holders = self._sessions.get(tp)
        if holders:
            for session, key in list(holders.items()):
                session.mark(key)
                self._purgatory.check_and_complete(session)

    def changed_all(self, tps: Iterable[TopicPartition]) -> None:
        """`changed` for many partitions, each session's parked fetch checked once."""
        woken: dict[FetchSession, None] = {}
        for tp in tps:
            holders = self._sessions.get(tp)
            if holders:
                for session, key in holders.items():
                    session.mark(key)
                    woken[session] = None
        for session in woken:
            self._purgatory.check_and_complete(session)

    def changed_everything(self) -> None:
        """Every watched partition may have changed (retention ran): all are read once more."""
        self.changed_all(list(self._sessions))

    def watched(self) -> int:
        """Partitions watched, over all sessions (tests, metrics)."""
        return sum(len(h) for h in self._sessions.values())
