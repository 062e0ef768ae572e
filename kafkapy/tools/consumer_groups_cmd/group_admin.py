"""GroupAdmin: what kafkapy-consumer-groups asks of a cluster, over blocking BrokerConnections.

The admin client's group calls as Kafka's KafkaAdminClient makes them: groups are listed on
every broker, everything else about a group goes to its coordinator (FindCoordinator, retried
while the coordinator is loading or not yet available); log start/end offsets and offsets by
timestamp come from each partition's leader (ListOffsets).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from kafkapy.client.admin import parse_bootstrap
from kafkapy.client.connection import BrokerConnection
from kafkapy.client.sasl_client import PLAINTEXT, ClientSecurity
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkapy.protocol.consumer_protocol import assigned_partitions
from kafkapy.protocol.errors import KafkaError, TimeoutException, UnknownTopicOrPartitionException, for_code

# Versions whose shapes this module builds and reads (the broker may serve more).
_VERSIONS = {
    ApiKey.METADATA: (1, 8),
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.OFFSET_FETCH: (1, 7),
    ApiKey.OFFSET_COMMIT: (2, 7),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.LIST_OFFSETS: (1, 7),
}
_RETRIABLE_COORDINATOR = {14, 15, 16}  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR
EARLIEST, LATEST = EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: Node
    members: tuple[MemberDescription, ...]


class GroupAdmin:
    def __init__(
        self, bootstrap_servers: str, timeout_ms: int = 5000, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.timeout_ms = timeout_ms
        # TLS/SASL of every connection (the web console logs in with the user's credentials).
        self.security = security
        self._conns: dict[tuple[str, int], BrokerConnection] = {}
        self.brokers: dict[int, Node] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            with contextlib.suppress(Exception):
                conn.close()
        self._conns.clear()

    # -- plumbing -------------------------------------------------------------------------------

    def _send(self, address: tuple[str, int], api: ApiKey, body: Any) -> tuple[int, Any]:
        conn = self._conns.get(address)
        if conn is None:
            conn = BrokerConnection(
                address[0],
                address[1],
                "kafkapy-consumer-groups",
                self.timeout_ms / 1000 + 5,
                security=self.security,
            )
            conn.api_versions()
            self._conns[address] = conn
        version = conn.pick_version(api, _VERSIONS[api])
        try:
            return version, conn.send(api, version, body(version) if callable(body) else body)
        except Exception:
            self._conns.pop(address, None)
            raise

    def _deadline(self) -> float:
        return time.monotonic() + self.timeout_ms / 1000

    def metadata(self, topics: list[str] | None = None) -> dict[str, dict[int, int]]:
        """{topic: {partition: leader id}} (every topic when `topics` is None); fills `brokers`."""
        last: Exception | None = None
        for address in [*((n.host, n.port) for n in self.brokers.values()), *self.bootstrap]:
            try:
                _, md = self._send(
                    address,
                    ApiKey.METADATA,
                    {"topics": None if topics is None else [{"name": t} for t in topics]},
                )
            except Exception as e:
                last = e
                continue
            self.brokers = {b.node_id: Node(b.node_id, b.host, b.port) for b in md.brokers}
            return {
                t.name: {p.partition_index: p.leader_id for p in t.partitions}
                for t in md.topics
                if t.error_code == 0
            }
        raise TimeoutException(f"Timed out waiting for a node assignment: {last}")

    def _address(self, node: Node) -> tuple[str, int]:
        return node.host, node.port

    # -- coordinator ----------------------------------------------------------------------------

    def find_coordinator(self, group_id: str) -> Node:
        deadline = self._deadline()
        while True:
            self.metadata([])
            _, r = self._send(self.bootstrap[0], ApiKey.FIND_COORDINATOR, {"key": group_id, "key_type": 0})
            if r.error_code == 0:
                return Node(r.node_id, r.host, r.port)
            if r.error_code not in _RETRIABLE_COORDINATOR or time.monotonic() >= deadline:
                raise for_code(r.error_code, r.error_message or "")
            time.sleep(0.1)

    def _to_coordinator(self, group_id: str, api: ApiKey, body: Any, error_of: Any) -> tuple[int, Any]:
        """Send to the group's coordinator, finding it again while it moves or loads."""
        deadline = self._deadline()
        while True:
            node = self.find_coordinator(group_id)
            version, r = self._send(self._address(node), api, body)
            code = error_of(r)
            if code not in _RETRIABLE_COORDINATOR or time.monotonic() >= deadline:
                return version, r
            time.sleep(0.1)

    # -- groups ---------------------------------------------------------------------------------

    def list_groups(self, states: set[str] | None = None) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group (protocol "consumer" or none), from all brokers."""
        self.metadata([])
        found: dict[str, str] = {}
        for node in list(self.brokers.values()):
            version, r = self._send(
                self._address(node), ApiKey.LIST_GROUPS, {"states_filter": sorted(states or ())}
            )
            if r.error_code:
                raise for_code(r.error_code, "ListGroups failed")
            for g in r.groups:
                if g.protocol_type not in ("consumer", ""):
                    continue
                state = g.group_state if version >= 4 else ""
                if states and version < 4 and state.lower() not in states:
                    continue
                found[g.group_id] = state
        return sorted(found.items())

    def describe_group(self, group_id: str) -> GroupDescription:
        node = self.find_coordinator(group_id)
        _, r = self._to_coordinator(
            group_id, ApiKey.DESCRIBE_GROUPS, {"groups": [group_id]}, lambda r: r.groups[0].error_code
        )
        g = r.groups[0]
        if g.error_code:
            raise for_code(g.error_code, f"Error describing group {group_id}")
        members = tuple(
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                tuple(assigned_partitions(m.member_assignment)),
            )
            for m in g.members
        )
        return GroupDescription(group_id, g.group_state, g.protocol_type, g.protocol_data, node, members)

    def committed_offsets(self, group_id: str) -> dict[TP, int]:
        _, r = self._to_coordinator(
            group_id, ApiKey.OFFSET_FETCH, {"group_id": group_id, "topics": None}, lambda r: r.error_code
        )
        if r.error_code:
            raise for_code(r.error_code, f"Error fetching offsets of group {group_id}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in r.topics
            for p in t.partitions
            if p.error_code == 0 and p.committed_offset >= 0
        }

    def commit_offsets(self, group_id: str, offsets: dict[TP, int]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), off in sorted(offsets.items()):
            by_topic.setdefault(t, []).append(
                {"partition_index": p, "committed_offset": off, "committed_metadata": ""}
            )
        body = {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
        }
        _, r = self._to_coordinator(
            group_id,
            ApiKey.OFFSET_COMMIT,
            body,
            lambda r: next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0),
        )
        for t in r.topics:
            for p in t.partitions:
                if p.error_code:
                    raise for_code(p.error_code, f"Error committing offset of {t.name}-{p.partition_index}")

    def delete_groups(self, group_ids: list[str]) -> dict[str, KafkaError | None]:
        out: dict[str, KafkaError | None] = {}
        for group_id in group_ids:
            try:
                _, r = self._to_coordinator(
                    group_id,
                    ApiKey.DELETE_GROUPS,
                    {"groups_names": [group_id]},
                    lambda r: r.results[0].error_code,
                )
                code = r.results[0].error_code
                out[group_id] = for_code(code) if code else None
            except KafkaError as e:
                out[group_id] = e
        return out

    def delete_offsets(self, group_id: str, partitions: list[TP]) -> tuple[int, dict[TP, int]]:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append({"partition_index": p})
        body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        _, r = self._to_coordinator(group_id, ApiKey.OFFSET_DELETE, body, lambda r: r.error_code)
        return r.error_code, {
            (t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions
        }

    # -- log offsets ----------------------------------------------------------------------------

    def partitions_of(self, topic: str) -> list[int]:
        md = self.metadata([topic])
        if topic not in md:
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist")
        return sorted(md[topic])

    def list_offsets(self, partitions: list[TP], timestamp: int) -> dict[TP, int]:
        """Offsets for `timestamp` (EARLIEST, LATEST or ms) from each leader; -1: none at that time."""
        if not partitions:
            return {}
        leaders = self.metadata(sorted({t for t, _ in partitions}))
        by_leader: dict[int, dict[str, list[int]]] = {}
        for t, p in partitions:
            leader = leaders.get(t, {}).get(p, -1)
            by_leader.setdefault(leader, {}).setdefault(t, []).append(p)
        out: dict[TP, int] = {}
        for leader, topics in by_leader.items():
            if leader not in self.brokers:
                continue
            body = {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {"name": t, "partitions": [{"partition_index": p, "timestamp": timestamp} for p in ps]}
                    for t, ps in topics.items()
                ],
            }
            _, r = self._send(self._address(self.brokers[leader]), ApiKey.LIST_OFFSETS, body)
            for t in r.topics:
                for p in t.partitions:
                    if p.error_code == 0:
                        out[(t.name, p.partition_index)] = p.offset
        return out
