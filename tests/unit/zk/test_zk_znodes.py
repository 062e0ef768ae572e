"""Every znode's path and JSON, compared with the bytes a Kafka 2.8 broker writes."""

from __future__ import annotations

import base64
import json

import pytest

from kafkapy.zk.admin_znodes import (
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationSequenceZNode,
    LogDirEventNotificationSequenceZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)
from kafkapy.zk.cluster_znodes import (
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ControllerEpochZNode,
    ControllerZNode,
    EndPoint,
    FeatureInfo,
    FeatureZNode,
    FeatureZNodeStatus,
    generate_cluster_id,
    generate_topic_id,
)
from kafkapy.zk.config_znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ConfigType,
    desanitize,
    sanitize,
)
from kafkapy.zk.consumer_znodes import (
    ConsumerIdZNode,
    ConsumerOffsetZNode,
    ConsumerOwnerZNode,
    ConsumerRegistration,
)
from kafkapy.zk.errors import ZkDataError
from kafkapy.zk.topic_znodes import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
)
from kafkapy.zk.zk_data import PERSISTENT_ZK_PATHS

PLAINTEXT = EndPoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT")


def test_controller_znode_json_and_path() -> None:
    assert ControllerZNode.path() == "/controller"
    data = ControllerZNode.encode(1, 1614570663255)
    assert data == b'{"version":1,"brokerid":1,"timestamp":"1614570663255"}'
    assert ControllerZNode.decode(data) == 1


def test_controller_epoch_is_plain_decimal_text() -> None:
    assert ControllerEpochZNode.path() == "/controller_epoch"
    assert ControllerEpochZNode.encode(33) == b"33"
    assert ControllerEpochZNode.decode(b"33") == 33


def test_cluster_id_json_has_string_version() -> None:
    assert ClusterIdZNode.path() == "/cluster/id"
    data = ClusterIdZNode.encode("TVCEOykRSYeIzIqhu-r1Ow")
    assert data == b'{"version":"1","id":"TVCEOykRSYeIzIqhu-r1Ow"}'
    assert ClusterIdZNode.decode(data) == "TVCEOykRSYeIzIqhu-r1Ow"
    with pytest.raises(ZkDataError):
        ClusterIdZNode.decode(b"nonsense")


@pytest.mark.parametrize("gen", [generate_cluster_id, generate_topic_id])
def test_generated_ids_are_unpadded_base64url_uuids(gen) -> None:  # type: ignore[no-untyped-def]
    ids = {gen() for _ in range(200)}
    assert len(ids) == 200
    for i in ids:
        assert len(i) == 22 and "=" not in i
        assert len(base64.urlsafe_b64decode(i + "==")) == 16


def test_broker_paths() -> None:
    assert BrokerIdsZNode.path() == "/brokers/ids"
    assert BrokerIdZNode.path(3) == "/brokers/ids/3"
    assert BrokerSequenceIdZNode.path() == "/brokers/seqid"


def test_broker_registration_v5_is_kafkas_exact_json() -> None:
    broker = BrokerInfo(0, (PLAINTEXT,), timestamp=1614570663881)
    assert BrokerIdZNode.encode(broker) == (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],'
        b'"jmx_port":-1,"features":{},"host":"localhost","timestamp":"1614570663881","port":9092,"version":5}'
    )
    assert BrokerIdZNode.decode(0, BrokerIdZNode.encode(broker)) == broker


def test_broker_registration_with_rack_and_several_listeners() -> None:
    endpoints = (
        EndPoint("INTERNAL", "10.0.0.1", 9093, "SASL_PLAINTEXT"),
        EndPoint("CLIENT", "h", 9092, "PLAINTEXT"),
    )
    broker = BrokerInfo(7, endpoints, rack="dc1", timestamp=5)
    assert BrokerIdZNode.encode(broker) == (
        b'{"listener_security_protocol_map":{"INTERNAL":"SASL_PLAINTEXT","CLIENT":"PLAINTEXT"},'
        b'"endpoints":["INTERNAL://10.0.0.1:9093","CLIENT://h:9092"],"rack":"dc1","jmx_port":-1,"features":{},'
        b'"host":"h","timestamp":"5","port":9092,"version":5}'
    )
    assert BrokerIdZNode.decode(7, BrokerIdZNode.encode(broker)) == broker


def test_broker_without_plaintext_listener_has_null_host_and_port_minus_one() -> None:
    broker = BrokerInfo(1, (EndPoint("SSL", "h", 9093, "SSL"),), timestamp=1)
    js = json.loads(BrokerIdZNode.encode(broker))
    assert js["host"] is None and js["port"] == -1


