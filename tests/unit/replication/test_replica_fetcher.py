"""The follower side: fetcher threads against a scripted leader, over real Logs."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from replication_helpers import TP, batch

from kafkapy.client.connection import ConnectionClosedError
from kafkapy.common.java_hash import java_string_hash
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    FetchSessionIdNotFoundException,
    InvalidFetchSessionEpochException,
    NotLeaderOrFollowerException,
    OffsetOutOfRangeException,
    UnsupportedVersionException,
)
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.follower_rules import follower_high_watermark, follower_records, out_of_range_action
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.replica_fetcher_manager import ReplicaFetcherManager, fetcher_id
from kafkapy.server.replica_fetcher_thread import (
    BrokerEndPoint,
    FetcherConfig,
    InitialFetchState,
    ReplicaFetcherThread,
)

LEADER = BrokerEndPoint(0, "127.0.0.1", 9092)
CONFIG = FetcherConfig(
    max_wait_ms=500, min_bytes=1, response_max_bytes=4096, partition_max_bytes=1024, backoff_ms=50
)


class FakeConnection:
    """A leader that answers each Fetch with what `respond(request)` returns (or raises), and
    each OffsetsForLeaderEpoch with `respond_epochs(request)`: by default, every epoch asked
    about ends at `leader_end_offset`."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str = "",
        timeout: float = 30.0,
        reuse_response_buffer: bool = False,
        receive_buffer_bytes: int = -1,
    ) -> None:
        self.client_id = client_id
        self.receive_buffer_bytes = receive_buffer_bytes
        self.connected = False
        self.requests: list[dict[str, Any]] = []
        self.epoch_requests: list[dict[str, Any]] = []
        self.respond: Any = lambda request: response()
        self.leader_end_offset = 1 << 40
        self.respond_epochs: Any = lambda request: epoch_response(
            *(
                epoch_part(p["leader_epoch"], self.leader_end_offset)
                for p in request["topics"][0]["partitions"]
            )
        )
        self.closed = 0

    def api_versions(self) -> dict[int, tuple[int, int]]:
        self.connected = True
        return {1: (4, 16)}

    def pick_version(self, api_key: int, ours: tuple[int, int]) -> int:
        return min(ours[1], 16)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            assert version == 4
            self.epoch_requests.append(body)
            return self.respond_epochs(body)
        assert api_key == 1 and version == 12
        self.requests.append(body)
        return self.respond(body)

    def close(self) -> None:
        self.connected = False
        self.closed += 1

    def initiate_close(self) -> None:
        self.connected = False


def response(*parts: Any, error_code: int = 0, session_id: int = 0) -> Any:
    return SimpleNamespace(
        error_code=error_code,
        session_id=session_id,
        responses=[SimpleNamespace(topic=TP.topic, partitions=list(parts))],
    )


def epoch_response(*parts: Any) -> Any:
    return SimpleNamespace(topics=[SimpleNamespace(topic=TP.topic, partitions=list(parts))])


def epoch_part(leader_epoch: int, end_offset: int, error_code: int = 0) -> Any:
    return SimpleNamespace(
        partition=0, error_code=error_code, leader_epoch=leader_epoch, end_offset=end_offset
    )


def part(records: Any = None, error_code: int = 0, hw: int = -1, log_start: int = 0, index: int = 0) -> Any:
    return SimpleNamespace(
        partition_index=index,
        error_code=error_code,
        high_watermark=hw,
        log_start_offset=log_start,
        records=records,
    )


@pytest.fixture
def follower_log(tmp_path: Path) -> Log:
    the_log = Log(str(tmp_path / "t-0"), LogConfig())
    yield the_log
    the_log.close()


def fetcher_for(the_log: Log, epoch: int = 3) -> tuple[ReplicaFetcherThread, FakeConnection]:
    thread = ReplicaFetcherThread(1, 0, LEADER, CONFIG, connect=FakeConnection)
    thread.add_partitions({TP: InitialFetchState(LEADER, epoch, the_log)})
    return thread, thread._conn


