"""The broker's fetch sessions (KIP-227): session metadata, incremental answers and eviction."""

from __future__ import annotations

import random
import uuid

from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    FetchSessionTopicIdException,
    InvalidFetchSessionEpochException,
)
from kafkapy.server.fetch_session import (
    INVALID_SESSION_ID,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    PartitionKey,
    PartitionRequest,
    PartitionResponse,
    SessionErrorContext,
    SessionlessContext,
    new_context,
    next_epoch,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def cache(slots: int = 10, clock: Clock | None = None) -> FetchSessionCache:
    return FetchSessionCache(slots, 120_000, clock or Clock(), random.Random(7))


def req(offset: int) -> PartitionRequest:
    return PartitionRequest(offset, 1024)


def resp(hw: int, size: int = 0, error: int = 0, log_start: int = 0) -> PartitionResponse:
    return PartitionResponse(error, hw, hw, log_start, size)


A0: PartitionKey = ("a", 0)
A1: PartitionKey = ("a", 1)
B0: PartitionKey = ("b", 0)


def open_session(
    c: FetchSessionCache, parts: dict[PartitionKey, PartitionRequest], follower: bool = True
) -> int:
    ctx = new_context(c, 0, 0, parts, [], follower, False)
    assert isinstance(ctx, FullContext)
    error, session_id, answered = ctx.respond({k: resp(10) for k in parts})
    assert error == 0 and answered == list(parts)
    return session_id


def test_next_epoch_wraps_to_one_and_keeps_final() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


def test_sessionless_full_fetch_opens_no_session() -> None:
    c = cache()
    ctx = new_context(c, 0, -1, {A0: req(0)}, [], False, False)
    assert isinstance(ctx, SessionlessContext)
    assert ctx.respond({A0: resp(5)}) == (0, INVALID_SESSION_ID, [A0])
    assert len(c) == 0


def test_full_fetch_with_epoch_zero_opens_a_session_at_epoch_one() -> None:
    c = cache()
    session_id = open_session(c, {A0: req(0), A1: req(3)})
    assert session_id != INVALID_SESSION_ID
    session = c.get(session_id)
    assert session is not None and session.epoch == 1 and list(session.partitions) == [A0, A1]
    assert c.num_partitions == 2


def test_incremental_fetch_answers_only_changed_partitions() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0), A1: req(0), B0: req(0)})
    ctx = new_context(c, sid, 1, {}, [], True, False)
    assert isinstance(ctx, IncrementalContext)
    assert list(ctx.partitions) == [A0, A1, B0]  # every session partition is read
    # A0: new data; A1: nothing new; B0: high watermark moved.
    error, answer_id, answered = ctx.respond({A0: resp(10, size=100), A1: resp(10), B0: resp(11)})
    assert (error, answer_id, answered) == (0, sid, [A0, B0])
    # The partition that returned data goes to the back of the read order.
    assert list(ctx.partitions) == [A0, A1, B0] and list(c.get(sid).partitions) == [A1, B0, A0]  # type: ignore[union-attr]
    ctx = new_context(c, sid, 2, {}, [], True, False)
    assert ctx.respond({A1: resp(10), B0: resp(11), A0: resp(10)}) == (0, sid, [])


def test_incremental_fetch_updates_offsets_adds_and_forgets_partitions() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0), A1: req(0)})
    ctx = new_context(c, sid, 1, {A0: req(7), B0: req(2)}, [A1], True, False)
    assert ctx.partitions == {A0: req(7), B0: req(2)}
    # A partition new to the session is answered even when nothing changed.
    assert ctx.respond({A0: resp(10), B0: resp(10)}) == (0, sid, [B0])
    assert c.num_partitions == 2


def test_log_start_offset_last_stable_offset_and_errors_are_news() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0)})
    ctx = new_context(c, sid, 1, {}, [], True, False)
    assert ctx.respond({A0: resp(10, log_start=4)})[2] == [A0]
    ctx = new_context(c, sid, 2, {}, [], True, False)
    assert ctx.respond({A0: PartitionResponse(0, 10, 8, 4, 0)})[2] == [A0]
    ctx = new_context(c, sid, 3, {}, [], True, False)
    assert ctx.respond({A0: resp(10, error=6, log_start=4)})[2] == [A0]
    # After an error the partition is sent again even if its fields equal the last ones sent.
    ctx = new_context(c, sid, 4, {}, [], True, False)
    assert ctx.respond({A0: resp(10, log_start=4)})[2] == [A0]
    ctx = new_context(c, sid, 5, {}, [], True, False)
    assert ctx.respond({A0: resp(10, log_start=4)})[2] == []


