"""GroupMembership: one member of a classic (JoinGroup/SyncGroup) group, as Kafka's
AbstractCoordinator runs it; what the members agree on is the caller's business.

    member = GroupMembership(client, "g", protocol_type="consumer")
    joined = member.join([("range", subscription_bytes)], assign, timeout=30)
    ... member.close()  # LeaveGroup

- Coordinator: FindCoordinator (key type 0) to any broker; NOT_COORDINATOR or
  COORDINATOR_NOT_AVAILABLE, or a connection lost, mean "find it again".
- Join: JoinGroup with our protocols in preference order. A new member (empty id) of a v4+
  broker is answered MEMBER_ID_REQUIRED with its id, and joins again with it at once. The
  leader (leader == member id) gets every member's metadata and computes the assignments
  through the caller's `assign(protocol, members)`; all then SyncGroup, the followers with
  no assignments, and get their own. UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION reset the member
  id and generation and join as a new member; REBALANCE_IN_PROGRESS joins again.
- Heartbeats: a daemon thread, as Kafka's (since 0.10.1): every heartbeat.interval.ms while
  the member is stable, so a caller busy between polls keeps its session. A heartbeat
  answered REBALANCE_IN_PROGRESS asks for a rejoin, which the caller does on its next poll;
  if the caller does not poll within max.poll.interval.ms the thread leaves the group, so the
  others need not wait out the rebalance timeout for a member that will never rejoin.
- One lock over the NetworkClient (it is single-threaded) and the member state: the caller's
  join/commit and the heartbeat thread take turns. A join holds it for the whole rebalance,
  and the heartbeat thread pauses meanwhile, as Kafka's does.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafkapy.client.network_client import NetworkClient
from kafkapy.client.network_client_utils import await_metadata, send_and_receive
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    IllegalGenerationException,
    KafkaError,
    MemberIdRequiredException,
    NetworkException,
    NotCoordinatorException,
    RebalanceInProgressException,
    TimeoutException,
    UnknownMemberIdException,
    for_code,
)
from kafkapy.protocol.generated.find_coordinator_request import FindCoordinatorRequest
from kafkapy.protocol.generated.heartbeat_request import HeartbeatRequest
from kafkapy.protocol.generated.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkapy.protocol.generated.leave_group_request import LeaveGroupRequest, MemberIdentity
from kafkapy.protocol.generated.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment

log = logging.getLogger("kafkapy.client.GroupMembership")

# Kafka 2.8's versions: JoinGroup v8+ adds a reason and v9 skip_assignment (KIP-814), which
# only matter to static members and the KIP-848 world.
FIND_COORDINATOR_MAX_VERSION: Final = 3
JOIN_GROUP_MAX_VERSION: Final = 7
SYNC_GROUP_MAX_VERSION: Final = 5
HEARTBEAT_MAX_VERSION: Final = 4
LEAVE_GROUP_MAX_VERSION: Final = 4
COORDINATOR_ERRORS: Final = frozenset({NotCoordinatorException.code, CoordinatorNotAvailableException.code})
RESET_ERRORS: Final = frozenset({UnknownMemberIdException.code, IllegalGenerationException.code})
_TICK_S: Final = 0.1


class MemberState(enum.Enum):
    UNJOINED = "unjoined"  # no generation: before the first join, after leaving or being fenced
    REBALANCING = "rebalancing"  # a JoinGroup/SyncGroup round is under way
    STABLE = "stable"  # holds an assignment for `generation`


@dataclass(frozen=True, slots=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol: str | None = None


NO_GENERATION: Final = Generation()


@dataclass(frozen=True, slots=True)
class JoinedGroup:
    generation: Generation
    leader_id: str
    assignment: bytes  # this member's, as the leader encoded it


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


# The leader's job: (chosen protocol, every member) -> {member id: assignment bytes}.
Assign = Callable[[str, Sequence[GroupMember]], Mapping[str, bytes]]


class _Retry(Exception):
    """A retriable failure: try again (after the backoff) while the caller's time lasts."""