def only_partition(request: dict[str, Any]) -> dict[str, Any]:
    return request["topics"][0]["partitions"][0]


# -- pure pieces ------------------------------------------------------------------------------


def test_the_fetcher_connects_with_replica_socket_receive_buffer_bytes() -> None:
    """replica.socket.receive.buffer.bytes reaches the leader connection (Kafka's default 64 KiB;
    it used to be accepted and ignored)."""
    config = FetcherConfig.from_config(
        SimpleNamespace(
            replica_fetch_wait_max_ms=500,
            replica_fetch_min_bytes=1,
            replica_fetch_response_max_bytes=1 << 20,
            replica_fetch_max_bytes=1 << 20,
            replica_fetch_backoff_ms=100,
            replica_socket_timeout_ms=30_000,
            replica_socket_receive_buffer_bytes=32768,
        )  # fmt: skip
    )
    thread = ReplicaFetcherThread(1, 0, LEADER, config, connect=FakeConnection)
    assert thread._conn.receive_buffer_bytes == 32768
    assert FetcherConfig().socket_receive_buffer_bytes == 65536


def test_follower_records_drops_a_trailing_partial_batch() -> None:
    data = bytes(batch(2, base_offset=5)) + bytes(batch(1, base_offset=7))
    cut = data[: len(data) - 3]
    view = follower_records(cut, 5)
    assert view is not None and bytes(view) == bytes(batch(2, base_offset=5))


def test_follower_records_skips_batches_before_the_fetch_offset() -> None:
    first, second = bytes(batch(2, base_offset=5)), bytes(batch(1, base_offset=7))
    view = follower_records(first + second, 7)
    assert view is not None and bytes(view) == second
    assert follower_records(first, 7) is None
    assert follower_records(b"", 0) is None and follower_records(None, 0) is None


def test_out_of_range_below_leader_start_starts_over_at_it() -> None:
    assert out_of_range_action(3, 10, 50) == ("truncate_fully", 10)


def test_out_of_range_above_leader_truncates_to_leader_high_watermark() -> None:
    assert out_of_range_action(60, 10, 50) == ("truncate", 50)


def test_out_of_range_without_usable_offsets_retries_later() -> None:
    assert out_of_range_action(20, 10, 50) is None
    assert out_of_range_action(20, -1, -1) is None


def test_follower_high_watermark_is_bounded_by_its_own_log() -> None:
    assert follower_high_watermark(100, 40) == 40
    assert follower_high_watermark(30, 40) == 30


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("test") == 3556498
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE


def test_fetcher_id_spreads_partitions_like_kafka() -> None:
    assert fetcher_id(TopicPartition("test", 0), 1) == 0
    assert fetcher_id(TopicPartition("test", 0), 4) == (31 * 3556498) % 4
    assert {fetcher_id(TopicPartition("test", p), 3) for p in range(6)} == {0, 1, 2}


# -- the thread -------------------------------------------------------------------------------


def test_new_follower_truncates_to_its_high_watermark_then_fetches_from_there(follower_log: Log) -> None:
    for offset in range(3):  # a log written before leader epochs: its batches carry none
        follower_log.append_as_follower(batch(1, base_offset=offset))
    follower_log.high_watermark = 1
    thread, conn = fetcher_for(follower_log)
    thread.do_work()
    assert follower_log.log_end_offset == 1 and conn.epoch_requests == []
    req = conn.requests[0]
    assert req["replica_id"] == 1 and req["max_wait_ms"] == 500 and req["min_bytes"] == 1
    assert req["max_bytes"] == 4096 and req["session_id"] == 0 and req["session_epoch"] == 0
    p = only_partition(req)
    assert p["fetch_offset"] == 1 and p["partition_max_bytes"] == 1024 and p["current_leader_epoch"] == 3


def test_fetched_batches_are_appended_with_the_leaders_offsets(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)
    data = bytes(batch(2, base_offset=0)) + bytes(batch(3, base_offset=2))
    conn.respond = lambda request: response(part(data + data[:10], hw=4, log_start=0))
    thread.do_work()
    assert follower_log.log_end_offset == 5
    assert follower_log.high_watermark == 4
    conn.respond = lambda request: response(part(None, hw=9))
    thread.do_work()
    assert only_partition(conn.requests[-1])["fetch_offset"] == 5
    assert follower_log.high_watermark == 5  # min(leader HW, our log end offset)


