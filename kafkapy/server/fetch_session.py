"""Fetch sessions (KIP-227): the broker's FetchSessionCache and the context of one Fetch request.

A client opens a session with a full fetch (session id 0, epoch 0); the broker answers with a
session id and remembers each partition's request (offset, max bytes, leader epoch, the
follower's log start offset) and what it last told the client (high watermark, last stable
offset, log start offset). From then on the client sends incremental fetches (that id, epoch
1, 2, ...) naming only the partitions whose request changed, plus the ones to forget; the
broker answers only the partitions with something new: records, a changed high watermark, last
stable offset or log start offset, or an error. A follower of thousands of quiet partitions
thus sends and receives a few bytes per fetch. A consumer's session reads every partition to
find them; a follower's (`tracked`) reads only those named, those not idle at their last read
and those marked since by server/fetch_session_watch.py, so a quiet follower costs the leader
next to nothing per fetch either.

Request metadata, as Kafka's FetchMetadata reads it:

    session id 0,  epoch -1   sessionless full fetch (librdkafka, old clients): no session
    session id 0,  epoch 0    full fetch that asks for a new session
    session id N,  epoch -1   full fetch that closes session N and opens none
    session id N,  epoch 0    full fetch that closes session N and asks for a new one
    session id N,  epoch E>0  incremental fetch in session N; E must be the session's epoch

Errors: an unknown id is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH,
and a session used with topic ids by a request without them (or the reverse, Fetch v13 being
the first with topic ids) FETCH_SESSION_TOPIC_ID_ERROR.

The cache holds at most `max.incremental.fetch.session.cache.slots` sessions. When full, a new
session takes the place of one that has not been used for `eviction_ms` (120 s, Kafka's
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS); failing that, of the least valuable evictable one
if the newcomer is worth at least as much: followers (privileged) before consumers, then more
partitions before fewer. A consumer's session can be taken by a follower at once, anyone's by
anyone once it is `eviction_ms` old; otherwise the newcomer goes sessionless (id 0).

Everything here runs on the broker's event loop: no locks.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    FetchSessionTopicIdException,
    InvalidFetchSessionEpochException,
)

if TYPE_CHECKING:
    from kafkapy.server.fetch_session_watch import FetchSessionWatch
    from kafkapy.server.partition import RemoteReplica

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
# Kafka's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
EVICTION_MS: Final = 120_000
_MAX_EPOCH: Final = 2**31 - 1

# A session's partitions are keyed by (topic name, partition) before Fetch v13 and by
# (topic id, partition) from v13.
PartitionKey = tuple[str | uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: wraps to 1 (0 means a new session), and FINAL stays FINAL."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class PartitionRequest:
    """One partition of a Fetch request, as a session remembers it between requests."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # a follower's own log start offset (v5+)


@dataclass(slots=True)
class PartitionResponse:
    """What the response would say of one partition: the fields a session compares."""

    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records_size: int


