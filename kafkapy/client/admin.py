"""A small blocking admin client over the wire protocol: what `kafkapy-topics --bootstrap-server`
needs of Kafka's AdminClient.

It bootstraps from any listed broker, learns the brokers and the controller from Metadata, sends
CreateTopics / CreatePartitions / DeleteTopics to the controller (in ZooKeeper mode only the
controller accepts them; NOT_CONTROLLER means "ask again after a metadata refresh") and
DescribeConfigs to any broker. Each API is sent at the highest version both sides speak, as the
broker's ApiVersions answer and our schemas allow. Error codes become the typed exceptions of
`kafkapy.protocol.errors`, carrying the broker's message (or Kafka's default one).

One request at a time, every wait bounded by the client's timeout: this serves command-line
tools, not applications.
"""

from __future__ import annotations

import base64
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.errors import (
    BY_CODE,
    LeaderNotAvailableException,
    NetworkException,
    NotControllerException,
    ProtocolError,
    TimeoutException,
    UnknownServerException,
    UnsupportedVersionException,
    for_code,
)
from kafkapy.protocol.generated.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kafkapy.protocol.generated.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kafkapy.protocol.generated.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkapy.protocol.generated.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kafkapy.protocol.generated.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkapy.protocol.messages import valid_versions

DEFAULT_TIMEOUT_MS = 30_000
RETRY_BACKOFF_S = 0.1
SOCKET_MARGIN_S = 5.0
TOPIC_RESOURCE = 2
DEFAULT_CONFIG_SOURCE = 5

# The newest version of each API this client fills in correctly (newer ones add fields we would
# leave at defaults with a different meaning, or change the request's shape).
MAX_VERSIONS: dict[ApiKey, int] = {
    ApiKey.METADATA: 12,
    ApiKey.CREATE_TOPICS: 7,
    ApiKey.DELETE_TOPICS: 6,
    ApiKey.CREATE_PARTITIONS: 3,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,  # v1's allowReplicationFactorChange is Kafka 3.x
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
}
# Versions below these lack what the tool relies on (Metadata v4: no auto-creation on describe).
MIN_VERSIONS: dict[ApiKey, int] = {ApiKey.METADATA: 4, ApiKey.DESCRIBE_CONFIGS: 1}

# Kafka's default messages (org.apache.kafka.common.protocol.Errors) for when a broker sends none.
DEFAULT_MESSAGES = {
    "TOPIC_ALREADY_EXISTS": "Topic with this name already exists.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "INVALID_TOPIC_EXCEPTION": "The request attempted to perform an operation on an invalid topic.",
    "INVALID_PARTITIONS": "Number of partitions is below 1.",
    "INVALID_REPLICATION_FACTOR": "Replication factor is below 1 or larger than the number of available brokers.",
    "INVALID_REPLICA_ASSIGNMENT": "Replica assignment is invalid.",
    "INVALID_CONFIG": "Configuration is invalid.",
    "NOT_CONTROLLER": "This is not the correct controller for this cluster.",
    "REQUEST_TIMED_OUT": "The request timed out.",
    "TOPIC_DELETION_DISABLED": "Topic deletion is disabled.",
    "NO_REASSIGNMENT_IN_PROGRESS": "No partition reassignment is in progress.",
    "INVALID_REQUEST": "This most likely occurs because of a request being malformed by the client library "
    "or the message was sent to an incompatible broker. See the broker logs for more details.",
}


class Connection(Protocol):
    """What the admin client needs of kafkapy.client.connection.BrokerConnection."""

    def send(self, api_key: int, version: int, body: Any) -> Any: ...

    def api_versions(self) -> dict[int, tuple[int, int]]: ...

    def pick_version(self, api_key: int, ours: tuple[int, int] | None = None) -> int: ...

    def close(self) -> None: ...


Connector = Callable[[str, int, float], Connection]


def _broker_connection(host: str, port: int, timeout_s: float) -> Connection:
    from kafkapy.client.connection import BrokerConnection

    return BrokerConnection(host, port, "kafkapy-admin", timeout_s)


def raise_for_error(code: int, message: str | None = None) -> None:
    """Raise the typed exception for a non-zero Kafka error code."""
    if code != 0:
        cls = BY_CODE.get(code, UnknownServerException)
        raise for_code(code, message or DEFAULT_MESSAGES.get(cls.name, cls.name))


def our_versions(api_key: ApiKey) -> tuple[int, int]:
    """The versions of `api_key` this client can send: our schemas, within MIN/MAX_VERSIONS."""
    low, high = valid_versions(api_key) or (0, -1)
    return max(low, MIN_VERSIONS.get(api_key, low)), min(high, MAX_VERSIONS.get(api_key, high))


