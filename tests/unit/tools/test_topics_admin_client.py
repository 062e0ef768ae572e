"""The admin client behind `kafkapy-topics --bootstrap-server`, against fake brokers.

The fakes answer with real response Messages (encoded then decoded by our codec), so field
names and versions are checked as on the wire; no sockets.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kafkapy.client.admin import AdminClient, NewTopic, parse_bootstrap, uuid_to_kafka_string
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    InvalidReplicationFactorException,
    NetworkException,
    TimeoutException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.message import Message
from kafkapy.protocol.messages import decode_response, encode_request, encode_response

Handler = Callable[[int, Any], dict[str, Any]]


def wire(api_key: int, version: int, body: dict[str, Any]) -> Any:
    return decode_response(api_key, version, encode_response(api_key, version, body))


class FakeBroker:
    """One broker: serves `versions`, answers with `handlers[api_key](version, request)`."""

    def __init__(
        self, node_id: int, cluster: FakeCluster, versions: dict[int, tuple[int, int]] | None = None
    ):
        self.node_id = node_id
        self.cluster = cluster
        self.versions = versions or {
            ApiKey.METADATA: (0, 12),
            ApiKey.CREATE_TOPICS: (2, 7),
            ApiKey.DELETE_TOPICS: (1, 6),
            ApiKey.CREATE_PARTITIONS: (0, 3),
            ApiKey.DESCRIBE_CONFIGS: (1, 4),
        }
        self.requests: list[tuple[int, int, Any]] = []


class FakeConnection:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.closed = False

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return {int(k): v for k, v in self.broker.versions.items()}

    def pick_version(self, api_key: int, ours: tuple[int, int] | None = None) -> int:
        assert ours is not None
        theirs = self.broker.versions[ApiKey(api_key)]
        return min(ours[1], theirs[1])

    def send(self, api_key: int, version: int, body: Message) -> Any:
        encode_request(api_key, version, body)  # the typed request must encode at this version
        body = body.to_dict()  # plain data for the fake handlers
        self.broker.requests.append((api_key, version, body))
        answer = self.broker.cluster.handlers[ApiKey(api_key)](self.broker, version, body)
        return wire(api_key, version, answer)

    def close(self) -> None:
        self.closed = True


class FakeCluster:
    def __init__(self, n: int = 1, controller: int = 0) -> None:
        self.brokers = {i: FakeBroker(i, self) for i in range(n)}
        self.controller = controller
        self.down: set[int] = set()
        self.topics: dict[str, dict[str, Any]] = {}
        self.handlers: dict[ApiKey, Callable[[FakeBroker, int, Any], dict[str, Any]]] = {
            ApiKey.METADATA: self.metadata
        }

    def connect(self, host: str, port: int, timeout: float) -> FakeConnection:
        broker_id = port - 9000
        if broker_id in self.down or broker_id not in self.brokers:
            raise NetworkException(f"cannot connect to {host}:{port}")
        return FakeConnection(self.brokers[broker_id])

    def metadata(self, broker: FakeBroker, version: int, body: Any) -> dict[str, Any]:
        names = list(self.topics) if body["topics"] is None else [t["name"] for t in body["topics"]]
        topics = []
        for name in names:
            if name not in self.topics:
                topics.append({"name": name, "error_code": UnknownTopicOrPartitionException.code})
            else:
                topics.append({"name": name, **self.topics[name]})
        return {
            "brokers": [{"node_id": i, "host": "127.0.0.1", "port": 9000 + i} for i in self.brokers],
            "controller_id": self.controller,
            "topics": topics,
        }

    def client(self, timeout_ms: int = 2000) -> AdminClient:
        return AdminClient("127.0.0.1:9000", timeout_ms, connector=self.connect)


def test_bootstrap_list_parses_hosts_and_ports() -> None:
    assert parse_bootstrap("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]
    with pytest.raises(ValueError):
        parse_bootstrap("nohost")


def test_topic_ids_print_as_kafka_base64() -> None:
    value = uuid.UUID("c5bdac7e-6514-4e18-9fff-a2990c98745a")
    assert uuid_to_kafka_string(value) == "xb2sfmUUThif_6KZDJh0Wg"
    assert uuid_to_kafka_string(uuid.UUID(int=0)) is None


def test_list_topics_hides_internal_topics_unless_asked() -> None:
    cluster = FakeCluster()
    cluster.topics = {"b": {}, "a": {}, "__consumer_offsets": {"is_internal": True}}
    admin = cluster.client()
    assert admin.list_topics() == ["a", "b"]
    assert admin.list_topics(include_internal=True) == ["__consumer_offsets", "a", "b"]
    api_key, version, body = cluster.brokers[0].requests[0]
    assert (api_key, version) == (ApiKey.METADATA, 12)
    assert body["allow_auto_topic_creation"] is False  # describing must never create


def test_describe_topics_maps_no_leader_to_none_and_sorts_partitions() -> None:
    cluster = FakeCluster()
    topic_id = uuid.uuid4()
    cluster.topics = {
        "t": {
            "topic_id": topic_id,
            "partitions": [
                {"partition_index": 1, "leader_id": -1, "replica_nodes": [0], "isr_nodes": []},
                {"partition_index": 0, "leader_id": 0, "replica_nodes": [0], "isr_nodes": [0]},
            ],
        }
    }
    info = cluster.client().describe_topics(["t"])["t"]
    assert info.topic_id == uuid_to_kafka_string(topic_id)
    assert [(p.partition, p.leader, p.isr) for p in info.partitions] == [(0, 0, (0,)), (1, None, ())]


def test_describe_topics_of_an_unknown_topic_raises() -> None:
    with pytest.raises(UnknownTopicOrPartitionException, match="does not host this topic-partition"):
        FakeCluster().client().describe_topics(["nope"])


def test_create_goes_to_the_controller_at_the_highest_common_version() -> None:
    cluster = FakeCluster(n=2, controller=1)
    cluster.brokers[1].versions[ApiKey.CREATE_TOPICS] = (2, 4)
    cluster.handlers[ApiKey.CREATE_TOPICS] = lambda b, v, body: {"topics": [{"name": "t", "error_code": 0}]}
    cluster.client().create_topic(NewTopic("t", 3, 1, configs={"segment.bytes": "1000"}))
    assert cluster.brokers[0].requests[-1][0] == ApiKey.METADATA
    api_key, version, body = cluster.brokers[1].requests[-1]
    assert (api_key, version) == (ApiKey.CREATE_TOPICS, 4)
    assert body["topics"][0]["num_partitions"] == 3
    assert body["topics"][0]["configs"] == [{"name": "segment.bytes", "value": "1000"}]


def test_create_with_assignment_leaves_counts_to_the_assignment() -> None:
    cluster = FakeCluster()
    cluster.handlers[ApiKey.CREATE_TOPICS] = lambda b, v, body: {"topics": [{"name": "t", "error_code": 0}]}
    cluster.client().create_topic(NewTopic("t", replica_assignment={1: [0], 0: [0]}))
    sent = cluster.brokers[0].requests[-1][2]["topics"][0]
    assert (sent["num_partitions"], sent["replication_factor"]) == (-1, -1)
    assert sent["assignments"] == [
        {"partition_index": 0, "broker_ids": [0]},
        {"partition_index": 1, "broker_ids": [0]},
    ]


def test_not_controller_refreshes_metadata_and_retries() -> None:
    cluster = FakeCluster(n=2, controller=0)
    answers = iter([41, 0])  # NOT_CONTROLLER, then success

    def create(broker: FakeBroker, version: int, body: Any) -> dict[str, Any]:
        code = next(answers)
        cluster.controller = 1
        return {"topics": [{"name": "t", "error_code": code}]}

    cluster.handlers[ApiKey.CREATE_TOPICS] = create
    cluster.client().create_topic(NewTopic("t", 1, 1))
    assert [r[0] for r in cluster.brokers[1].requests if r[0] == ApiKey.CREATE_TOPICS] == [
        ApiKey.CREATE_TOPICS
    ]


def test_broker_errors_raise_typed_exceptions_with_the_broker_message() -> None:
    cluster = FakeCluster()
    message = "Replication factor: 3 larger than available brokers: 1."
    cluster.handlers[ApiKey.CREATE_TOPICS] = lambda b, v, body: {
        "topics": [
            {"name": "t", "error_code": InvalidReplicationFactorException.code, "error_message": message}
        ]
    }
    with pytest.raises(InvalidReplicationFactorException) as e:
        cluster.client().create_topic(NewTopic("t", 1, 3))
    assert str(e.value) == message


def test_errors_without_a_message_get_kafkas_default_message() -> None:
    cluster = FakeCluster()
    cluster.handlers[ApiKey.CREATE_TOPICS] = lambda b, v, body: {
        "topics": [{"name": "t", "error_code": TopicExistsException.code}]
    }
    with pytest.raises(TopicExistsException, match="^Topic with this name already exists.$"):
        cluster.client().create_topic(NewTopic("t"))


def test_delete_fills_names_for_old_and_new_versions() -> None:
    for high in (4, 6):
        cluster = FakeCluster()
        cluster.brokers[0].versions[ApiKey.DELETE_TOPICS] = (1, high)
        cluster.handlers[ApiKey.DELETE_TOPICS] = lambda b, v, body: {
            "responses": [{"name": "t", "error_code": 0}]
        }
        cluster.client().delete_topics(["t"])
        _, version, _ = cluster.brokers[0].requests[-1]
        assert version == high


def test_create_partitions_sends_new_total_and_new_replicas() -> None:
    cluster = FakeCluster()
    cluster.handlers[ApiKey.CREATE_PARTITIONS] = lambda b, v, body: {
        "results": [{"name": "t", "error_code": 0}]
    }
    cluster.client().create_partitions({"t": (3, [[0], [0]]), "u": (5, None)})
    body = cluster.brokers[0].requests[-1][2]
    assert body["topics"] == [
        {"name": "t", "count": 3, "assignments": [{"broker_ids": [0]}, {"broker_ids": [0]}]},
        {"name": "u", "count": 5, "assignments": None},
    ]


def test_describe_configs_marks_only_default_sourced_entries_as_default() -> None:
    cluster = FakeCluster()
    cluster.handlers[ApiKey.DESCRIBE_CONFIGS] = lambda b, v, body: {
        "results": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "configs": [
                    {"name": "segment.bytes", "value": "1000", "config_source": 1},
                    {"name": "retention.ms", "value": "5", "config_source": 4},  # server.properties
                    {"name": "flush.ms", "value": "9", "config_source": 5},
                ],
            }
        ]
    }
    entries = cluster.client().describe_configs(["t"])["t"]
    assert [(e.name, e.is_default) for e in entries] == [
        ("segment.bytes", False),
        ("retention.ms", False),
        ("flush.ms", True),
    ]


def test_unreachable_bootstrap_times_out_with_kafkas_message() -> None:
    cluster = FakeCluster()
    cluster.down.add(0)
    with pytest.raises(TimeoutException, match="^Timed out waiting for a node assignment. Call: listTopics$"):
        cluster.client(timeout_ms=300).list_topics()


def test_close_closes_every_connection() -> None:
    cluster = FakeCluster()
    admin = cluster.client()
    admin.list_topics()
    conns = list(admin._connections.values())
    admin.close()
    assert conns and all(c.closed for c in conns)  # type: ignore[attr-defined]