def test_unknown_session_and_wrong_epoch_are_errors() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0)})
    ctx = new_context(c, sid + 1, 1, {}, [], True, False)
    assert isinstance(ctx, SessionErrorContext)
    assert ctx.respond({}) == (FetchSessionIdNotFoundException.code, 0, [])
    ctx = new_context(c, sid, 2, {}, [], True, False)
    assert ctx.error_code == InvalidFetchSessionEpochException.code
    # The failed request did not move the session on: epoch 1 still works.
    assert isinstance(new_context(c, sid, 1, {}, [], True, False), IncrementalContext)


def test_session_with_topic_ids_refuses_requests_without_them() -> None:
    c = cache()
    tid = uuid.uuid4()
    ctx = new_context(c, 0, 0, {(tid, 0): req(0)}, [], False, True)
    sid = ctx.respond({(tid, 0): resp(1)})[1]
    assert new_context(c, sid, 1, {}, [], False, False).error_code == FetchSessionTopicIdException.code
    assert isinstance(new_context(c, sid, 1, {}, [], False, True), IncrementalContext)


def test_full_fetch_closes_the_session_it_names() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0)})
    ctx = new_context(c, sid, -1, {A0: req(0)}, [], True, False)
    assert isinstance(ctx, SessionlessContext) and c.get(sid) is None and c.num_partitions == 0


def test_forgetting_every_partition_ends_the_session() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0)})
    ctx = new_context(c, sid, 1, {}, [A0], True, False)
    assert isinstance(ctx, SessionlessContext) and c.get(sid) is None


def test_stale_request_in_a_session_is_refused_when_answered() -> None:
    c = cache()
    sid = open_session(c, {A0: req(0)})
    waiting = new_context(c, sid, 1, {}, [], True, False)
    new_context(c, sid, 2, {}, [], True, False)  # the client gave up and sent the next one
    assert waiting.respond({A0: resp(11)}) == (InvalidFetchSessionEpochException.code, 0, [])


def test_full_cache_evicts_a_session_unused_for_the_eviction_time() -> None:
    clock = Clock()
    c = cache(2, clock)
    first = open_session(c, {A0: req(0)}, follower=True)
    clock.now += 1000
    second = open_session(c, {A0: req(0), A1: req(0)}, follower=True)
    clock.now += 119_500  # first unused for 120.5 s, second for 119.5 s
    third = open_session(c, {B0: req(0)}, follower=False)
    assert third != 0 and c.get(first) is None and c.get(second) is not None and c.evictions == 1


def test_follower_takes_a_consumer_slot_but_not_the_reverse() -> None:
    clock = Clock()
    c = cache(2, clock)
    consumer = open_session(c, {A0: req(0), A1: req(0)}, follower=False)
    follower = open_session(c, {A0: req(0)}, follower=True)
    clock.now += 10_000
    # A consumer cannot take a young session's place: it goes sessionless.
    assert open_session(c, {B0: req(0)}, follower=False) == INVALID_SESSION_ID
    # A follower takes the consumer's, however large.
    newcomer = open_session(c, {B0: req(0)}, follower=True)
    assert newcomer != 0 and c.get(consumer) is None and c.get(follower) is not None


def test_old_sessions_go_smallest_first_and_only_for_a_larger_newcomer() -> None:
    clock = Clock()
    c = cache(2, clock)
    small = open_session(c, {A0: req(0)}, follower=False)
    big = open_session(c, {A0: req(0), A1: req(0), B0: req(0)}, follower=False)
    clock.now += 121_000
    for sid in (small, big):  # both used just now, both older than the eviction time
        s = c.get(sid)
        assert s is not None
        c.touch(s, clock.now)
    # Equal size does not evict; one more partition evicts the smallest.
    assert open_session(c, {A0: req(0)}, follower=False) == INVALID_SESSION_ID
    assert open_session(c, {A0: req(0), A1: req(0)}, follower=False) != 0
    assert c.get(small) is None and c.get(big) is not None


def test_zero_slots_means_no_sessions() -> None:
    c = cache(0)
    assert open_session(c, {A0: req(0)}) == INVALID_SESSION_ID