def test_broker_registration_decodes_what_older_kafkas_wrote() -> None:
    v4 = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://zjj101:9092"],'
        b'"jmx_port":-1,"host":"zjj101","timestamp":"1614570663881","port":9092,"version":4}'
    )
    b = BrokerIdZNode.decode(101, v4)
    assert (b.id, b.version, b.endpoints, b.rack) == (
        101,
        4,
        (EndPoint("PLAINTEXT", "zjj101", 9092, "PLAINTEXT"),),
        None,
    )
    v2 = b'{"version":2,"host":"h","port":9092,"jmx_port":9999,"timestamp":"1","endpoints":["SSL://h:9093"]}'
    assert BrokerIdZNode.decode(2, v2).endpoints == (EndPoint("SSL", "h", 9093, "SSL"),)
    v1 = b'{"version":1,"host":"192.168.1.148","port":9092,"jmx_port":9999}'
    assert BrokerIdZNode.decode(1, v1).endpoints == (
        EndPoint("PLAINTEXT", "192.168.1.148", 9092, "PLAINTEXT"),
    )
    with pytest.raises(ZkDataError, match="Unsupported version of broker registration"):
        BrokerIdZNode.decode(5, b'{"version":0}')
    with pytest.raises(ZkDataError, match="registration for broker 5"):
        BrokerIdZNode.decode(5, b'{"version":4}')


def test_ipv6_endpoints_are_bracketed_and_parse_back() -> None:
    ep = EndPoint("PLAINTEXT", "::1", 9092, "PLAINTEXT")
    assert ep.connection_string == "PLAINTEXT://[::1]:9092"
    assert EndPoint.parse(ep.connection_string, {"PLAINTEXT": "PLAINTEXT"}) == ep


def test_topic_znode_v3_json_with_topic_id() -> None:
    data = TopicZNode.encode("EVqmhOhVQKOG3Hh4sZRZxQ", {0: [1, 2], 1: [2, 0]})
    assert TopicZNode.path("t") == "/brokers/topics/t"
    assert data == (
        b'{"removing_replicas":{},"partitions":{"0":[1,2],"1":[2,0]},'
        b'"topic_id":"EVqmhOhVQKOG3Hh4sZRZxQ","adding_replicas":{},"version":3}'
    )
    decoded = TopicZNode.decode("t", data)
    assert decoded.topic_id == "EVqmhOhVQKOG3Hh4sZRZxQ"
    assert decoded.replicas() == {0: [1, 2], 1: [2, 0]}


def test_topic_znode_keeps_reassignment_in_flight() -> None:
    ra = ReplicaAssignment((1, 2, 3), adding_replicas=(3,), removing_replicas=(1,))
    data = TopicZNode.encode(None, {0: ra})
    assert (
        data
        == b'{"removing_replicas":{"0":[1]},"partitions":{"0":[1,2,3]},"adding_replicas":{"0":[3]},"version":3}'
    )
    assert TopicZNode.decode("t", data).assignment == {0: ra}


def test_topic_znode_decodes_v1_and_v2_without_topic_id() -> None:
    v1 = TopicZNode.decode("t", b'{"version":1,"partitions":{"1":[101,103],"0":[103,102]}}')
    assert v1.topic_id is None and v1.replicas() == {0: [103, 102], 1: [101, 103]}
    v2 = TopicZNode.decode(
        "t", b'{"version":2,"partitions":{"0":[0]},"adding_replicas":{},"removing_replicas":{}}'
    )
    assert v2.topic_id is None and v2.replicas() == {0: [0]}


def test_partition_state_json_and_zk_version() -> None:
    tp = TopicPartition("t", 0)
    assert TopicPartitionStateZNode.path(tp) == "/brokers/topics/t/partitions/0/state"
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1)
    data = TopicPartitionStateZNode.encode(state)
    assert data == b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
    decoded = TopicPartitionStateZNode.decode(data, zk_version=4)
    assert decoded == LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,), 4), 1)
    assert TopicPartitionStateZNode.decode(b"", 0) is None


def test_leader_and_isr_transitions() -> None:
    lai = LeaderAndIsr(1, 3, (1, 2), zk_version=7)
    assert lai.new_leader_and_isr(2, [2]) == LeaderAndIsr(2, 4, (2,), 7)
    assert lai.new_isr([1]) == LeaderAndIsr(1, 3, (1,), 7)
    assert TopicPartition("t", 1) == ("t", 1) and str(TopicPartition("t", 1)) == "t-1"


