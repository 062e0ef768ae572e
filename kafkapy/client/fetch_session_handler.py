"""FetchSessionHandler: the fetching side of a KIP-227 fetch session with one broker.

As Kafka's client-side FetchSessionHandler: the first request is full (session id 0, epoch 0)
and asks for a session; once the broker grants one, each request is incremental (that id, epoch
1, 2, ...) and carries only the partitions whose request data changed since the last request
(fetch offset, log start offset, max bytes, leader epoch) plus the ones to forget. The broker
then answers only partitions with news, so a follower of many quiet partitions sends and gets
a few bytes per fetch.

Any error (a session error in the response, or the request failing in transit) drops back to
a full request that closes the old session (its id, epoch 0); FETCH_SESSION_ID_NOT_FOUND
starts from scratch (id 0). A broker that grants no session (id 0 in the answer: no slot, or an
old broker) gets full requests at epoch 0 every time, which keep asking for one.

Two ways to say what to fetch: `build(partitions)` takes every partition wanted now and diffs
it against the session (the consumer's way, O(partitions)); `build_incremental(changed)` takes
only the partitions whose request data may have moved since the last request (None: no longer
wanted), for a caller that tracks its changes itself, so a request costs O(changes) however many
partitions the session holds (a follower of thousands of quiet partitions). A full request
(`needs_full_request`) always names every partition, through `build`.

Sans I/O: the caller builds and sends requests, and hands the outcome back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, NamedTuple

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import FetchSessionIdNotFoundException, for_code

log = logging.getLogger("kafkapy.clients.FetchSessionHandler")

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
_MAX_EPOCH: Final = 2**31 - 1


class PartitionData(NamedTuple):
    """One partition of a fetch request: what an incremental request compares to the last one."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicPartition]
    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    def __init__(self, node_id: int, log_prefix: str = "") -> None:
        self.node_id = node_id
        self._prefix = log_prefix
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        # What the broker's session holds for each partition, as last sent: its read order too.
        self._session: dict[TopicPartition, PartitionData] = {}
        self._session_view = MappingProxyType(self._session)
        self.full_requests = 0
        self.incremental_requests = 0

    @property
    def needs_full_request(self) -> bool:
        """The next request must name every partition (no session yet, or it was dropped)."""
        return self.epoch == INITIAL_EPOCH

    @property
    def session_partitions(self) -> Mapping[TopicPartition, PartitionData]:
        """What the broker's session holds, as last sent (a live read-only view)."""
        return self._session_view

    def build(self, partitions: dict[TopicPartition, PartitionData]) -> FetchRequestData:
        """The next request for `partitions` (every partition to fetch now, in order)."""
        if self.epoch == INITIAL_EPOCH:
            self._session.clear()
            self._session.update(partitions)
            self.full_requests += 1
            return FetchRequestData(dict(partitions), [], self.session_id, INITIAL_EPOCH)
        changed: dict[TopicPartition, PartitionData | None] = dict.fromkeys(
            [tp for tp in self._session if tp not in partitions]
        )
        changed.update(partitions)
        return self.build_incremental(changed)

    def build_incremental(self, changed: Mapping[TopicPartition, PartitionData | None]) -> FetchRequestData:
        """The next incremental request, from the partitions that may have changed since the last
        one (None: stop fetching it); the rest of the session stays as it is. Only while a
        session is open (not `needs_full_request`)."""
        if self.epoch == INITIAL_EPOCH:
            raise ValueError("a full fetch request is due: build() it from every partition")
        session = self._session
        to_send: dict[TopicPartition, PartitionData] = {}
        to_forget: list[TopicPartition] = []
        for tp, d in changed.items():
            current = session.get(tp)
            if d is None:
                if current is not None:
                    del session[tp]
                    to_forget.append(tp)
            elif d != current:
                session[tp] = d
                to_send[tp] = d
        self.incremental_requests += 1
        return FetchRequestData(to_send, to_forget, self.session_id, self.epoch)

    def handle_response(
        self, request: FetchRequestData, error_code: int, session_id: int, answered: Iterable[TopicPartition]
    ) -> bool:
        """Moves the session on after a response; False if the response is not to be used."""
        if error_code:
            if error_code == FetchSessionIdNotFoundException.code:
                log.info("%sNode %d was unable to process the fetch request with session id %d: %s.",
                         self._prefix, self.node_id, request.session_id, for_code(error_code).name)  # fmt: skip
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                log.info("%sNode %d was unable to process the fetch request with session id %d epoch %d: %s.",
                         self._prefix, self.node_id, request.session_id, request.epoch,
                         for_code(error_code).name)  # fmt: skip
                self.epoch = INITIAL_EPOCH  # close this session and open a new one
            return False
        unknown = [tp for tp in answered if tp not in self._session]
        if unknown:
            log.info("%sNode %d answered partitions not in its fetch session: %s; starting a new session",
                     self._prefix, self.node_id, unknown[:10])  # fmt: skip
            self.epoch = INITIAL_EPOCH
            return False
        if request.is_full:
            if session_id == INVALID_SESSION_ID:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                if session_id != self.session_id:
                    log.debug("%sNode %d sent a full fetch response that created a new incremental fetch "
                              "session %d", self._prefix, self.node_id, session_id)  # fmt: skip
                self.session_id, self.epoch = session_id, 1
            return True
        if session_id == INVALID_SESSION_ID:
            # The broker closed the session (it evicted it, or we forgot every partition).
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        else:
            self.epoch = 1 if self.epoch == _MAX_EPOCH else self.epoch + 1
        return True

    def handle_error(self) -> None:
        """The request failed in transit: its effect on the session is unknown, so start over."""
        self.epoch = INITIAL_EPOCH