def test_offset_below_leader_log_start_starts_the_log_over(follower_log: Log) -> None:
    follower_log.append_as_leader(batch(2))
    follower_log.high_watermark = 2
    thread, conn = fetcher_for(follower_log)
    conn.respond = lambda request: response(
        part(error_code=OffsetOutOfRangeException.code, hw=90, log_start=40)
    )
    thread.do_work()  # epoch 0 ends past our log: nothing to cut
    thread.do_work()
    assert follower_log.log_start_offset == 40 and follower_log.log_end_offset == 40
    conn.respond = lambda request: response(part(bytes(batch(1, base_offset=40)), hw=41, log_start=40))
    thread.do_work()
    assert only_partition(conn.requests[-1])["fetch_offset"] == 40
    assert follower_log.log_end_offset == 41


def test_offset_past_leader_end_truncates_again_by_epoch(follower_log: Log) -> None:
    for _ in range(5):
        follower_log.append_as_leader(batch(1))
    follower_log.high_watermark = 2
    thread, conn = fetcher_for(follower_log)
    thread.do_work()  # the leader still says epoch 0 goes on past our end
    conn.respond = lambda request: response(
        part(error_code=OffsetOutOfRangeException.code, hw=2, log_start=0)
    )
    thread.do_work()
    assert follower_log.log_end_offset == 5  # nothing cut on the fetch answer alone
    conn.leader_end_offset = 4  # an unclean election: the leader's epoch 0 ends at 4
    thread.do_work()
    assert len(conn.epoch_requests) == 2 and follower_log.log_end_offset == 4
    conn.respond = lambda request: response()
    thread.do_work()
    assert only_partition(conn.requests[-1])["fetch_offset"] == 4


def test_offset_past_leader_end_of_an_epochless_log_truncates_to_leader_high_watermark(
    follower_log: Log,
) -> None:
    follower_log.append_as_follower(batch(5))
    follower_log.high_watermark = 5
    thread, conn = fetcher_for(follower_log)
    conn.respond = lambda request: response(
        part(error_code=OffsetOutOfRangeException.code, hw=3, log_start=0)
    )
    thread.do_work()
    assert follower_log.log_end_offset == 3
    thread.do_work()
    assert only_partition(conn.requests[-1])["fetch_offset"] == 3


# -- truncation by leader epoch (KIP-101, KIP-279) ----------------------------------------------


def epoch_batches(follower_log: Log, *runs: tuple[int, int]) -> None:
    """Append `count` one-record batches in `epoch` for each (epoch, count), as a follower."""
    for epoch, count in runs:
        for _ in range(count):
            offset = follower_log.log_end_offset
            follower_log.append_as_follower(
                build_batch([(b"k", b"v", [], 1_000)], base_offset=offset, partition_leader_epoch=epoch)
            )


def test_follower_keeps_records_past_its_high_watermark_that_the_leader_has(follower_log: Log) -> None:
    """KIP-101: the high watermark is no cut-off point; the leader's end of our epoch is."""
    epoch_batches(follower_log, (0, 5))
    follower_log.high_watermark = 2
    thread, conn = fetcher_for(follower_log, epoch=3)
    conn.leader_end_offset = 4
    thread.do_work()
    assert conn.epoch_requests == [
        {"replica_id": 1, "topics": [{"topic": TP.topic, "partitions": [
            {"partition": 0, "current_leader_epoch": 3, "leader_epoch": 0}]}]}
    ]  # fmt: skip
    assert follower_log.log_end_offset == 4 and conn.requests == []
    thread.do_work()
    assert only_partition(conn.requests[0])["fetch_offset"] == 4