def test_config_entity_znodes() -> None:
    assert ConfigEntityTypeZNode.path(ConfigType.TOPIC) == "/config/topics"
    assert ConfigEntityZNode.path("topics", "t") == "/config/topics/t"
    data = ConfigEntityZNode.encode({"retention.ms": "1000"})
    assert data == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert ConfigEntityZNode.decode(data) == {"retention.ms": "1000"}
    assert ConfigEntityZNode.decode(None) == {}


def test_config_change_notification() -> None:
    assert ConfigEntityChangeNotificationSequenceZNode.create_path() == "/config/changes/config_change_"
    data = ConfigEntityChangeNotificationSequenceZNode.encode("topics/t")
    assert data == b'{"version":2,"entity_path":"topics/t"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(data) == "topics/t"
    v1 = b'{"version":1,"entity_type":"clients","entity_name":"c"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(v1) == "clients/c"


def test_sanitizer_matches_kafkas() -> None:
    assert sanitize("user@example.com") == "user%40example.com"
    assert sanitize("a b*c~d") == "a%20b%2Ac~d"
    assert desanitize(sanitize("CN=x, O=y")) == "CN=x, O=y"


def test_isr_change_notification() -> None:
    assert IsrChangeNotificationSequenceZNode.path() == "/isr_change_notification/isr_change_"
    assert (
        IsrChangeNotificationSequenceZNode.path("0000000001")
        == "/isr_change_notification/isr_change_0000000001"
    )
    data = IsrChangeNotificationSequenceZNode.encode({TopicPartition("t", 0)})
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert IsrChangeNotificationSequenceZNode.decode(data) == {("t", 0)}
    assert (
        IsrChangeNotificationSequenceZNode.sequence_number("/isr_change_notification/isr_change_0000000042")
        == "0000000042"
    )


def test_log_dir_event_notification() -> None:
    assert LogDirEventNotificationSequenceZNode.path("1") == "/log_dir_event_notification/log_dir_event_1"
    data = LogDirEventNotificationSequenceZNode.encode(3)
    assert data == b'{"version":1,"broker":3,"event":1}'
    assert LogDirEventNotificationSequenceZNode.decode(data) == 3


def test_delete_topics_paths() -> None:
    assert DeleteTopicsZNode.path() == "/admin/delete_topics"
    assert DeleteTopicsTopicZNode.path("t") == "/admin/delete_topics/t"


def test_reassign_partitions_json() -> None:
    assert ReassignPartitionsZNode.path() == "/admin/reassign_partitions"
    data = ReassignPartitionsZNode.encode({TopicPartition("t", 0): [1, 2]})
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert ReassignPartitionsZNode.decode(data) == {("t", 0): [1, 2]}


def test_preferred_replica_election_json() -> None:
    assert PreferredReplicaElectionZNode.path() == "/admin/preferred_replica_election"
    data = PreferredReplicaElectionZNode.encode([TopicPartition("t", 1), TopicPartition("t", 0)])
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}'
    assert PreferredReplicaElectionZNode.decode(data) == {("t", 0), ("t", 1)}


def test_feature_znode() -> None:
    assert FeatureZNode.path() == "/feature"
    data = FeatureZNode.encode(FeatureInfo(FeatureZNodeStatus.DISABLED))
    assert data == b'{"features":{},"status":0,"version":1}'
    assert FeatureZNode.decode(data) == FeatureInfo(FeatureZNodeStatus.DISABLED, {})
    with pytest.raises(ZkDataError):
        FeatureZNode.decode(b'{"version":1}')


def test_legacy_consumer_znodes() -> None:
    assert ConsumerIdZNode.path("g", "c1") == "/consumers/g/ids/c1"
    assert ConsumerOwnerZNode.path("g", "t", 0) == "/consumers/g/owners/t/0"
    assert ConsumerOffsetZNode.path("g", "t", 0) == "/consumers/g/offsets/t/0"
    reg = ConsumerRegistration({"t": 1}, "static", 1400000000000)
    data = ConsumerIdZNode.encode(reg)
    assert data == b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1400000000000"}'
    assert ConsumerIdZNode.decode(data) == reg
    assert ConsumerOffsetZNode.encode(42) == b"42" and ConsumerOffsetZNode.decode(b"42") == 42


def test_persistent_paths_are_kafkas() -> None:
    assert PERSISTENT_ZK_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
    )