class GroupMembership:
    def __init__(
        self,
        client: NetworkClient,
        group_id: str,
        *,
        protocol_type: str = "consumer",
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 300_000,
        heartbeat_interval_ms: int = 3_000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        group_instance_id: str | None = None,
    ) -> None:
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")
        self.client = client
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout = request_timeout_ms / 1000
        self.group_instance_id = group_instance_id
        self.lock = threading.RLock()
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.leader_id: str | None = None
        self.coordinator: int | None = None
        self._rejoin_needed = True
        self._last_poll = time.monotonic()
        self._next_heartbeat = 0.0
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    # -- state the caller reads -------------------------------------------------------------

    @property
    def needs_rejoin(self) -> bool:
        return self._rejoin_needed or self.state is not MemberState.STABLE

    @property
    def is_leader(self) -> bool:
        return self.state is MemberState.STABLE and self.leader_id == self.generation.member_id

    def generation_if_stable(self) -> Generation | None:
        with self.lock:
            return self.generation if self.state is MemberState.STABLE else None

    def request_rejoin(self, reason: str) -> None:
        if not self._rejoin_needed:
            log.info("Request joining group %s due to: %s", self.group_id, reason)
        self._rejoin_needed = True

    def record_poll(self) -> None:
        """The caller is alive: max.poll.interval.ms counts from here."""
        self._last_poll = time.monotonic()

    def reset_generation(self, reason: str) -> None:
        with self.lock:
            log.info("Resetting generation of group %s (member %s): %s", self.group_id,
                     self.generation.member_id, reason)  # fmt: skip
            self.generation = NO_GENERATION
            self.state = MemberState.UNJOINED
            self.request_rejoin(reason)

    # -- the coordinator --------------------------------------------------------------------

    def coordinator_unknown(self) -> None:
        self.coordinator = None

    def _find_coordinator(self) -> int:
        if self.coordinator is None:
            await_metadata(self.client, [], self.request_timeout)
            node = self.client.least_loaded_node()
            if node is None:
                raise _Retry("no broker to ask for the coordinator")
            resp = self._request(node, ApiKey.FIND_COORDINATOR, FindCoordinatorRequest(key=self.group_id, key_type=0),
                                 FIND_COORDINATOR_MAX_VERSION)  # fmt: skip
            if (
                resp.error_code in COORDINATOR_ERRORS
                or resp.error_code == CoordinatorLoadInProgressException.code
            ):
                raise _Retry(f"FindCoordinator: {for_code(resp.error_code).name}")
            if resp.error_code:
                raise for_code(resp.error_code, resp.error_message or f"FindCoordinator for {self.group_id}")
            self.coordinator = resp.node_id
            log.info("Discovered group coordinator %s:%s (id: %s) for group %s",
                     resp.host, resp.port, resp.node_id, self.group_id)  # fmt: skip
        return self.coordinator

    def _request(
        self, node: int, api_key: ApiKey, body: Any, max_version: int, timeout: float | None = None
    ) -> Any:
        try:
            return send_and_receive(
                self.client,
                node,
                api_key,
                body,
                timeout=timeout or self.request_timeout,
                max_version=max_version,
            )
        except (NetworkException, TimeoutException) as e:
            self.coordinator_unknown()
            raise _Retry(f"{api_key.name} to node {node}: {e}") from e

    def coordinator_request(
        self, api_key: ApiKey, body: Any, max_version: int, timeout: float | None = None
    ) -> Any:
        """One request to the coordinator, found first if need be. A lost connection or no
        coordinator raises CoordinatorNotAvailableException (retriable), as Kafka reports it."""
        with self.lock:
            try:
                return self._request(self._find_coordinator(), api_key, body, max_version, timeout)
            except _Retry as e:
                self.coordinator_unknown()
                raise CoordinatorNotAvailableException(str(e)) from e

    # -- joining ----------------------------------------------------------------------------

    def join(
        self, protocols: Sequence[tuple[str, bytes]], assign: Assign, timeout: float
    ) -> JoinedGroup | None:
        """Rejoin the group: JoinGroup, the leader's assignment, SyncGroup. Retriable failures
        are retried (with the backoff) until `timeout`; then None, and the next call goes on.
        A JoinGroup in flight is awaited however long the rebalance takes (the coordinator
        answers within the rebalance timeout)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            self._start_heartbeats()
            while True:
                try:
                    joined = self._join_once(protocols, assign)
                    self.state = MemberState.STABLE
                    self._rejoin_needed = False
                    self._next_heartbeat = time.monotonic() + self.heartbeat_interval
                    return joined
                except _Retry as e:
                    log.debug("Joining group %s: %s", self.group_id, e)
                    if time.monotonic() + self.retry_backoff > deadline:
                        return None  # still REBALANCING: we may hold a member id worth reusing
                    time.sleep(self.retry_backoff)

    def _join_once(self, protocols: Sequence[tuple[str, bytes]], assign: Assign) -> JoinedGroup:
        node = self._find_coordinator()
        self.state = MemberState.REBALANCING
        body = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=self.generation.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocols=[JoinGroupRequestProtocol(name=name, metadata=meta) for name, meta in protocols],
        )
        # The coordinator holds a JoinGroup until every member has rejoined, up to the
        # rebalance timeout: wait that long (plus Kafka's 5 s) rather than request.timeout.ms.
        wait = max(self.request_timeout, self.rebalance_timeout_ms / 1000 + 5)
        resp = self._request(node, ApiKey.JOIN_GROUP, body, JOIN_GROUP_MAX_VERSION, wait)
        code = resp.error_code
        if code == MemberIdRequiredException.code:
            self.generation = Generation(member_id=resp.member_id)
            return self._join_once(protocols, assign)  # at once, with the id we were given
        self._check(code, "JoinGroup")
        self.generation = Generation(resp.generation_id, resp.member_id, resp.protocol_name)
        self.leader_id = resp.leader
        log.info("Successfully joined group %s with generation %d as %s (%s)", self.group_id,
                 resp.generation_id, resp.member_id, "leader" if resp.leader == resp.member_id else "follower")  # fmt: skip
        assignments: Mapping[str, bytes] = {}
        if resp.leader == resp.member_id:
            members = [GroupMember(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in resp.members]
            assignments = assign(resp.protocol_name, members)
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=resp.generation_id,
            member_id=resp.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocol_name=resp.protocol_name,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()
            ],
        )
        synced = self._request(node, ApiKey.SYNC_GROUP, sync, SYNC_GROUP_MAX_VERSION, wait)
        self._check(synced.error_code, "SyncGroup")
        return JoinedGroup(self.generation, resp.leader, bytes(synced.assignment or b""))

    def _check(self, code: int, what: str) -> None:
        """Turn a JoinGroup/SyncGroup error into: retry as is, retry as a new member, or fail."""
        if not code:
            return
        name = for_code(code).name
        if code in COORDINATOR_ERRORS:
            self.coordinator_unknown()
            raise _Retry(f"{what}: {name}")
        if code in RESET_ERRORS:
            self.generation = NO_GENERATION
            raise _Retry(f"{what}: {name}, joining as a new member")
        if code in (RebalanceInProgressException.code, CoordinatorLoadInProgressException.code):
            raise _Retry(f"{what}: {name}")
        self.state = MemberState.UNJOINED
        raise for_code(code, f"{what} for group {self.group_id}")

    # -- heartbeats -------------------------------------------------------------------------

    def _start_heartbeats(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._heartbeat_loop, name=f"kafka-coordinator-heartbeat-thread | {self.group_id}",
                daemon=True,
            )  # fmt: skip
            self._thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._closing.wait(_TICK_S):
            with self.lock:
                if self._closing.is_set() or self.state is not MemberState.STABLE:
                    continue
                now = time.monotonic()
                if now - self._last_poll > self.rebalance_timeout_ms / 1000:
                    log.warning("consumer poll timeout has expired: the time between poll() calls exceeded "
                                "max.poll.interval.ms (%d); leaving group %s", self.rebalance_timeout_ms,
                                self.group_id)  # fmt: skip
                    self._leave("consumer poll timeout has expired.")
                elif now >= self._next_heartbeat:
                    self.heartbeat()

    def heartbeat(self) -> None:
        """One Heartbeat now (the thread calls this when one is due)."""
        with self.lock:
            generation = self.generation
            body = HeartbeatRequest(group_id=self.group_id, generation_id=generation.generation_id,
                                    member_id=generation.member_id, group_instance_id=self.group_instance_id)  # fmt: skip
            self._next_heartbeat = time.monotonic() + self.retry_backoff
            try:
                code = self._request(
                    self._find_coordinator(), ApiKey.HEARTBEAT, body, HEARTBEAT_MAX_VERSION
                ).error_code
            except _Retry as e:
                log.info("Heartbeat for group %s failed: %s", self.group_id, e)
                return
            except KafkaError as e:
                log.warning("Heartbeat for group %s failed: %s", self.group_id, e)
                return
            if generation is not self.generation:
                return  # rejoined or left meanwhile: this answer is about the old generation
            if code in COORDINATOR_ERRORS:
                self.coordinator_unknown()
                return
            self._next_heartbeat = time.monotonic() + self.heartbeat_interval
            if code == RebalanceInProgressException.code:
                self.request_rejoin("group is rebalancing")
            elif code in RESET_ERRORS:
                self.reset_generation(f"Heartbeat: {for_code(code).name}")
            elif code:
                log.warning("Heartbeat for group %s: %s", self.group_id, for_code(code).name)

    # -- leaving ----------------------------------------------------------------------------

    def _leave(self, reason: str) -> None:
        generation = self.generation
        # A static member (group.instance.id) keeps its place across restarts: it does not
        # leave, as in Kafka; its session timeout removes it if it does not come back.
        if generation.member_id and self.coordinator is not None and self.group_instance_id is None:
            log.info(
                "Member %s sending LeaveGroup request to coordinator due to %s", generation.member_id, reason
            )
            body = LeaveGroupRequest(group_id=self.group_id, member_id=generation.member_id,
                                     members=[MemberIdentity(member_id=generation.member_id, group_instance_id=None)])  # fmt: skip
            try:
                self._request(self.coordinator, ApiKey.LEAVE_GROUP, body, LEAVE_GROUP_MAX_VERSION)
            except (_Retry, KafkaError) as e:
                log.info("LeaveGroup for group %s failed (the session timeout will remove us): %s",
                         self.group_id, e)  # fmt: skip
        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self._rejoin_needed = True

    def leave(self, reason: str = "the consumer is being closed") -> None:
        with self.lock:
            self._leave(reason)

    def close(self, timeout: float = 5.0) -> None:
        """Stop heartbeating, leave the group, close the client."""
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self.lock:
            try:
                self._leave("the consumer is being closed")
            finally:
                self.client.close()
