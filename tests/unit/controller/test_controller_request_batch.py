"""ControllerBrokerRequestBatch: what goes to which broker, and that it encodes at the
inter-broker versions (LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4)."""

import uuid

import pytest
from controller_fakes import assign, broker, make_batch, make_context

from kafkapy.protocol.generated.leader_and_isr_response import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from kafkapy.protocol.generated.stop_replica_response import StopReplicaPartitionError, StopReplicaResponse
from kafkapy.protocol.messages import decode_request, encode_request
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.leader_and_isr import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from kafkapy.server.controller.request_batch import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    IllegalBatchStateError,
    topic_id_to_uuid,
)

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def roundtrip(sent):
    return decode_request(sent.api_key, sent.version, encode_request(sent.api_key, sent.version, sent.body))


def test_topic_id_string_becomes_the_16_byte_uuid():
    assert topic_id_to_uuid(TOPIC_ID) == uuid.UUID(int=1)
    assert topic_id_to_uuid(None) == uuid.UUID(int=0)


def test_leader_and_isr_request_per_broker_with_live_leaders_and_topic_id():
    ctx = make_context([0, 1, 2])
    ctx.live_brokers[1] = broker(1, port=19092)
    batch, rec, _ = make_batch(ctx, controller_id=2)
    [tp] = assign(ctx, "t", {0: [1, 0]}, TOPIC_ID)
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 0), 9), 3)
    ctx.partition_leadership_info[tp] = state
    batch.new_batch()
    batch.add_leader_and_isr_request_for_brokers(
        [1, 0, -1], tp, state, ReplicaAssignment((1, 0), (), ()), is_new=True
    )
    batch.send_requests_to_brokers(controller_epoch=5)
    lisr = rec.of(LEADER_AND_ISR)
    assert sorted(s.broker_id for s in lisr) == [0, 1]
    req = roundtrip(rec.of(LEADER_AND_ISR, 0)[0])
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (2, 5, 100)
    [topic] = req.topic_states
    assert topic.topic_name == "t" and topic.topic_id == uuid.UUID(int=1)
    [p] = topic.partition_states
    assert (
        p.partition_index,
        p.controller_epoch,
        p.leader,
        p.leader_epoch,
        list(p.isr),
        p.partition_epoch,
    ) == (0, 3, 1, 4, [1, 0], 9)
    assert list(p.replicas) == [1, 0] and p.is_new is True
    assert [(ll.broker_id, ll.host_name, ll.port) for ll in req.live_leaders] == [(1, "127.0.0.1", 19092)]
    # Every LeaderAndIsr change is also announced to all live brokers.
    assert sorted(s.broker_id for s in rec.of(UPDATE_METADATA)) == [0, 1, 2]


def test_update_metadata_carries_live_brokers_endpoints_racks_and_offline_replicas():
    ctx = make_context([0, 1])
    ctx.live_brokers[1] = broker(1, rack="r1")
    batch, rec, _ = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [0, 1, 7]}, TOPIC_ID)
    ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 1, (0, 1), 2), 1)
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([0, 1, 5], [tp])
    batch.send_requests_to_brokers(1)
    assert sorted(s.broker_id for s in rec.of(UPDATE_METADATA)) == [0, 1]  # 5 is not live
    req = roundtrip(rec.of(UPDATE_METADATA, 1)[0])
    assert req.broker_epoch == 101
    assert [
        (b.id, b.rack, [(e.host, e.port, e.listener, e.security_protocol) for e in b.endpoints])
        for b in req.live_brokers
    ] == [
        (0, None, [("127.0.0.1", 9090, "PLAINTEXT", 0)]),
        (1, "r1", [("127.0.0.1", 9091, "PLAINTEXT", 0)]),
    ]
    [p] = req.topic_states[0].partition_states
    assert (p.leader, p.zk_version, list(p.offline_replicas)) == (0, 2, [7])


def test_update_metadata_without_partitions_still_goes_out_with_the_broker_list():
    ctx = make_context([0, 1])
    batch, rec, _ = make_batch(ctx)
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([0, 1], [])
    batch.send_requests_to_brokers(1)
    req = roundtrip(rec.of(UPDATE_METADATA, 0)[0])
    assert list(req.topic_states) == [] and len(req.live_brokers) == 2


