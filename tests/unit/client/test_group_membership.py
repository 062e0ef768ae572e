"""GroupMembership against a scripted coordinator: the JoinGroup/SyncGroup round with its
MEMBER_ID_REQUIRED step, the leader's assignment, what each error makes the member do, the
heartbeat thread (rejoin requests, poll timeout) and LeaveGroup on close."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from kafkapy.client import group_membership
from kafkapy.client.connection import ConnectionClosedError
from kafkapy.client.group_membership import (
    NO_GENERATION,
    Generation,
    GroupMember,
    GroupMembership,
    MemberState,
)
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import InconsistentGroupProtocolException
from kafkapy.protocol.message import Message

OK = 0
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79

Reply = Any | Callable[[dict[str, Any]], Any] | BaseException


def ns(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


def join_resp(code: int = OK, member: str = "m-1", leader: str = "m-1", generation: int = 1,
              members: Sequence[tuple[str, bytes]] = ()) -> SimpleNamespace:  # fmt: skip
    return ns(error_code=code, generation_id=generation, protocol_name="range", leader=leader, member_id=member,
              members=[ns(member_id=m, group_instance_id=None, metadata=meta) for m, meta in members])  # fmt: skip


def sync_resp(code: int = OK, assignment: bytes = b"") -> SimpleNamespace:
    return ns(error_code=code, assignment=assignment)


class FakeClient:
    """The client calls GroupMembership makes, answered from per-API scripts; once a
    script runs out, FindCoordinator/SyncGroup/Heartbeat/LeaveGroup succeed."""

    DEFAULTS: Mapping[ApiKey, Any] = {
        ApiKey.FIND_COORDINATOR: ns(error_code=OK, error_message=None, node_id=7, host="h", port=9092),
        ApiKey.SYNC_GROUP: sync_resp(),
        ApiKey.HEARTBEAT: ns(error_code=OK),
        ApiKey.LEAVE_GROUP: ns(error_code=OK, members=[]),
    }

    def __init__(self, **scripts: list[Reply]) -> None:
        self.scripts = {ApiKey[k.upper()]: list(v) for k, v in scripts.items()}
        self.sent: list[tuple[ApiKey, int, dict[str, Any]]] = []
        self.closed = False
        self.lock = threading.Lock()

    def await_metadata(self, topics: Any, timeout: float) -> Any:
        return None

    def least_loaded_node(self) -> int:
        return 0

    def request(self, node: int, api_key: ApiKey, request: Message, *, timeout: float | None = None,
                max_version: int | None = None) -> Any:  # fmt: skip
        body = request.to_dict()  # the typed request, as plain data
        with self.lock:
            self.sent.append((api_key, node, body))
            script = self.scripts.get(api_key)
            reply = script.pop(0) if script else self.DEFAULTS[api_key]
        if isinstance(reply, BaseException):
            raise reply
        return reply(body) if callable(reply) else reply

    def bodies(self, api_key: ApiKey) -> list[dict[str, Any]]:
        with self.lock:
            return [body for key, _, body in self.sent if key == api_key]

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def blocking_calls_answered_by_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    """GroupMembership's blocking calls (network_client_utils) go to FakeClient's scripts."""

    def await_metadata(client: FakeClient, topics: Any, timeout: float) -> Any:
        return client.await_metadata(topics, timeout)

    def send_and_receive(client: FakeClient, node: int, api_key: ApiKey, body: Any, **kwargs: Any) -> Any:
        return client.request(node, api_key, body, **kwargs)

    monkeypatch.setattr(group_membership, "await_metadata", await_metadata)
    monkeypatch.setattr(group_membership, "send_and_receive", send_and_receive)


def member(client: FakeClient, **kwargs: Any) -> GroupMembership:
    return GroupMembership(client, "g", retry_backoff_ms=1, **kwargs)  # type: ignore[arg-type]


def no_assign(protocol: str, members: Sequence[GroupMember]) -> Mapping[str, bytes]:
    raise AssertionError("a follower does not assign")


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_a_new_member_joins_again_with_the_id_the_coordinator_requires_and_the_leader_assigns() -> None:
    client = FakeClient(
        join_group=[
            join_resp(MEMBER_ID_REQUIRED, member="m-1", leader="", generation=-1),
            join_resp(members=[("m-1", b"meta-1"), ("m-2", b"meta-2")]),
        ],  # fmt: skip
        sync_group=[sync_resp(assignment=b"mine")],
    )
    seen: list[tuple[str, list[GroupMember]]] = []

    def assign(protocol: str, members: Sequence[GroupMember]) -> Mapping[str, bytes]:
        seen.append((protocol, list(members)))
        return {"m-1": b"mine", "m-2": b"theirs"}

    m = member(client)
    try:
        joined = m.join([("range", b"sub"), ("roundrobin", b"sub")], assign, timeout=5)
        assert joined is not None and joined.assignment == b"mine" and joined.leader_id == "m-1"
        first, second = client.bodies(ApiKey.JOIN_GROUP)
        assert first["member_id"] == "" and second["member_id"] == "m-1"
        assert second["protocol_type"] == "consumer"
        assert [p["name"] for p in second["protocols"]] == ["range", "roundrobin"]
        assert seen == [("range", [GroupMember("m-1", None, b"meta-1"), GroupMember("m-2", None, b"meta-2")])]
        (sync,) = client.bodies(ApiKey.SYNC_GROUP)
        assert sync["generation_id"] == 1 and sync["member_id"] == "m-1"
        assert {a["member_id"]: a["assignment"] for a in sync["assignments"]} == {
            "m-1": b"mine",
            "m-2": b"theirs",
        }
        assert m.state is MemberState.STABLE and m.is_leader and not m.needs_rejoin
        assert m.generation == Generation(1, "m-1", "range")
    finally:
        m.close()


def test_a_follower_syncs_with_no_assignments() -> None:
    client = FakeClient(
        join_group=[join_resp(member="m-2", leader="m-1")], sync_group=[sync_resp(assignment=b"a")]
    )
    m = member(client)
    try:
        joined = m.join([("range", b"")], no_assign, timeout=5)
        assert joined is not None and joined.assignment == b"a"
        assert client.bodies(ApiKey.SYNC_GROUP)[0]["assignments"] == []
        assert not m.is_leader
    finally:
        m.close()


def test_not_coordinator_finds_the_coordinator_again_and_rebalance_in_sync_joins_again() -> None:
    client = FakeClient(
        join_group=[
            join_resp(NOT_COORDINATOR),
            join_resp(member="m-2", leader="m-1"),
            join_resp(member="m-2", leader="m-1", generation=2),
        ],  # fmt: skip
        sync_group=[sync_resp(REBALANCE_IN_PROGRESS), sync_resp()],
    )
    m = member(client)
    try:
        joined = m.join([("range", b"")], no_assign, timeout=5)
        assert joined is not None and joined.generation.generation_id == 2
        assert len(client.bodies(ApiKey.FIND_COORDINATOR)) == 2
        assert [b["member_id"] for b in client.bodies(ApiKey.JOIN_GROUP)] == ["", "", "m-2"]
    finally:
        m.close()


def test_unknown_member_in_sync_joins_as_a_new_member() -> None:
    client = FakeClient(
        join_group=[join_resp(member="old", leader="x"), join_resp(member="new", leader="x", generation=3)],
        sync_group=[sync_resp(UNKNOWN_MEMBER_ID), sync_resp()],
    )
    m = member(client)
    try:
        assert m.join([("range", b"")], no_assign, timeout=5) is not None
        assert [b["member_id"] for b in client.bodies(ApiKey.JOIN_GROUP)] == ["", ""]
        assert m.generation.member_id == "new"
    finally:
        m.close()


def test_a_fatal_join_error_is_raised() -> None:
    m = member(FakeClient(join_group=[join_resp(InconsistentGroupProtocolException.code)]))
    try:
        with pytest.raises(InconsistentGroupProtocolException):
            m.join([("range", b"")], no_assign, timeout=5)
        assert m.state is MemberState.UNJOINED
    finally:
        m.close()


def test_retriable_failures_give_up_at_the_timeout_and_the_next_join_goes_on() -> None:
    client = FakeClient(find_coordinator=[ns(error_code=15, error_message=None)] * 1000)
    m = member(client)
    try:
        start = time.monotonic()
        assert m.join([("range", b"")], no_assign, timeout=0.2) is None
        assert time.monotonic() - start < 2 and m.needs_rejoin
    finally:
        m.close()


@pytest.mark.parametrize(
    ("code", "keeps_generation"),
    [(REBALANCE_IN_PROGRESS, True), (ILLEGAL_GENERATION, False), (UNKNOWN_MEMBER_ID, False)],
)
def test_heartbeat_errors_ask_for_a_rejoin(code: int, keeps_generation: bool) -> None:
    client = FakeClient(join_group=[join_resp(member="m-2", leader="m-1")], heartbeat=[ns(error_code=code)])
    m = member(client)
    try:
        m.join([("range", b"")], no_assign, timeout=5)
        m.heartbeat()
        assert m.needs_rejoin
        assert (m.generation == Generation(1, "m-2", "range")) is keeps_generation
        assert keeps_generation or m.generation == NO_GENERATION
    finally:
        m.close()


def test_a_lost_connection_makes_the_next_heartbeat_find_the_coordinator_again() -> None:
    client = FakeClient(join_group=[join_resp(member="m-2", leader="m-1")],
                        heartbeat=[ConnectionClosedError("gone")])  # fmt: skip
    m = member(client)
    try:
        m.join([("range", b"")], no_assign, timeout=5)
        m.heartbeat()
        assert m.coordinator is None and not m.needs_rejoin
        m.heartbeat()
        assert len(client.bodies(ApiKey.FIND_COORDINATOR)) == 2 and m.coordinator == 7
    finally:
        m.close()


def test_the_heartbeat_thread_beats_every_interval_while_stable() -> None:
    client = FakeClient(join_group=[join_resp(member="m-2", leader="m-1")])
    m = member(client, session_timeout_ms=1000, heartbeat_interval_ms=50)
    try:
        m.join([("range", b"")], no_assign, timeout=5)
        wait_until(lambda: len(client.bodies(ApiKey.HEARTBEAT)) >= 3)
        beat = client.bodies(ApiKey.HEARTBEAT)[0]
        assert (beat["generation_id"], beat["member_id"]) == (1, "m-2")
    finally:
        m.close()


def test_a_caller_that_stops_polling_is_taken_out_of_the_group_after_max_poll_interval() -> None:
    client = FakeClient(join_group=[join_resp(member="m-2", leader="m-1")])
    m = member(client, session_timeout_ms=1000, heartbeat_interval_ms=50, rebalance_timeout_ms=300)
    try:
        m.join([("range", b"")], no_assign, timeout=5)
        m.record_poll()
        wait_until(lambda: bool(client.bodies(ApiKey.LEAVE_GROUP)))
        assert client.bodies(ApiKey.LEAVE_GROUP)[0]["members"][0]["member_id"] == "m-2"
        assert m.state is MemberState.UNJOINED and m.needs_rejoin
    finally:
        m.close()
    assert len(client.bodies(ApiKey.LEAVE_GROUP)) == 1  # nothing left to leave on close


def test_close_leaves_the_group_and_closes_the_client() -> None:
    client = FakeClient(join_group=[join_resp(member="m-2", leader="m-1")])
    m = member(client)
    m.join([("range", b"")], no_assign, timeout=5)
    m.close()
    (leave,) = client.bodies(ApiKey.LEAVE_GROUP)
    assert leave["group_id"] == "g" and leave["member_id"] == "m-2"
    assert leave["members"] == [{"member_id": "m-2", "group_instance_id": None, "reason": None}]
    assert client.closed and m.generation == NO_GENERATION


def test_heartbeat_interval_must_be_below_the_session_timeout() -> None:
    with pytest.raises(ValueError, match="heartbeat.interval.ms"):
        GroupMembership(FakeClient(), "g", session_timeout_ms=3000, heartbeat_interval_ms=3000)  # type: ignore[arg-type]