def test_follower_walks_back_epochs_the_leader_never_had(follower_log: Log) -> None:
    """KIP-279: our epochs 1 (0-9) and 3 (10-14); the leader had 1 (0-7), 2 (8-11), 4 (12-)."""
    epoch_batches(follower_log, (1, 10), (3, 5))
    leader = {3: epoch_part(2, 12), 1: epoch_part(1, 8)}
    thread, conn = fetcher_for(follower_log, epoch=4)
    conn.respond_epochs = lambda request: epoch_response(leader[only_partition(request)["leader_epoch"]])
    thread.do_work()  # epoch 3 is unknown to the leader: cut to where our epoch 1 ends, ask again
    assert follower_log.log_end_offset == 10 and follower_log.latest_epoch == 1
    thread.do_work()
    assert [only_partition(r)["leader_epoch"] for r in conn.epoch_requests] == [3, 1]
    assert follower_log.log_end_offset == 8 and conn.requests == []
    thread.do_work()
    assert only_partition(conn.requests[0])["fetch_offset"] == 8


def test_a_fenced_epoch_request_backs_off_and_cuts_nothing(follower_log: Log) -> None:
    epoch_batches(follower_log, (2, 3))
    thread, conn = fetcher_for(follower_log)
    conn.respond_epochs = lambda request: epoch_response(
        epoch_part(-1, -1, error_code=74)
    )  # FENCED_LEADER_EPOCH
    thread.do_work()
    state = thread.fetch_state(TP)
    assert state is not None and state.truncating and state.delayed_until > 0
    assert follower_log.log_end_offset == 3 and conn.requests == []


def test_a_leader_without_offsets_for_leader_epoch_means_the_high_watermark(follower_log: Log) -> None:
    epoch_batches(follower_log, (2, 3))
    follower_log.high_watermark = 1
    thread, conn = fetcher_for(follower_log)

    def unsupported(api_key: int, ours: tuple[int, int]) -> int:
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            raise UnsupportedVersionException("no OffsetsForLeaderEpoch")
        return min(ours[1], 16)

    conn.pick_version = unsupported  # type: ignore[method-assign]
    thread.do_work()
    assert follower_log.log_end_offset == 1


def test_not_leader_backs_off_the_partition(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)
    conn.respond = lambda request: response(part(error_code=NotLeaderOrFollowerException.code))
    thread.do_work()
    state = thread.fetch_state(TP)
    assert state is not None and state.delayed_until > 0
    request, _ = thread._build_request()
    assert request is None  # nothing to fetch until the backoff passes
    thread.do_work()  # waits out the backoff (50 ms) instead of fetching
    assert len(conn.requests) == 1
    thread.do_work()
    assert len(conn.requests) == 2


def test_connection_error_closes_the_connection_and_backs_off(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)

    def fail(request: Any) -> Any:
        raise ConnectionClosedError("leader went away")

    conn.respond = fail
    thread.do_work()
    assert conn.closed == 1
    state = thread.fetch_state(TP)
    assert state is not None and state.delayed_until > 0


def test_response_for_a_partition_removed_meanwhile_is_dropped(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)

    def remove_then_answer(request: Any) -> Any:
        thread.remove_partitions([TP])
        return response(part(bytes(batch(1)), hw=1))

    conn.respond = remove_then_answer
    thread.do_work()
    assert follower_log.log_end_offset == 0
    assert thread.partition_count() == 0


def test_thread_replicates_until_shut_down(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)
    pending = [bytes(batch(1, base_offset=i)) for i in range(3)]

    def serve(request: Any) -> Any:
        offset = only_partition(request)["fetch_offset"]
        return response(part(pending[offset] if offset < len(pending) else None, hw=offset))

    conn.respond = serve
    thread.start()

    deadline = time.monotonic() + 5
    while follower_log.log_end_offset < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.shutdown()
    assert not thread.is_alive()
    assert follower_log.log_end_offset == 3 and conn.closed >= 1


# -- the manager ------------------------------------------------------------------------------