def test_partitions_being_deleted_are_advertised_with_leader_minus_two():
    ctx = make_context([0])
    batch, rec, _ = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [0]})
    ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 3, (0,), 4), 1)
    ctx.topics_to_be_deleted.add("t")
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([0], [tp])
    batch.send_requests_to_brokers(1)
    p = rec.of(UPDATE_METADATA)[0].body.topic_states[0].partition_states[0]
    assert (p.leader, p.leader_epoch) == (-2, -2)


def test_stop_replica_merges_delete_flags_and_uses_the_deletion_epoch():
    ctx = make_context([0])
    batch, rec, events = make_batch(ctx)
    a, b = assign(ctx, "t", {0: [0], 1: [0]})
    ctx.partition_leadership_info[a] = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 6, (0,), 0), 1)
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([0], a, delete_partition=True)
    batch.add_stop_replica_request_for_brokers([0], a, delete_partition=False)
    batch.add_stop_replica_request_for_brokers([0], b, delete_partition=False)
    batch.send_requests_to_brokers(1)
    [sent] = rec.of(STOP_REPLICA)
    req = roundtrip(sent)
    states = {
        p.partition_index: (p.leader_epoch, p.delete_partition) for p in req.topic_states[0].partition_states
    }
    assert states == {0: (6, True), 1: (-1, False)}
    # The response becomes a controller event about the deleted partitions only: a plain stop
    # must not count as a deletion.
    sent.callback(
        StopReplicaResponse(
            error_code=0,
            partition_errors=[
                StopReplicaPartitionError(topic_name="t", partition_index=0, error_code=0),
                StopReplicaPartitionError(topic_name="t", partition_index=1, error_code=56),
            ],
        )
    )
    assert events == [ev.TopicDeletionStopReplicaResponseReceived(0, 0, {a: 0})]


def test_a_stop_replica_without_deletion_has_no_response_callback():
    ctx = make_context([0])
    batch, rec, events = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [0]})
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([0], tp, delete_partition=False)
    batch.send_requests_to_brokers(1)
    assert rec.of(STOP_REPLICA)[0].callback is None


def test_a_failed_stop_replica_request_fails_every_partition_it_carried():
    ctx = make_context([0])
    batch, rec, events = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [0]})
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([0], tp, delete_partition=True)
    batch.send_requests_to_brokers(1)
    rec.of(STOP_REPLICA)[0].callback(StopReplicaResponse(error_code=11))
    assert events[0].partition_errors == {tp: 11}


def test_requests_to_dead_brokers_are_dropped():
    ctx = make_context([0])
    batch, rec, _ = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [1]})
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([1], tp, delete_partition=False)
    batch.send_requests_to_brokers(1)
    assert rec.sent == []


def test_new_batch_refuses_to_drop_unsent_requests():
    ctx = make_context([0])
    batch, rec, _ = make_batch(ctx)
    batch.add_update_metadata_request_for_brokers([0], [])
    with pytest.raises(IllegalBatchStateError):
        batch.new_batch()


def test_leader_and_isr_response_errors_become_an_event_keyed_by_topic_name():
    ctx = make_context([0])
    batch, rec, events = make_batch(ctx)
    [tp] = assign(ctx, "t", {0: [0]}, TOPIC_ID)
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,), 0), 1)
    batch.new_batch()
    batch.add_leader_and_isr_request_for_brokers([0], tp, state, ReplicaAssignment((0,)), is_new=False)
    batch.send_requests_to_brokers(1)
    rec.of(LEADER_AND_ISR)[0].callback(
        LeaderAndIsrResponse(
            error_code=0,
            topics=[
                LeaderAndIsrTopicError(
                    topic_id=uuid.UUID(int=1),
                    partition_errors=[LeaderAndIsrPartitionError(partition_index=0, error_code=56)],
                )
            ],
        )
    )
    assert events == [ev.LeaderAndIsrResponseReceived(0, 0, {TopicPartition("t", 0): 56})]
