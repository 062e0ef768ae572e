"""Hostile counts in admin requests are refused before the broker allocates for them.

Issue 19's reproduction: one CreateTopics v2 for one topic with num_partitions = 10^9 took a
broker from 101 MB to over 4 GB within a second, because it built the replica assignment
before refusing anything; with validate_only and 10^7 it still allocated 50 MB. Each test
sends the raw request and checks Kafka's error code, and that the broker's RSS stayed flat.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol import framing
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    InvalidPartitionsException,
    InvalidRequestException,
    InvalidTopicException,
    TopicExistsException,
    for_code,
)
from kafkapy.protocol.record_codec import build_batch
from kafkapy.testing import KafkapyCluster

# Refusing a request allocates next to nothing; 20 MB leaves room for the allocator's noise.
RSS_SLACK_KB = 20 * 1024


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


@pytest.fixture
def conn(kafkapy_shared_cluster: KafkapyCluster) -> Iterator[BrokerConnection]:
    broker = kafkapy_shared_cluster.broker(0)
    with BrokerConnection("127.0.0.1", broker.port, timeout=30) as c:
        yield c


def _pid(cluster: KafkapyCluster) -> int:
    process = cluster.broker(0).process
    assert process is not None
    return process.pid


def _create(
    conn: BrokerConnection,
    name: str,
    partitions: int,
    validate_only: bool = False,
    assignments: list[dict[str, object]] | None = None,
    rf: int = 1,
) -> tuple[int, str | None]:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": rf,
                "assignments": assignments or [],
                "configs": [],
            }
        ],
        "timeout_ms": 10000,
        "validate_only": validate_only,
    }
    response = conn.send(ApiKey.CREATE_TOPICS, 2, body)
    assert response is not None
    topic = response.topics[0]
    return topic.error_code, topic.error_message


@pytest.mark.timeout(60)
@pytest.mark.parametrize("partitions, validate_only", [(1_000_000_000, False), (10_000_000, True)])
def test_create_topics_with_a_hostile_partition_count_is_refused_with_flat_rss(
    kafkapy_shared_cluster: KafkapyCluster, conn: BrokerConnection, partitions: int, validate_only: bool
) -> None:
    pid = _pid(kafkapy_shared_cluster)
    conn.send(ApiKey.API_VERSIONS, 0, {})  # the connection's own buffers exist before measuring
    before = rss_kb(pid)
    code, message = _create(conn, f"bounds-huge-{partitions}", partitions, validate_only)
    time.sleep(0.2)
    after = rss_kb(pid)
    assert code == InvalidPartitionsException.code
    assert message is not None and "kafkapy.topic.max.partitions" in message
    assert after - before < RSS_SLACK_KB, f"RSS grew from {before} kB to {after} kB"
    print(
        f"\nCreateTopics {partitions} partitions (validate_only={validate_only}): RSS {before} -> {after} kB"
    )


@pytest.mark.timeout(60)
def test_create_topics_refuses_a_count_together_with_an_assignment(conn: BrokerConnection) -> None:
    code, message = _create(conn, "bounds-mixed", 3, assignments=[{"partition_index": 0, "broker_ids": [0]}])
    assert code == InvalidRequestException.code
    assert message is not None and "Both cannot be used at the same time" in message


@pytest.mark.timeout(60)
def test_create_partitions_with_a_hostile_count_is_refused_with_flat_rss(
    kafkapy_shared_cluster: KafkapyCluster, conn: BrokerConnection
) -> None:
    code, _ = _create(conn, "bounds-grow", 1)
    assert code in (0, TopicExistsException.code)
    pid = _pid(kafkapy_shared_cluster)
    before = rss_kb(pid)
    for validate_only in (True, False):
        body = {
            "topics": [{"name": "bounds-grow", "count": 1_000_000_000, "assignments": None}],
            "timeout_ms": 10000,
            "validate_only": validate_only,
        }
        response = conn.send(ApiKey.CREATE_PARTITIONS, 1, body)
        assert response is not None
        result = response.results[0]
        assert result.error_code == InvalidPartitionsException.code
        assert "kafkapy.topic.max.partitions" in (result.error_message or "")
    time.sleep(0.2)
    after = rss_kb(pid)
    assert after - before < RSS_SLACK_KB, f"RSS grew from {before} kB to {after} kB"


@pytest.mark.timeout(60)
def test_produce_to_an_internal_topic_is_refused(conn: BrokerConnection) -> None:
    """A client's batch in __consumer_offsets would be inflated by the group coordinator's
    loading: Kafka refuses the append with INVALID_TOPIC_EXCEPTION, and so do we."""
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "__consumer_offsets",
                "partition_data": [{"index": 0, "records": bytes(build_batch([(None, b"x", [], 1)]))}],
            }
        ],
    }
    response = conn.send(ApiKey.PRODUCE, 7, body)
    assert response is not None
    partition = response.responses[0].partition_responses[0]
    assert partition.error_code == InvalidTopicException.code


@pytest.mark.timeout(60)
def test_metadata_answers_a_topic_named_many_times_once(conn: BrokerConnection) -> None:
    """Kafka reads the requested topics into a Set; a list repeating __consumer_offsets-sized
    topics would otherwise multiply the answer."""
    code, _ = _create(conn, "bounds-meta", 1)
    assert code in (0, TopicExistsException.code)
    body = {"topics": [{"name": "bounds-meta"}] * 5000, "allow_auto_topic_creation": False}
    response = conn.send(ApiKey.METADATA, 9, body)
    assert response is not None
    assert [t.name for t in response.topics] == ["bounds-meta"]


@pytest.mark.timeout(60)
def test_describe_configs_refuses_repeats_of_one_resource(conn: BrokerConnection) -> None:
    """Seven request bytes describe ~200 broker configs: 20,000 copies would have built a
    response of hundreds of megabytes."""
    # Broker 0 itself: the name "" is the cluster-wide default, which holds only dynamic defaults.
    resource = {"resource_type": 4, "resource_name": "0", "configuration_keys": None}
    response = conn.send(
        ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [resource] * 20000, "include_synonyms": True}
    )
    assert response is not None
    first, *repeats = response.results
    assert first.error_code == 0 and len(first.configs) > 50
    assert len(repeats) == 19999
    assert {(r.error_code, len(r.configs)) for r in repeats} == {(InvalidRequestException.code, 0)}


@pytest.mark.timeout(60)
def test_describe_groups_refuses_repeats_of_one_group(conn: BrokerConnection) -> None:
    deadline = time.monotonic() + 30
    while True:  # on a loaded machine the offsets topic may still be loading: ask again
        response = conn.send(ApiKey.DESCRIBE_GROUPS, 1, {"groups": ["bounds-group"] * 1000})
        assert response is not None
        if not for_code(response.groups[0].error_code).retriable or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert response.groups[0].error_code != InvalidRequestException.code
    assert {g.error_code for g in response.groups[1:]} == {InvalidRequestException.code}


@pytest.mark.timeout(60)
def test_fetch_of_one_partition_named_many_times_reads_it_once(conn: BrokerConnection) -> None:
    """Kafka's fetch data is a map by partition: 1,000 copies of one partition with
    partition_max_bytes each would otherwise send its data 1,000 times."""
    code, _ = _create(conn, "bounds-fetch", 1)
    assert code in (0, TopicExistsException.code)
    batch = bytes(build_batch([(None, b"x" * 1000, [], 1)]))
    produce = {"acks": 1, "timeout_ms": 5000,
               "topic_data": [{"name": "bounds-fetch", "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
    deadline = time.monotonic() + 30
    while True:  # the new topic's leader may take a moment
        produced = conn.send(ApiKey.PRODUCE, 7, produce)
        assert produced is not None
        if produced.responses[0].partition_responses[0].error_code == 0:
            break
        assert time.monotonic() < deadline, "could not produce to bounds-fetch"
        time.sleep(0.2)
    partition = {"partition": 0, "fetch_offset": 0, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 << 20, "isolation_level": 0,
            "topics": [{"topic": "bounds-fetch", "partitions": [partition] * 1000}]}  # fmt: skip
    response = conn.send(ApiKey.FETCH, 11, body)
    assert response is not None
    partitions = [p for t in response.responses for p in t.partitions]
    assert len(partitions) == 1 and partitions[0].error_code == 0 and partitions[0].records


@pytest.mark.timeout(60)
def test_a_request_with_millions_of_array_elements_is_refused_before_decoding_them(
    kafkapy_shared_cluster: KafkapyCluster,
) -> None:
    """A 10 MB OffsetDelete naming 2.5 million partitions decodes into ~214 MB of Python
    objects; kafkapy.request.max.elements (2,000,000) refuses it as a malformed request: the
    connection is closed, and the broker's RSS grows by little more than the frame."""
    n = 2_500_000
    body = (
        struct.pack(">h", 1) + b"g" + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
        + struct.pack(">i", n) + struct.pack(f">{n}i", *range(n))
    )  # fmt: skip
    frame = framing.encode_request_frame(ApiKey.OFFSET_DELETE, 0, 7, "bounds", body)
    pid = _pid(kafkapy_shared_cluster)
    before = rss_kb(pid)
    with socket.create_connection(("127.0.0.1", kafkapy_shared_cluster.broker(0).port), timeout=30) as sock:
        sock.sendall(frame)
        assert sock.recv(4096) == b"", "the broker answered instead of closing the connection"
    after = rss_kb(pid)
    print(f"\nOffsetDelete with {n} partitions ({len(frame) >> 20} MB): RSS {before} -> {after} kB")
    assert after - before < 60 * 1024, f"RSS grew from {before} kB to {after} kB"
