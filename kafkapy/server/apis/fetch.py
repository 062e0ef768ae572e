"""Fetch: the read hot path, with the min_bytes / max_wait long poll.

Reads come back from the log as file regions; the response is encoded as header bytes plus
those regions, and the Processor copies them into its reused send buffer. A fetch that cannot
fill min_bytes waits in the fetch purgatory (no handler is blocked meanwhile) until an append
to one of its partitions satisfies it or max_wait_ms passes.

Fetch sessions (KIP-227, v7+; server/fetch_session.py): a full fetch with epoch 0 opens a
session when the cache has a slot; an incremental fetch answers only the partitions with news.
A consumer's reads every partition of its session; a follower's reads only those that may have
news (server/fetch_session_watch.py: named, not idle at their last read, or marked since), its
idle ones counted as fetched, and parks on the session rather than on each partition.
Sessionless clients (epoch -1, e.g. librdkafka) are served exactly as before.

Metrics: BrokerTopicMetrics' TotalFetchRequestsPerSec counts the partitions a fetch read, as
Kafka counts per partition fetched; a follower's idle partitions are not read, so not counted
(counting them would cost the per-partition walk this avoids).

With an authorizer: a follower (replica id >= 0) needs ClusterAction on the cluster, a consumer
Read on each topic; a refused partition is answered TOPIC_AUTHORIZATION_FAILED (Kafka's answer
to both), decided once per topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol import fetch as fetch_codec
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    FencedLeaderEpochException,
    KafkaStorageException,
    NotLeaderOrFollowerException,
    OffsetOutOfRangeException,
    TopicAuthorizationException,
    UnknownLeaderEpochException,
    UnknownTopicIdException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.fetch import FIRST_TOPIC_ID, Segment
from kafkapy.protocol.generated.fetch_request import FetchRequest
from kafkapy.server.apis.auth_helper import authorize_cluster, filter_authorized
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.fetch_session import (
    INVALID_SESSION_ID,
    FetchContext,
    FetchSession,
    IncrementalContext,
    PartitionKey,
    PartitionRequest,
    PartitionResponse,
    SessionlessContext,
    new_context,
)
from kafkapy.server.network.request_channel import Request
from kafkapy.server.partition import now_ms
from kafkapy.server.purgatory import DelayedOperation
from kafkapy.server.replica_manager import FetchResult
from kafkapy.server.security.acl import Operation, ResourceType

# Kafka's FailedFetchRequestsPerSec leaves these out: a client's stale view, not a broker failure.
_EXPECTED_FETCH_ERRORS = frozenset(
    (
        UnknownTopicOrPartitionException.code,
        NotLeaderOrFollowerException.code,
        OffsetOutOfRangeException.code,
        FencedLeaderEpochException.code,
        UnknownLeaderEpochException.code,
        KafkaStorageException.code,
    )
)


@dataclass(slots=True)
class _Wanted:
    key: PartitionKey  # the session's key: (name, partition) before v13, (topic id, partition) from it
    topic: str | None
    topic_id: uuid.UUID
    partition: int
    offset: int
    max_bytes: int
    current_leader_epoch: int  # -1 before v9 (the codec's default): never fenced
    error_code: int = 0
    log_start_offset: int = -1  # a follower's, from v5: DeleteRecords waits for it


def _replica_id(body: FetchRequest, version: int) -> int:
    if version >= 15:
        return body.replica_state.replica_id
    return body.replica_id


def _fetch_data(body: FetchRequest, version: int) -> dict[PartitionKey, PartitionRequest]:
    """The request's partitions by session key. Keyed as Kafka's fetchData map is: a partition
    named twice is fetched once (the last entry wins, in the first one's place), so repeating one
    partition cannot multiply the response past max_bytes."""
    by_id = version >= FIRST_TOPIC_ID
    with_lso = version >= 5
    data: dict[PartitionKey, PartitionRequest] = {}
    for t in body.topics:
        topic: str | uuid.UUID = t.topic_id if by_id else t.topic
        for p in t.partitions:
            data[(topic, p.partition)] = PartitionRequest(
                p.fetch_offset,
                p.partition_max_bytes,
                p.current_leader_epoch,
                p.log_start_offset if with_lso else -1,
            )
    return data


def _forgotten(body: FetchRequest, version: int) -> list[PartitionKey]:
    by_id = version >= FIRST_TOPIC_ID
    return [(t.topic_id if by_id else t.topic, p) for t in body.forgotten_topics_data for p in t.partitions]


def _context(apis: KafkaApis, body: FetchRequest, version: int, replica_id: int) -> FetchContext:
    fetch_data = _fetch_data(body, version)
    if version < 7:
        return SessionlessContext(fetch_data)
    return new_context(
        apis.fetch_sessions,
        body.session_id,
        body.session_epoch,
        fetch_data,
        _forgotten(body, version),
        privileged=replica_id >= 0,
        uses_topic_ids=version >= FIRST_TOPIC_ID,
    )


def _wanted(apis: KafkaApis, context: FetchContext, version: int) -> list[_Wanted]:
    """The partitions to read, topic names and ids resolved once per topic."""
    cache = apis.metadata_cache
    by_id = version >= FIRST_TOPIC_ID
    resolved: dict[str | uuid.UUID, tuple[str | None, uuid.UUID, int]] = {}
    wanted = []
    for key, req in context.partitions.items():
        topic = key[0]
        names = resolved.get(topic)
        if names is None:
            if by_id:
                assert isinstance(topic, uuid.UUID)
                name = cache.topic_name(topic)
                names = (name, topic, 0 if name is not None else UnknownTopicIdException.code)
            else:
                assert isinstance(topic, str)
                code = 0 if cache.contains_topic(topic) else UnknownTopicOrPartitionException.code
                names = (topic, cache.topic_id(topic), code)
            resolved[topic] = names
        name, topic_id, code = names
        wanted.append(
            _Wanted(
                key, name, topic_id, key[1], req.fetch_offset, req.max_bytes, req.current_leader_epoch,
                code, req.log_start_offset,
            )
        )  # fmt: skip
    return wanted


@handles(ApiKey.FETCH, raw=True)
def handle_fetch(apis: KafkaApis, request: Request) -> list[Segment] | Coroutine[None, None, list[Segment]]:
    header = request.header
    version = header.api_version
    body = fetch_codec.decode_fetch_request(
        version, request.buffer, request.body_offset, apis.max_request_elements
    )
    replica_id = _replica_id(body, version)
    context = _context(apis, body, version, replica_id)
    if context.error_code:
        return fetch_codec.encode_fetch_response(
            version, header.correlation_id, [], error_code=context.error_code
        )
    session = _tracked_session(context)
    if session is not None:
        assert isinstance(context, IncrementalContext)
        wanted = _prepare_tracked(apis, request, context, session, version)
    else:
        wanted = _wanted(apis, context, version)
        if apis.authorizer is not None:
            _authorize(apis, request, wanted, replica_id)
    # Kafka's KafkaApis: min(request's max_bytes (Int.MaxValue before v3), fetch.max.bytes).
    max_bytes = min(body.max_bytes if version >= 3 else 2**31 - 1, apis.config.fetch_max_bytes)
    if replica_id < 0 and apis.client_quotas.fetch.enabled:
        # No more than the quota allows over the window in one response (Kafka's maxQuotaWindowBytes).
        window_bytes = apis.client_quotas.fetch.max_value_in_quota_window(
            apis.quota_user(request), header.client_id or ""
        )
        if window_bytes is not None:
            max_bytes = max(1, min(max_bytes, int(window_bytes)))
    isolation = body.isolation_level if version >= 4 else 0
    if replica_id >= 0 and version >= 5:
        # Followers report their log start offsets: DeleteRecords waits for them.
        apis.replica_manager.update_follower_log_start_offsets(
            replica_id,
            {
                TopicPartition(w.topic, w.partition): w.log_start_offset
                for w in wanted
                if w.topic and not w.error_code
            },
        )
    results = _read(apis, wanted, replica_id, isolation, max_bytes)
    total = sum(r.size for r in results.values())
    errored = any(r.error_code for r in results.values()) or any(w.error_code for w in wanted)
    if body.max_wait_ms <= 0 or total >= body.min_bytes or errored:
        return _respond(apis, request, version, context, wanted, replica_id, results)
    if session is not None:
        assert isinstance(context, IncrementalContext)
        return _delayed_tracked(
            apis, request, version, body, context, session, wanted, replica_id, isolation, max_bytes, results
        )
    if not wanted:
        return _respond(apis, request, version, context, wanted, replica_id, results)
    return _delayed(apis, request, version, body, context, wanted, replica_id, isolation, max_bytes, results)


def _tracked_session(context: FetchContext) -> FetchSession | None:
    """The follower session of an incremental fetch that reads only what may have news."""
    if isinstance(context, IncrementalContext) and context.session.tracked:
        return context.session
    return None


def _prepare_tracked(
    apis: KafkaApis, request: Request, context: IncrementalContext, session: FetchSession, version: int
) -> list[_Wanted]:
    """The partitions a follower's incremental fetch reads; its idle ones count as fetched."""
    if apis.authorizer is not None and not authorize_cluster(apis, request, Operation.CLUSTER_ACTION):
        session.read_all()  # every partition answers TOPIC_AUTHORIZATION_FAILED, as Kafka's would
        context.refresh()
        wanted = _wanted(apis, context, version)
        for w in wanted:
            w.error_code = TopicAuthorizationException.code
        return wanted
    # Idle partitions: the follower fetched again at their log end offsets. Before the read,
    # as Kafka records every partition's fetch when the request arrives.
    session.refresh_idle(now_ms())
    wanted = _wanted(apis, context, version)
    watch, tps = session.watch, session.tps
    assert watch is not None
    for w in wanted:
        if w.topic is not None and not w.error_code and w.key not in tps:
            watch.watch(session, w.key, TopicPartition(w.topic, w.partition))
    session.marked.clear()  # what changes from now on, this read may not have seen
    return wanted


def _authorize(apis: KafkaApis, request: Request, wanted: list[_Wanted], replica_id: int) -> None:
    """Marks the partitions this principal may not fetch (TOPIC_AUTHORIZATION_FAILED)."""
    if replica_id >= 0:
        allowed = authorize_cluster(apis, request, Operation.CLUSTER_ACTION)
        readable: AbstractSet[str | None] = {w.topic for w in wanted} if allowed else set()
    else:
        names = (w.topic for w in wanted if w.topic is not None)
        readable = filter_authorized(apis, request, Operation.READ, ResourceType.TOPIC, names)
    for w in wanted:
        if w.topic not in readable and (w.topic is not None or replica_id >= 0):
            w.error_code = TopicAuthorizationException.code


async def _delayed(
    apis: KafkaApis,
    request: Request,
    version: int,
    body: FetchRequest,
    context: FetchContext,
    wanted: list[_Wanted],
    replica_id: int,
    isolation: int,
    max_bytes: int,
    first_read: dict[TopicPartition, FetchResult],
) -> list[Segment]:
    rm = apis.replica_manager
    # The first read's keys (`_read` answers in `wanted` order), not new TopicPartitions:
    # thousands of them per follower fetch.
    positions = [
        (tp, w.offset, w.current_leader_epoch)
        for tp, w in zip(
            first_read, [w for w in wanted if not w.error_code and w.topic is not None], strict=True
        )
    ]
    keys = [p[0] for p in positions]
    op = DelayedOperation(lambda: _can_complete(apis, positions, replica_id, body.min_bytes, isolation))
    satisfied = await rm.fetch_purgatory.try_complete_else_watch(op, keys, body.max_wait_ms)
    if not satisfied and not op.rechecked and not any(r.records for r in first_read.values()):
        # The long poll ran out and nothing happened to its partitions meanwhile (appends,
        # high watermark moves and leadership changes all check the watchers): the first read
        # still says it all. An idle follower's fetch, covering thousands of partitions, then
        # costs one read of them instead of two.
        return _respond(apis, request, version, context, wanted, replica_id, first_read)
    # The request buffer may have been reused while we waited; `wanted` holds plain values.
    # A follower's position was recorded when the request arrived; reading again is not a fetch.
    results = _read(apis, wanted, replica_id, isolation, max_bytes, update_follower_state=False)
    return _respond(apis, request, version, context, wanted, replica_id, results)


def _can_complete(
    apis: KafkaApis,
    positions: Iterable[tuple[TopicPartition, int, int]],
    replica_id: int,
    min_bytes: int,
    isolation: int,
) -> bool:
    """Whether a parked fetch can be answered: its partitions, at these (offset, leader epoch)
    positions, hold min_bytes, or one of them must be answered now."""
    rm = apis.replica_manager
    available = 0
    for tp, offset, epoch in positions:
        n = rm.fetchable_bytes(tp, offset, replica_id, min_bytes - available, epoch, isolation)
        if n < 0:
            return True  # leadership or its epoch moved, or the offset left the log: answer now
        available += n
        if available >= min_bytes:
            return True
    return False


async def _delayed_tracked(
    apis: KafkaApis,
    request: Request,
    version: int,
    body: FetchRequest,
    context: IncrementalContext,
    session: FetchSession,
    wanted: list[_Wanted],
    replica_id: int,
    isolation: int,
    max_bytes: int,
    first_read: dict[TopicPartition, FetchResult],
) -> list[Segment]:
    """`_delayed` for a follower's session: the wait is on the session (one purgatory key), which
    any change to any of its partitions wakes; only the partitions to read are checked."""
    rm = apis.replica_manager
    parts, tps = session.partitions, session.tps

    def positions() -> Iterator[tuple[TopicPartition, int, int]]:
        for key in session.to_read:
            tp = tps.get(key)
            cached = parts.get(key)
            if tp is None or cached is None:
                continue  # unresolved topics answered their error already; forgotten ones need nothing
            req = cached.request
            yield tp, req.fetch_offset, req.current_leader_epoch

    op = DelayedOperation(lambda: _can_complete(apis, positions(), replica_id, body.min_bytes, isolation))
    satisfied = await rm.fetch_purgatory.try_complete_else_watch(op, [session], body.max_wait_ms)
    if not satisfied and not op.rechecked and not any(r.records for r in first_read.values()):
        return _respond(apis, request, version, context, wanted, replica_id, first_read)
    # Partitions marked meanwhile joined the ones to read; the first read's follower positions stand.
    if context.current:
        session.marked.clear()
        context.refresh()
        wanted = _wanted(apis, context, version)
    results = _read(apis, wanted, replica_id, isolation, max_bytes, update_follower_state=False)
    return _respond(apis, request, version, context, wanted, replica_id, results)


def _settle(
    apis: KafkaApis,
    session: FetchSession,
    wanted: list[_Wanted],
    results: dict[TopicPartition, FetchResult],
    replica_id: int,
) -> None:
    """After a follower's answered read: the partitions it found idle are not read again until
    marked. Idle: no error, no records, the follower at the leader's log end offset and in its
    settled ISR (a follower outside it is read each time, so it can be added back)."""
    partitions = apis.replica_manager.partitions
    tps = session.tps
    for w in wanted:
        if w.error_code:
            continue
        tp = tps.get(w.key)
        if tp is None:
            continue
        r = results.get(tp)
        if r is None or r.error_code or r.size:
            continue
        p = partitions.get(tp)
        if (
            p is None
            or p.log.log_end_offset != w.offset
            or replica_id not in p.isr
            or p.pending_isr is not None
            or not p.is_leader
        ):
            continue
        remote = p.remote_replicas.get(replica_id)
        if remote is not None:
            session.set_idle(w.key, remote)


def _count(
    apis: KafkaApis, wanted: list[_Wanted], replica_id: int, results: dict[TopicPartition, FetchResult]
) -> None:
    """BrokerTopicMetrics of one answered fetch, per partition as Kafka counts them: a consumer's
    bytes are BytesOut of the topic, a follower's are ReplicationBytesOut."""
    topic_stats = apis.replica_manager.topic_stats
    follower = replica_id >= 0
    for w in wanted:
        if w.topic is None or w.error_code:
            continue  # an unknown topic gets no metrics (a client must not grow them at will)
        stats = topic_stats.topics.get(w.topic) or topic_stats.topic(w.topic)
        stats.total_fetch_requests += 1
        r = results.get(TopicPartition(w.topic, w.partition))
        if r is None:
            continue
        if r.error_code and r.error_code not in _EXPECTED_FETCH_ERRORS:
            stats.failed_fetch_requests += 1
        if r.size:
            if follower:
                topic_stats.all.replication_bytes_out += r.size
            else:
                stats.bytes_out += r.size


def _read(
    apis: KafkaApis,
    wanted: list[_Wanted],
    replica_id: int,
    isolation: int,
    max_bytes: int,
    update_follower_state: bool = True,
) -> dict[TopicPartition, FetchResult]:
    ranges = [
        (TopicPartition(w.topic, w.partition), w.offset, w.max_bytes, w.current_leader_epoch)
        for w in wanted
        if not w.error_code and w.topic is not None
    ]
    results: dict[TopicPartition, FetchResult] = apis.replica_manager.read_from_local_log(
        replica_id, isolation, max_bytes, ranges, update_follower_state
    )
    return results


def _respond(
    apis: KafkaApis,
    request: Request,
    version: int,
    context: FetchContext,
    wanted: list[_Wanted],
    replica_id: int,
    results: dict[TopicPartition, FetchResult],
) -> list[Any]:
    """The response, unless the client is over its quota: then (Kafka 2.x, KIP-219) an empty
    response carrying the throttle time, and the bytes it would have had are not counted."""
    _count(apis, wanted, replica_id, results)
    error_code, session_id, answered = _session_view(context, wanted, results)
    if not error_code and (session := _tracked_session(context)) is not None:
        _settle(apis, session, wanted, results, replica_id)
    response = _encode(request, version, answered, error_code, session_id, results)
    if replica_id >= 0:
        return response  # followers are bounded by the replication quotas instead
    quota = apis.client_quotas.fetch
    if not (quota.enabled or request.loop_start_ns or request.loop_ns):
        return response  # no bandwidth or request quota applies: nothing to record
    user, client_id = apis.quota_user(request), request.header.client_id or ""
    size = fetch_codec.total_size(response) if quota.enabled else 0
    bandwidth_ms = quota.record_and_get_throttle_time_ms(user, client_id, size) if size else 0
    throttle_ms = max(bandwidth_ms, apis.request_throttle_time_ms(request))
    if not throttle_ms:
        return response
    apis.throttle(request, throttle_ms)
    if size:
        quota.unrecord(user, client_id, size)
    error_code, session_id = context.throttled()
    return fetch_codec.encode_fetch_response(
        version,
        request.header.correlation_id,
        [],
        throttle_time_ms=throttle_ms,
        error_code=error_code,
        session_id=session_id,
    )


def _session_view(
    context: FetchContext, wanted: list[_Wanted], results: dict[TopicPartition, FetchResult]
) -> tuple[int, int, list[_Wanted]]:
    """(error code, session id, the partitions to answer): all of them outside sessions, the
    changed ones in an incremental fetch."""
    if isinstance(context, SessionlessContext):
        return 0, INVALID_SESSION_ID, wanted  # the common case of librdkafka: nothing to compare
    responses: dict[PartitionKey, PartitionResponse] = {}
    for w in wanted:
        r = (
            results.get(TopicPartition(w.topic, w.partition))
            if w.topic is not None and not w.error_code
            else None
        )
        if r is None:
            responses[w.key] = PartitionResponse(w.error_code, -1, -1, -1, 0)
        else:
            responses[w.key] = PartitionResponse(
                r.error_code, r.high_watermark, r.last_stable_offset, r.log_start_offset, r.size
            )
    error_code, session_id, keys = context.respond(responses)
    if len(keys) == len(wanted):
        return error_code, session_id, wanted
    by_key = {w.key: w for w in wanted}
    return error_code, session_id, [by_key[k] for k in keys]


def _encode(
    request: Request,
    version: int,
    wanted: list[_Wanted],
    error_code: int,
    session_id: int,
    results: dict[TopicPartition, FetchResult],
) -> list[Segment]:
    topics: list[tuple[str, uuid.UUID, list[fetch_codec.FetchPartitionData]]] = []
    for w in wanted:
        if not topics or topics[-1][1] != w.topic_id or topics[-1][0] != (w.topic or ""):
            topics.append((w.topic or "", w.topic_id, []))
        if w.error_code or w.topic is None:
            part = fetch_codec.FetchPartitionData(w.partition, w.error_code)
        else:
            r = results[TopicPartition(w.topic, w.partition)]
            part = fetch_codec.FetchPartitionData(
                w.partition,
                r.error_code,
                r.high_watermark,
                r.last_stable_offset,
                r.log_start_offset,
                r.records,
                r.aborted_transactions,
            )
        topics[-1][2].append(part)
    return fetch_codec.encode_fetch_response(
        version,
        request.header.correlation_id,
        [fetch_codec.FetchTopicData(name, tid, parts) for name, tid, parts in topics],
        error_code=error_code,
        session_id=session_id,
    )
