"""The follower's fetch rounds cost what changed: with a session open, a request names only the
partitions whose fetch data moved, and building it reads nothing of the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replication_helpers import TP, batch
from test_replica_fetcher import LEADER, FakeConnection, part, response

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import FetchSessionIdNotFoundException, NotLeaderOrFollowerException
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.replica_fetcher_thread import FetcherConfig, InitialFetchState, ReplicaFetcherThread
from kafkapy.server.replication_quota import ReplicationQuotaManager

CONFIG = FetcherConfig(max_wait_ms=500, min_bytes=1, response_max_bytes=1 << 20, partition_max_bytes=1024,
                       backoff_ms=5000)  # fmt: skip  # long: a slow machine must not end a backoff mid-test
QUIET = 500  # partitions besides TP that never change


class QuietLog:
    """A follower log with offsets only (no epochs, so it is cut at its high watermark), which
    counts the reads of its log start offset: building a request reads it for each partition
    the request names."""

    latest_epoch = None

    def __init__(self) -> None:
        self.log_end_offset = 0
        self.high_watermark = 0
        self._log_start_offset = 0
        self.reads = 0

    @property
    def log_start_offset(self) -> int:
        self.reads += 1
        return self._log_start_offset

    def truncate_to(self, offset: int) -> None:
        self.log_end_offset = min(self.log_end_offset, offset)


def tp(i: int) -> TopicPartition:
    return TopicPartition(TP.topic, i)


def named(request: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for t in request["topics"] for p in t["partitions"]}


def forgotten(request: dict[str, Any]) -> list[int]:
    return sorted(p for t in request["forgotten_topics_data"] for p in t["partitions"])


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    """A fetcher of TP (a real Log, partition 0) and QUIET quiet partitions 1..QUIET, its
    session (id 9) opened by a full request."""
    real = Log(str(tmp_path / "t-0"), LogConfig())
    quiet = {tp(i): QuietLog() for i in range(1, QUIET + 1)}
    thread = ReplicaFetcherThread(1, 0, LEADER, CONFIG, connect=FakeConnection)
    thread.add_partitions({TP: InitialFetchState(LEADER, 3, real)})
    thread.add_partitions({p: InitialFetchState(LEADER, 3, q) for p, q in quiet.items()})
    conn: FakeConnection = thread._conn
    conn.respond = lambda request: response(session_id=9)
    thread.do_work()  # every log is cut at its high watermark, then the full request
    full = conn.requests[-1]
    assert (full["session_id"], full["session_epoch"]) == (0, 0) and len(named(full)) == QUIET + 1
    yield thread, conn, real, quiet
    thread.shutdown(0)
    real.close()


def reads(quiet: dict[TopicPartition, QuietLog]) -> int:
    return sum(q.reads for q in quiet.values())


def test_incremental_requests_name_and_read_only_what_changed(setup: Any) -> None:
    thread, conn, real, quiet = setup
    before = reads(quiet)
    thread.do_work()
    idle = conn.requests[-1]
    assert (idle["session_id"], idle["session_epoch"], idle["topics"], idle["forgotten_topics_data"]) == (
        9,
        1,
        [],
        [],
    )
    assert reads(quiet) == before  # nothing per quiet partition
    conn.respond = lambda request: response(part(bytes(batch(3, base_offset=0)), hw=3), session_id=9)
    thread.do_work()  # the leader answers TP with records
    assert real.log_end_offset == 3 and named(conn.requests[-1]) == {}
    conn.respond = lambda request: response(session_id=9)
    thread.do_work()
    moved = conn.requests[-1]
    assert moved["session_epoch"] == 3 and list(named(moved)) == [0] and named(moved)[0]["fetch_offset"] == 3
    thread.do_work()
    assert named(conn.requests[-1]) == {}
    assert reads(quiet) == before
    assert thread.max_lag() == 0


def test_a_full_request_after_a_session_error_names_everything(setup: Any) -> None:
    thread, conn, _, _ = setup
    conn.respond = lambda request: response(error_code=FetchSessionIdNotFoundException.code)
    thread.do_work()
    conn.respond = lambda request: response(session_id=10)
    thread.do_work()
    full = conn.requests[-1]
    assert (full["session_id"], full["session_epoch"]) == (0, 0) and len(named(full)) == QUIET + 1
    thread.do_work()
    assert (conn.requests[-1]["session_id"], conn.requests[-1]["session_epoch"]) == (10, 1)
    assert named(conn.requests[-1]) == {}


def test_removed_and_readded_partitions_are_forgotten_then_sent_with_their_new_epoch(setup: Any) -> None:
    thread, conn, _, quiet = setup
    thread.remove_partitions([tp(1), tp(2)])
    thread.do_work()
    assert forgotten(conn.requests[-1]) == [1, 2] and named(conn.requests[-1]) == {}
    assert tp(1) not in thread.partitions()
    thread.add_partitions({tp(3): InitialFetchState(LEADER, 4, quiet[tp(3)])})  # a new leader epoch
    thread.add_partitions({tp(1): InitialFetchState(LEADER, 4, quiet[tp(1)])})  # back again
    thread.do_work()  # both are cut to their high watermarks first
    req = conn.requests[-1]
    assert {p: d["current_leader_epoch"] for p, d in named(req).items()} == {1: 4, 3: 4}
    assert forgotten(req) == []


def test_a_partition_error_leaves_the_session_until_the_backoff_ends(setup: Any) -> None:
    thread, conn, _, _ = setup
    conn.respond = lambda request: response(
        part(error_code=NotLeaderOrFollowerException.code, index=7), session_id=9
    )
    thread.do_work()
    conn.respond = lambda request: response(session_id=9)
    thread.do_work()
    assert forgotten(conn.requests[-1]) == [7]
    assert 0 < thread._idle_wait() <= CONFIG.backoff_ms / 1000
    thread.fetch_state(tp(7)).delayed_until = 0.0  # type: ignore[union-attr]
    thread._delays = [(0.0, 0, tp(7))]  # its backoff is over
    thread.do_work()
    assert list(named(conn.requests[-1])) == [7] and forgotten(conn.requests[-1]) == []


def test_log_start_offset_moves_reach_the_leader(setup: Any) -> None:
    thread, conn, real, quiet = setup
    # DeleteRecords on the leader: its log start offset arrives in a response and ours follows,
    # which the next request tells the leader (its DeleteRecords waits for that).
    conn.respond = lambda request: response(part(bytes(batch(5, base_offset=0)), hw=5), session_id=9)
    thread.do_work()
    conn.respond = lambda request: response(part(None, hw=5, log_start=4), session_id=9)
    thread.do_work()
    assert real.log_start_offset == 4
    conn.respond = lambda request: response(session_id=9)
    thread.do_work()
    assert named(conn.requests[-1])[0]["log_start_offset"] == 4
    # Retention on the follower, outside the thread: found by the periodic sweep.
    quiet[tp(5)]._log_start_offset = 0  # unchanged
    quiet[tp(6)]._log_start_offset = 2
    thread.do_work()
    assert named(conn.requests[-1]) == {}
    thread._next_sweep = 0.0
    thread.do_work()
    assert {p: d["log_start_offset"] for p, d in named(conn.requests[-1]).items()} == {6: 2}


def test_lag_is_kept_per_lagging_partition(setup: Any) -> None:
    thread, conn, _, _ = setup
    conn.respond = lambda request: response(
        part(None, hw=40, index=8), part(None, hw=0, index=9), session_id=9
    )
    thread.do_work()
    assert thread.max_lag() == 40 and thread._lags == {tp(8): 40}
    conn.respond = lambda request: response(part(None, hw=0, index=8), session_id=9)
    thread.do_work()
    assert thread.max_lag() == 0 and thread._lags == {}


def test_a_throttled_partition_sits_out_while_the_quota_is_exceeded_and_comes_back_after() -> None:
    quota = ReplicationQuotaManager()
    quota.update_quota(1000)
    quota.mark_throttled(TP.topic, [2])
    logs = {tp(i): QuietLog() for i in range(1, 4)}
    thread = ReplicaFetcherThread(1, 0, LEADER, CONFIG, connect=FakeConnection, quota=quota)
    thread.add_partitions({p: InitialFetchState(LEADER, 3, q) for p, q in logs.items()})
    conn: FakeConnection = thread._conn
    conn.respond = lambda request: response(part(None, hw=50, index=2), session_id=4)
    thread.do_work()
    assert sorted(named(conn.requests[-1])) == [1, 2, 3]  # full; tp 2 lags 50 behind
    conn.respond = lambda request: response(session_id=4)
    quota.record(1_000_000)  # over the bound: the lagging throttled partition sits out
    thread.do_work()
    assert forgotten(conn.requests[-1]) == [2] and named(conn.requests[-1]) == {}
    quota.update_quota(10**12)  # room again: it is back without any other change to it
    thread.do_work()
    assert list(named(conn.requests[-1])) == [2] and forgotten(conn.requests[-1]) == []
    thread.do_work()
    assert named(conn.requests[-1]) == {}


class OldLeader(FakeConnection):
    """A leader without fetch sessions (Fetch v6 at most)."""

    def pick_version(self, api_key: int, ours: tuple[int, int]) -> int:
        return 6 if api_key == 1 else super().pick_version(api_key, ours)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        assert version == 6
        self.requests.append(body)
        return self.respond(body)


def test_a_sessionless_leader_gets_every_partition_every_time() -> None:
    logs = {tp(i): QuietLog() for i in range(3)}
    thread = ReplicaFetcherThread(1, 0, LEADER, CONFIG, connect=OldLeader)
    thread.add_partitions({p: InitialFetchState(LEADER, 3, q) for p, q in logs.items()})
    conn: FakeConnection = thread._conn
    thread.do_work()  # the first request is full at epoch 0 (the version is not known yet)
    conn.respond = lambda request: response(part(None, hw=7, index=1))
    for _ in range(2):
        thread.do_work()
        req = conn.requests[-1]
        assert (req["session_id"], req["session_epoch"]) == (0, -1) and sorted(named(req)) == [0, 1, 2]
    assert thread.max_lag() == 7