class FakeThread:
    def __init__(
        self, broker_id: int, fetcher_id: int, leader: BrokerEndPoint, config: FetcherConfig
    ) -> None:
        self.fetcher_id, self.leader = fetcher_id, leader
        self.parts: dict[TopicPartition, Any] = {}
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True

    def is_alive(self) -> bool:
        return self.started and not self.stopped

    def add_partitions(self, states: dict[TopicPartition, InitialFetchState]) -> None:
        self.parts.update(states)

    def remove_partitions(self, tps: Any) -> dict[TopicPartition, Any]:
        return {tp: self.parts.pop(tp) for tp in list(tps) if tp in self.parts}

    def partitions(self) -> list[TopicPartition]:
        return list(self.parts)

    def partition_count(self) -> int:
        return len(self.parts)

    def fetch_state(self, tp: TopicPartition) -> Any:
        return self.parts.get(tp)

    def initiate_shutdown(self) -> None:
        self.stopped = True

    def shutdown(self) -> None:
        self.stopped = True


def test_manager_runs_num_replica_fetchers_per_leader() -> None:
    m = ReplicaFetcherManager(1, CONFIG, num_fetchers=2, thread_factory=FakeThread)
    other = BrokerEndPoint(2, "127.0.0.1", 9093)
    states = {TopicPartition("test", p): InitialFetchState(LEADER, 1, None) for p in range(4)}
    states[TopicPartition("x", 0)] = InitialFetchState(other, 1, None)
    m.add_fetcher_for_partitions(states)
    assert m.fetcher_count() == 3  # two for broker 0, one for broker 2
    m.remove_fetcher_for_partitions(list(states))
    m.shutdown_idle_fetcher_threads()
    assert m.fetcher_count() == 0


def test_manager_moves_partitions_when_a_leader_changes_address() -> None:
    m = ReplicaFetcherManager(1, CONFIG, thread_factory=FakeThread)
    m.add_fetcher_for_partitions({TopicPartition("a", 0): InitialFetchState(LEADER, 1, None)})
    moved = BrokerEndPoint(0, "127.0.0.1", 9999)
    m.add_fetcher_for_partitions({TopicPartition("b", 0): InitialFetchState(moved, 1, None)})
    state = m.fetch_state(TopicPartition("a", 0))
    assert state is not None and state.leader == moved
    assert m.fetcher_count() == 1


# -- fetch sessions (KIP-227) -----------------------------------------------------------------


def test_follower_opens_a_session_then_sends_only_changed_partitions(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)
    conn.respond = lambda request: response(part(bytes(batch(2, base_offset=0)), hw=0), session_id=77)
    thread.do_work()
    first = conn.requests[0]
    assert (first["session_id"], first["session_epoch"]) == (0, 0) and only_partition(first)[
        "fetch_offset"
    ] == 0
    # The offset moved: the partition is in the incremental request.
    conn.respond = lambda request: response(session_id=77)
    thread.do_work()
    second = conn.requests[1]
    assert (second["session_id"], second["session_epoch"]) == (77, 1)
    assert only_partition(second)["fetch_offset"] == 2 and second["forgotten_topics_data"] == []
    # Nothing changed since: an incremental request naming no partition.
    thread.do_work()
    third = conn.requests[2]
    assert (third["session_id"], third["session_epoch"], third["topics"]) == (77, 2, [])


def test_session_error_drops_back_to_a_full_request_without_backing_off(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log)
    conn.respond = lambda request: response(part(None, hw=0), session_id=77)
    thread.do_work()
    conn.respond = lambda request: response(error_code=InvalidFetchSessionEpochException.code)
    thread.do_work()
    assert thread.fetch_state(TP).delayed_until == 0.0  # type: ignore[union-attr]
    conn.respond = lambda request: response(part(None, hw=0), session_id=78)
    thread.do_work()
    # Epoch 0 with the old id: close session 77, open a new one; then incremental in 78.
    assert (conn.requests[2]["session_id"], conn.requests[2]["session_epoch"]) == (77, 0)
    assert only_partition(conn.requests[2])["fetch_offset"] == 0
    thread.do_work()
    assert (conn.requests[3]["session_id"], conn.requests[3]["session_epoch"]) == (78, 1)
    conn.respond = lambda request: response(error_code=FetchSessionIdNotFoundException.code)
    thread.do_work()
    conn.respond = lambda request: response(part(None, hw=0))
    thread.do_work()
    assert (conn.requests[5]["session_id"], conn.requests[5]["session_epoch"]) == (0, 0)