def uuid_to_kafka_string(value: uuid.UUID | None) -> str | None:
    """Kafka's Uuid.toString: url-safe base64 without padding; None for the zero (absent) id."""
    if value is None or value == ZERO_UUID:
        return None
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """'h1:9092,h2:9092' -> [('h1', 9092), ('h2', 9092)]; '[::1]:9092' keeps its IPv6 host."""
    result = []
    for item in (s.strip() for s in servers.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"Invalid url in bootstrap.servers: {item}")
        result.append((host.strip("[]"), int(port)))
    if not result:
        raise ValueError("No resolvable bootstrap urls given in bootstrap.servers")
    return result


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int | None  # None: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: str | None
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    is_default: bool


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: the broker's num.partitions
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    replica_assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ClusterView:
    brokers: dict[int, tuple[str, int]]
    controller_id: int | None


class AdminClient:
    def __init__(
        self,
        bootstrap_servers: str,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        connector: Connector = _broker_connection,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.timeout_ms = timeout_ms
        self._connector = connector
        self._connections: dict[tuple[str, int], Connection] = {}
        self._cluster: ClusterView | None = None

    def close(self) -> None:
        for conn in self._connections.values():
            with contextlib.suppress(Exception):
                conn.close()
        self._connections.clear()

    # -- connections and versions -------------------------------------------------------------

    def _connection(self, address: tuple[str, int]) -> Connection:
        conn = self._connections.get(address)
        if conn is None:
            # The broker may take the whole timeout_ms of a request before answering it.
            conn = self._connector(address[0], address[1], self.timeout_ms / 1000 + SOCKET_MARGIN_S)
            self._connections[address] = conn
            conn.api_versions()
        return conn

    def _drop(self, address: tuple[str, int]) -> None:
        conn = self._connections.pop(address, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _send(
        self, address: tuple[str, int], api_key: ApiKey, build: Callable[[int], Any]
    ) -> tuple[int, Any]:
        """Send build(version) at the highest version both sides speak; a connection that failed
        is dropped (the next request opens a new one)."""
        try:
            conn = self._connection(address)
            version = conn.pick_version(api_key, our_versions(api_key))
            return version, conn.send(api_key, version, build(version))
        except UnsupportedVersionException:
            raise
        except Exception:
            self._drop(address)
            raise

    def _deadline(self) -> float:
        return time.monotonic() + self.timeout_ms / 1000

    # -- metadata -----------------------------------------------------------------------------

    def _metadata(self, topics: Sequence[str] | None, call: str) -> Any:
        """A Metadata answer from any reachable broker (known brokers first, then bootstrap)."""
        deadline = self._deadline()
        last: Exception | None = None
        while True:
            known = list(self._cluster.brokers.values()) if self._cluster else []
            for address in dict.fromkeys([*known, *self.bootstrap]):
                try:
                    _, md = self._send(
                        address,
                        ApiKey.METADATA,
                        lambda v: MetadataRequest(
                            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
                            allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False,
                        ),
                    )
                except Exception as e:  # unreachable or refusing: try the next broker
                    last = e
                    continue
                self._cluster = ClusterView(
                    {b.node_id: (b.host, b.port) for b in md.brokers},
                    md.controller_id if md.controller_id >= 0 else None,
                )
                return md
            if time.monotonic() >= deadline:
                raise TimeoutException(f"Timed out waiting for a node assignment. Call: {call}") from last
            time.sleep(RETRY_BACKOFF_S)

    def metadata(self, topics: Sequence[str] | None, call: str) -> Any:
        """The raw Metadata answer (brokers, topics, partitions and their leaders), for tools that
        address partition leaders themselves (DeleteRecords, ListOffsets)."""
        return self._metadata(topics, call)

    def send_to_broker(self, broker_id: int, api_key: ApiKey, build: Callable[[int], Any]) -> tuple[int, Any]:
        """Send build(version) to one broker named by the last metadata; (version, answer)."""
        address = self._cluster.brokers.get(broker_id) if self._cluster else None
        if address is None:
            raise LeaderNotAvailableException(f"Broker {broker_id} is not in the cluster's metadata")
        return self._send(address, api_key, build)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        md = self._metadata(None, "listTopics")
        return sorted(
            t.name for t in md.topics if t.error_code == 0 and (include_internal or not t.is_internal)
        )

    def live_brokers(self) -> set[int]:
        return {b.node_id for b in self._metadata([], "describeCluster").brokers}

    def broker_racks(self) -> dict[int, str | None]:
        """Live broker id -> its broker.rack (None without one)."""
        return {b.node_id: b.rack for b in self._metadata([], "describeCluster").brokers}

    def describe_topics(self, names: Sequence[str]) -> dict[str, TopicInfo]:
        md = self._metadata(list(names), "describeTopics")
        result = {}
        for t in md.topics:
            raise_for_error(t.error_code, None)
            partitions = tuple(
                sorted(
                    (
                        PartitionInfo(
                            p.partition_index,
                            p.leader_id if p.leader_id >= 0 else None,
                            tuple(p.replica_nodes),
                            tuple(p.isr_nodes),
                        )
                        for p in t.partitions
                    ),
                    key=lambda p: p.partition,
                )
            )
            result[t.name] = TopicInfo(
                t.name, uuid_to_kafka_string(t.topic_id), bool(t.is_internal), partitions
            )
        return result

    def describe_configs(self, topics: Sequence[str]) -> dict[str, list[ConfigEntry]]:
        """Every config of each topic, with whether it is the default (Kafka's ConfigEntry.isDefault:
        config_source DEFAULT_CONFIG; a server.properties value is *not* a default)."""
        self._metadata([], "describeConfigs")
        address = self._any_broker()
        version, answer = self._send(
            address,
            ApiKey.DESCRIBE_CONFIGS,
            lambda v: DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(
                        resource_type=TOPIC_RESOURCE, resource_name=t, configuration_keys=None
                    )
                    for t in topics
                ],
                include_synonyms=False,
                include_documentation=False,
            ),
        )
        result = {}
        for r in answer.results:
            raise_for_error(r.error_code, r.error_message)
            result[r.resource_name] = [
                ConfigEntry(c.name, c.value, c.config_source == DEFAULT_CONFIG_SOURCE) for c in r.configs
            ]
        return result

    def send_to_node(
        self, node_id: int | None, api_key: ApiKey, call: str, build: Callable[[int], Any]
    ) -> Any:
        """One request to broker `node_id` (None: any broker), e.g. a per-broker config resource,
        which only that broker answers for."""
        self._metadata([], call)
        address = (
            self._any_broker()
            if node_id is None
            else (self._cluster.brokers.get(node_id) if self._cluster else None)
        )
        if address is None:
            raise TimeoutException(f"Timed out waiting for a node assignment. Call: {call}")
        return self._send(address, api_key, build)[1]

    def _any_broker(self) -> tuple[str, int]:
        if self._cluster and self._cluster.brokers:
            return next(iter(self._cluster.brokers.values()))
        return self.bootstrap[0]

    # -- controller requests ------------------------------------------------------------------

    def _to_controller(
        self,
        api_key: ApiKey,
        call: str,
        build: Callable[[int], Any],
        results: Callable[[Any], list[tuple[int, str | None]]],
    ) -> None:
        """Send to the controller until no result says NOT_CONTROLLER, then raise the first error."""
        answer = self.controller_call(api_key, call, build, results)
        for code, message in results(answer):
            raise_for_error(code, message)

    def controller_call(
        self,
        api_key: ApiKey,
        call: str,
        build: Callable[[int], Any],
        results: Callable[[Any], list[tuple[int, str | None]]],
    ) -> Any:
        """The controller's answer once none of its `results` says NOT_CONTROLLER (the controller
        moved: ask the metadata again); other errors are the caller's to read."""
        deadline = self._deadline()
        while True:
            md = self._metadata([], call)
            address = self._cluster.brokers.get(md.controller_id) if self._cluster else None
            errors: list[tuple[int, str | None]] = []
            answer: Any = None
            if address is not None:
                try:
                    _, answer = self._send(address, api_key, build)
                    errors = results(answer)
                except (NetworkException, ProtocolError):  # the controller went away: find the new one
                    errors = [(NotControllerException.code, None)]
            else:
                errors = [(NotControllerException.code, None)]
            if all(code != NotControllerException.code for code, _ in errors):
                return answer
            if time.monotonic() >= deadline:
                raise TimeoutException(f"Timed out waiting for a node assignment. Call: {call}")
            time.sleep(RETRY_BACKOFF_S)

    def create_topic(self, topic: NewTopic, validate_only: bool = False) -> None:
        assignments = [
            CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
            for p, b in sorted((topic.replica_assignment or {}).items())
        ]
        body = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=topic.name,
                    # With an assignment both stay -1 unless given: the broker refuses the mix.
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                    assignments=assignments,
                    configs=[CreatableTopicConfig(name=k, value=v) for k, v in topic.configs.items()],
                )
            ],
            timeout_ms=self.timeout_ms,
            validate_only=validate_only,
        )
        self._to_controller(
            ApiKey.CREATE_TOPICS,
            "createTopics",
            lambda v: body,
            lambda a: [(t.error_code, t.error_message) for t in a.topics],
        )

    def create_partitions(self, counts: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]]) -> None:
        """{topic: (new total count, replicas of each new partition or None)}."""
        body = CreatePartitionsRequest(
            topics=[
                CreatePartitionsTopic(
                    name=t,
                    count=n,
                    assignments=None
                    if a is None
                    else [CreatePartitionsAssignment(broker_ids=list(b)) for b in a],
                )
                for t, (n, a) in counts.items()
            ],
            timeout_ms=self.timeout_ms,
            validate_only=False,
        )
        self._to_controller(
            ApiKey.CREATE_PARTITIONS,
            "createPartitions",
            lambda v: body,
            lambda a: [(r.error_code, r.error_message) for r in a.results],
        )

    def delete_topics(self, names: Sequence[str]) -> None:
        def build(version: int) -> DeleteTopicsRequest:
            # v6 names topics in `topics` (by name or id); older versions in `topic_names`.
            return DeleteTopicsRequest(
                topics=[DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in names],
                topic_names=list(names),
                timeout_ms=self.timeout_ms,
            )

        self._to_controller(
            ApiKey.DELETE_TOPICS,
            "deleteTopics",
            build,
            lambda a: [(r.error_code, r.error_message) for r in a.responses],
        )