class CachedPartition:
    """A partition of a session: its latest request, and the response fields last sent for it."""

    __slots__ = ("request", "high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(self, request: PartitionRequest) -> None:
        self.request = request
        # -1 is never a valid answer: a partition new to the session is always sent once.
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1

    def must_respond(self, resp: PartitionResponse, update: bool) -> bool:
        """Whether the client must hear of this partition; `update` records what it was told."""
        changed = (
            resp.records_size > 0
            or resp.error_code != 0
            or resp.high_watermark != self.high_watermark
            or resp.last_stable_offset != self.last_stable_offset
            or resp.log_start_offset != self.log_start_offset
        )
        if update:
            # After an error the partition is sent again once the error clears (-1 never matches).
            self.high_watermark = -1 if resp.error_code else resp.high_watermark
            self.last_stable_offset = resp.last_stable_offset
            self.log_start_offset = resp.log_start_offset
        return changed


class FetchSession:
    __slots__ = (
        "id",
        "privileged",
        "uses_topic_ids",
        "partitions",
        "creation_ms",
        "last_used_ms",
        "epoch",
        "cached_size",
        "watch",
        "to_read",
        "idle",
        "tps",
        "marked",
    )

    def __init__(
        self,
        session_id: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
        now_ms: int,
        watch: FetchSessionWatch | None = None,
    ) -> None:
        self.id = session_id
        self.privileged = privileged  # a follower's session
        self.uses_topic_ids = uses_topic_ids
        # Insertion order is the read order; a partition that returned data moves to the end,
        # so every partition of a large session gets to be first (and fill the response) in turn.
        self.partitions = partitions
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1  # the size the cache last accounted for
        # A follower's session reads only what may have news (server/fetch_session_watch.py);
        # a consumer's (watch None) reads all its partitions each time.
        self.watch = watch if privileged else None
        # The partitions the next fetch reads, in read order: all of them until a read finds
        # them idle. A partition that returned data moves to the back, as in `partitions`.
        self.to_read: dict[PartitionKey, None] = dict.fromkeys(partitions)
        # Idle partitions: their follower's replica state, refreshed by each fetch unread.
        self.idle: dict[PartitionKey, RemoteReplica] = {}
        self.tps: dict[PartitionKey, TopicPartition] = {}  # the watched ones (`watch`)
        self.marked: set[PartitionKey] = set()  # marked since the current read began

    def __repr__(self) -> str:
        return (
            f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
            f"epoch={self.epoch})"
        )

    @property
    def tracked(self) -> bool:
        return self.watch is not None

    def mark(self, key: PartitionKey) -> None:
        """Something a fetch of `key` would answer may have changed: the next fetch reads it."""
        if key in self.partitions:
            self.idle.pop(key, None)
            self.to_read[key] = None
            self.marked.add(key)

    def read_all(self) -> None:
        for key in self.idle:
            self.to_read[key] = None
        self.idle.clear()

    def set_idle(self, key: PartitionKey, replica: RemoteReplica) -> None:
        """A read found `key` idle: it is not read again until marked or named."""
        if key in self.partitions and key not in self.marked:
            self.to_read.pop(key, None)
            self.idle[key] = replica

    def refresh_idle(self, fetch_ms: int) -> None:
        """The follower fetched again at its idle partitions' log end offsets: Kafka's
        Replica.updateFetchState with fetch offset = leader end offset = the previous fetch's,
        i.e. caught up now. Without this a partition idle longer than replica.lag.time.max.ms
        would drop its follower from the ISR right after its next append."""
        for replica in self.idle.values():
            if fetch_ms > replica.last_caught_up_ms:
                replica.last_caught_up_ms = fetch_ms
            replica.last_fetch_ms = fetch_ms

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey order: consumers before followers, then smaller before larger."""
        return (self.privileged, len(self.partitions), self.id)

    def update(
        self, fetch_data: dict[PartitionKey, PartitionRequest], to_forget: Iterable[PartitionKey]
    ) -> tuple[int, int, int]:
        """Applies an incremental request: returns how many partitions were added, updated, removed."""
        added = updated = removed = 0
        to_read, idle = self.to_read, self.idle
        for key, req in fetch_data.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(req)
                added += 1
            else:
                cached.request = req
                updated += 1
            if idle:
                idle.pop(key, None)
            to_read[key] = None
        for key in to_forget:
            if self.partitions.pop(key, None) is not None:
                removed += 1
                to_read.pop(key, None)
                idle.pop(key, None)
                if self.watch is not None:
                    self.watch.unwatch(self, key)
        return added, updated, removed


class FetchSessionCache:
    """The broker's sessions, bounded by count; see the module docstring for eviction."""

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int = EVICTION_MS,
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
        rng: random.Random | None = None,
        watch: FetchSessionWatch | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.watch = watch  # followers' sessions read only what changed (None: read all)
        self.eviction_ms = eviction_ms
        self.clock_ms = clock_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        self.num_partitions = 0  # NumIncrementalFetchPartitionsCached
        self.evictions = 0  # IncrementalFetchSessionEvictionsPerSec, as a count

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[FetchSession]:
        return iter(self._sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None and session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        if session is not None and session.watch is not None:
            session.watch.unwatch_session(session)
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Marks `session` used now and accounts for its current size."""
        session.last_used_ms = now_ms
        if session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.num_partitions += session.cached_size

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: Callable[[], dict[PartitionKey, CachedPartition]],
        size: int,
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache has no slot for it."""
        if self.max_entries <= 0:
            return INVALID_SESSION_ID
        if len(self._sessions) >= self.max_entries and not self._try_evict(privileged, size, now_ms):
            return INVALID_SESSION_ID
        session_id = self._new_session_id()
        session = FetchSession(session_id, privileged, uses_topic_ids, partitions(), now_ms, self.watch)
        self._sessions[session_id] = session
        self.touch(session, now_ms)
        return session_id

    def _new_session_id(self) -> int:
        while True:
            candidate = self._rng.randint(1, _MAX_EPOCH)
            if candidate not in self._sessions:
                return candidate

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Frees one slot for a new session of `size` partitions, if Kafka's rules allow it."""
        # A linear scan: the cache is small (1000 by default) and full caches are rare events.
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            self._evict(stalest)
            return True
        # Old enough sessions are evictable by all; a consumer's by a follower at any age.
        candidates = [
            s
            for s in self._sessions.values()
            if now_ms - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        # The newcomer's key has id 0: an equal-sized peer keeps its place.
        if (privileged, size, 0) < victim.evictable_key():
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1


# -- the context of one request ------------------------------------------------------------------


class FetchContext:
    """How one Fetch request relates to sessions: which partitions to read and which to answer.

    `partitions` is what to read, in order; `respond` picks what goes into the response (updating
    the session) and says which session id and error the response carries."""

    session_id: int = INVALID_SESSION_ID
    error_code: int = 0

    def __init__(self, partitions: dict[PartitionKey, PartitionRequest]) -> None:
        self.partitions = partitions

    def respond(
        self, responses: dict[PartitionKey, PartitionResponse]
    ) -> tuple[int, int, list[PartitionKey]]:
        """(error code, session id, the partitions to put in the response, in order)."""
        return self.error_code, self.session_id, list(responses)

    def throttled(self) -> tuple[int, int]:
        """(error code, session id) of the empty response sent to a throttled client."""
        return 0, INVALID_SESSION_ID


class SessionlessContext(FetchContext):
    """A full fetch outside any session (epoch -1, or no slot left in the cache)."""


class SessionErrorContext(FetchContext):
    """A request naming a session we cannot serve: nothing is read, the error is the answer."""

    def __init__(self, error_code: int) -> None:
        super().__init__({})
        self.error_code = error_code

    def respond(
        self, responses: dict[PartitionKey, PartitionResponse]
    ) -> tuple[int, int, list[PartitionKey]]:
        return self.error_code, INVALID_SESSION_ID, []

    def throttled(self) -> tuple[int, int]:
        return self.error_code, INVALID_SESSION_ID


class FullContext(FetchContext):
    """A full fetch that asks for a session: created once the partitions were read."""

    def __init__(
        self,
        cache: FetchSessionCache,
        partitions: dict[PartitionKey, PartitionRequest],
        privileged: bool,
        uses_topic_ids: bool,
    ) -> None:
        super().__init__(partitions)
        self._cache = cache
        self._privileged = privileged
        self._uses_topic_ids = uses_topic_ids

    def respond(
        self, responses: dict[PartitionKey, PartitionResponse]
    ) -> tuple[int, int, list[PartitionKey]]:
        def cached() -> dict[PartitionKey, CachedPartition]:
            out = {}
            for key, req in self.partitions.items():
                part = out[key] = CachedPartition(req)
                resp = responses.get(key)
                if resp is not None:
                    part.must_respond(resp, update=True)
            return out

        if not self.partitions:
            return 0, INVALID_SESSION_ID, []  # nothing to keep a session for
        session_id = self._cache.maybe_create_session(
            self._cache.clock_ms(), self._privileged, self._uses_topic_ids, cached, len(self.partitions)
        )
        return 0, session_id, list(responses)


class IncrementalContext(FetchContext):
    """An incremental fetch in a live session: reads its partitions (a follower's: only those
    that may have news), answers the changed ones."""

    def __init__(self, session: FetchSession) -> None:
        super().__init__({})
        self.session = session
        self.session_id = session.id
        self._expected_epoch = session.epoch
        self.refresh()

    def refresh(self) -> None:
        """`partitions` as the session wants them read now."""
        parts = self.session.partitions
        keys = self.session.to_read if self.session.tracked else parts
        self.partitions = {key: parts[key].request for key in keys}

    @property
    def current(self) -> bool:
        """Whether no later request of the session came in meanwhile."""
        return self.session.epoch == self._expected_epoch

    def respond(
        self, responses: dict[PartitionKey, PartitionResponse]
    ) -> tuple[int, int, list[PartitionKey]]:
        session = self.session
        if session.epoch != self._expected_epoch:
            # Another request in this session came in while this one waited: it is stale.
            return InvalidFetchSessionEpochException.code, INVALID_SESSION_ID, []
        selected: list[PartitionKey] = []
        with_data: list[PartitionKey] = []
        for key, resp in responses.items():
            cached = session.partitions.get(key)
            if cached is None:
                continue  # forgotten by a later request meanwhile
            if cached.must_respond(resp, update=True):
                selected.append(key)
                if resp.records_size:
                    with_data.append(key)
        to_read = session.to_read
        for key in with_data:  # to the back of the read order: the others go first next time
            session.partitions[key] = session.partitions.pop(key)
            if key in to_read:
                to_read[key] = to_read.pop(key)
        return 0, session.id, selected

    def throttled(self) -> tuple[int, int]:
        return 0, self.session.id


def new_context(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    fetch_data: dict[PartitionKey, PartitionRequest],
    to_forget: list[PartitionKey],
    privileged: bool,
    uses_topic_ids: bool,
) -> FetchContext:
    """Kafka's FetchManager.newContext: the context of a request with this metadata."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)  # a full fetch closes the session it names
        if epoch == FINAL_EPOCH:
            return SessionlessContext(fetch_data)
        return FullContext(cache, fetch_data, privileged, uses_topic_ids)
    session = cache.get(session_id)
    if session is None:
        return SessionErrorContext(FetchSessionIdNotFoundException.code)
    if session.epoch != epoch:
        return SessionErrorContext(InvalidFetchSessionEpochException.code)
    if session.uses_topic_ids != uses_topic_ids:
        return SessionErrorContext(FetchSessionTopicIdException.code)
    session.update(fetch_data, to_forget)
    if not session.partitions:
        cache.remove(session.id)
        return SessionlessContext(fetch_data)
    cache.touch(session, cache.clock_ms())
    session.epoch = next_epoch(session.epoch)
    return IncrementalContext(session)