def test_removed_partition_is_forgotten_and_a_failed_send_restarts_the_session(
    follower_log: Log, tmp_path: Path
) -> None:
    other = Log(str(tmp_path / "t-1"), LogConfig())
    thread, conn = fetcher_for(follower_log)
    tp1 = TopicPartition(TP.topic, 1)
    thread.add_partitions({tp1: InitialFetchState(LEADER, 3, other)})
    conn.respond = lambda request: response(part(None, hw=0), part(None, hw=0, index=1), session_id=5)
    thread.do_work()  # both logs carry no epochs: cut to their high watermarks, then a full fetch
    assert conn.requests[-1]["session_epoch"] == 0 and len(conn.requests[-1]["topics"][0]["partitions"]) == 2
    thread.remove_partitions([tp1])
    conn.respond = lambda request: response(session_id=5)
    thread.do_work()
    assert conn.requests[-1]["forgotten_topics_data"] == [{"topic": TP.topic, "partitions": [1]}]
    assert conn.requests[-1]["topics"] == []

    def fail(request: Any) -> Any:
        raise ConnectionClosedError("gone")

    conn.respond = fail
    thread.do_work()
    conn.respond = lambda request: response(part(None, hw=0), session_id=6)
    thread.fetch_state(TP).delayed_until = 0.0  # type: ignore[union-attr]
    thread.do_work()
    assert (conn.requests[-1]["session_id"], conn.requests[-1]["session_epoch"]) == (5, 0)
    other.close()


def test_the_same_leader_one_epoch_on_resumes_the_fetch_without_truncating(follower_log: Log) -> None:
    follower_log.append_as_leader(batch(1))  # epoch 0: truncating asks the leader about it
    thread, conn = fetcher_for(follower_log, epoch=3)
    thread.do_work()  # the truncation round
    assert len(conn.epoch_requests) == 1 and conn.requests == []
    conn.respond = lambda request: response(part(batch(2, base_offset=1), hw=3))
    thread.do_work()
    assert follower_log.log_end_offset == 3
    assert only_partition(conn.requests[-1])["current_leader_epoch"] == 3
    # The controller shrank the ISR: epoch 4, same leader.
    thread.add_partitions({TP: InitialFetchState(LEADER, 4, follower_log, resume=True)})
    conn.respond = lambda request: response(part(None, hw=2))
    thread.do_work()
    assert len(conn.epoch_requests) == 1  # no second truncation round
    p = only_partition(conn.requests[-1])
    assert (p["fetch_offset"], p["current_leader_epoch"]) == (3, 4)


def test_an_answer_to_the_previous_epoch_is_dropped_not_backed_off(follower_log: Log) -> None:
    thread, conn = fetcher_for(follower_log, epoch=3)
    thread.do_work()

    def fenced_after_the_bump(request: dict[str, Any]) -> Any:
        # The epoch moves on while this request (at epoch 3) is with the leader.
        thread.add_partitions({TP: InitialFetchState(LEADER, 4, follower_log, resume=True)})
        return response(part(error_code=74))  # FENCED_LEADER_EPOCH

    conn.respond = fenced_after_the_bump
    thread.do_work()
    conn.respond = lambda request: response(part(batch(1, base_offset=0), hw=1))
    thread.do_work()  # not delayed: fetched at once, at the new epoch
    assert follower_log.log_end_offset == 1
    assert only_partition(conn.requests[-1])["current_leader_epoch"] == 4


def test_a_fetch_not_resumed_truncates_again(follower_log: Log) -> None:
    follower_log.append_as_leader(batch(1))
    thread, conn = fetcher_for(follower_log, epoch=3)
    thread.do_work()
    thread.do_work()
    thread.add_partitions({TP: InitialFetchState(LEADER, 5, follower_log)})  # an epoch skipped: anew
    thread.do_work()
    assert len(conn.epoch_requests) == 2 and len(conn.requests) == 1
