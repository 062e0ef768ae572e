"""ControllerBrokerRequestBatch: accumulate LeaderAndIsr / UpdateMetadata / StopReplica per broker
during one state-machine pass, then send them in that order (Kafka's AbstractControllerBrokerRequestBatch).

Bodies are the generated message classes of Kafka 3.9's JSON specs (kafkapy.protocol.generated),
sent at the versions below; the send function (ControllerChannelManager.send_request) encodes them
and hands the decoded response to the callback.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kafkapy.protocol.constants import EPOCH_DURING_DELETE, NO_EPOCH, ZERO_UUID
from kafkapy.protocol.generated.leader_and_isr_request import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from kafkapy.protocol.generated.leader_and_isr_response import LeaderAndIsrResponse
from kafkapy.protocol.generated.stop_replica_request import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from kafkapy.protocol.generated.stop_replica_response import StopReplicaResponse
from kafkapy.protocol.generated.update_metadata_request import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from kafkapy.protocol.message import Message
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
)
from kafkapy.server.controller.leader_and_isr import (
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
    during_delete,
)
from kafkapy.server.controller.state_change_log import ControllerLogger, StateChangeLogger

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6
LEADER_AND_ISR_VERSION = 7
STOP_REPLICA_VERSION = 4
UPDATE_METADATA_VERSION = 8

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

ControllerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
# send(broker_id, api_key, version, body, callback(decoded response) | None)
SendFn = Callable[[int, int, int, ControllerRequest, Callable[[Message], None] | None], None]


def topic_id_to_uuid(topic_id: str | None) -> uuid.UUID:
    """ZooKeeper stores Kafka's base64url topic id; the wire carries the 16 raw bytes."""
    if not topic_id:
        return ZERO_UUID
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def inter_broker_endpoint(broker: Any, listener_name: str | None) -> Any:
    """The endpoint the controller connects to: the configured inter-broker listener, else the
    PLAINTEXT listener, else the broker's first endpoint."""
    endpoints = list(broker.endpoints)
    for wanted in (listener_name, "PLAINTEXT"):
        for e in endpoints:
            if wanted is not None and e.listener_name == wanted:
                return e
    return endpoints[0]


class IllegalBatchStateError(Exception):
    pass


class ControllerBrokerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        send: SendFn,
        put_event: Callable[[ControllerEvent], object],
        listener_name: str | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self._send = send
        self._put_event = put_event
        self.listener_name = listener_name
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self.stop_replica: dict[int, dict[TopicPartition, StopReplicaPartitionState]] = {}
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        self._state_change_logger = StateChangeLogger(controller_id)
        self.log = ControllerLogger(f"[Controller id={controller_id}] ")

    def new_batch(self) -> None:
        # A non-empty batch here means an earlier pass failed to send: a controller bug.
        if self.leader_and_isr or self.stop_replica or self.update_metadata_brokers:
            raise IllegalBatchStateError(
                f"Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some LeaderAndIsr state changes {self.leader_and_isr} might be lost"
            )

    def clear(self) -> None:
        self.leader_and_isr.clear()
        self.stop_replica.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()

    # --- accumulate ------------------------------------------------------------------------------

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        lai = state.leader_and_isr
        # One partition state per call, shared by its recipients (it is only read when the request
        # is encoded): building one per recipient was the largest cost of electing 10k leaders.
        built: dict[bool, LeaderAndIsrPartitionState] = {}
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.leader_and_isr.setdefault(broker_id, {})
            earlier = per_broker.get(tp)
            new = is_new or (earlier is not None and earlier.is_new)
            partition_state = built.get(new)
            if partition_state is None:
                partition_state = built[new] = LeaderAndIsrPartitionState(
                    partition_index=tp.partition,
                    controller_epoch=state.controller_epoch,
                    leader=lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    partition_epoch=lai.zk_version,
                    replicas=list(assignment.replicas),
                    adding_replicas=list(assignment.adding_replicas),
                    removing_replicas=list(assignment.removing_replicas),
                    is_new=new,
                )
            per_broker[tp] = partition_state
        # Every LeaderAndIsr change is also metadata every broker should learn about.
        self.update_metadata_brokers.update(self.context.live_brokers)
        self._add_update_metadata_partition(tp)

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], tp: TopicPartition, delete_partition: bool
    ) -> None:
        # -2 tells the broker the topic is being deleted, overriding any epoch it has.
        if self.context.is_topic_queued_up_for_deletion(tp.topic):
            leader_epoch = EPOCH_DURING_DELETE
        else:
            info = self.context.partition_leadership_info.get(tp)
            leader_epoch = info.leader_and_isr.leader_epoch if info else NO_EPOCH
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.stop_replica.setdefault(broker_id, {})
            earlier = per_broker.get(tp)
            per_broker[tp] = StopReplicaPartitionState(
                partition_index=tp.partition,
                leader_epoch=leader_epoch,
                delete_partition=delete_partition or (earlier is not None and earlier.delete_partition),
            )

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """No partitions: the brokers still get a request, carrying only the live broker list."""
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            self._add_update_metadata_partition(tp)

    def _add_update_metadata_partition(self, tp: TopicPartition) -> None:
        info = self.context.partition_leadership_info.get(tp)
        if info is None:
            self.log.info(f"Leader not yet assigned for partition {tp}. Skip sending UpdateMetadataRequest.")
            return
        lai = info.leader_and_isr
        if self.context.is_topic_queued_up_for_deletion(tp.topic):
            lai = during_delete(lai.isr)
        replicas = self.context.partition_replica_assignment(tp)
        offline = [r for r in replicas if not self.context.is_replica_online(r, tp)]
        self.update_metadata_partitions[tp] = UpdateMetadataPartitionState(
            partition_index=tp.partition,
            controller_epoch=info.controller_epoch,
            leader=lai.leader,
            leader_epoch=lai.leader_epoch,
            isr=list(lai.isr),
            zk_version=lai.zk_version,
            replicas=list(replicas),
            offline_replicas=offline,
        )

    # --- send ------------------------------------------------------------------------------------

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        try:
            self._send_leader_and_isr(controller_epoch)
            self._send_update_metadata(controller_epoch)
            self._send_stop_replica(controller_epoch)
        finally:
            self.clear()

    def _topic_uuid(self, topic: str) -> uuid.UUID:
        return topic_id_to_uuid(self.context.topic_ids.get(topic))

    def _broker_epoch(self, broker_id: int) -> int:
        return self.context.live_broker_epochs.get(broker_id, -1)

    def _send_leader_and_isr(self, controller_epoch: int) -> None:
        log = self._state_change_logger.with_controller_epoch(controller_epoch)
        live = self.context.live_brokers
        for broker_id, states in self.leader_and_isr.items():
            if broker_id not in live:
                continue
            leader_ids = {s.leader for s in states.values()}
            live_leaders = []
            for leader_id in sorted(leader_ids & set(live)):
                endpoint = inter_broker_endpoint(live[leader_id], self.listener_name)
                live_leaders.append(
                    LeaderAndIsrLiveLeader(
                        broker_id=leader_id, host_name=endpoint.host or "", port=endpoint.port
                    )
                )
            by_topic: dict[str, list[LeaderAndIsrPartitionState]] = {}
            trace = log.trace_enabled()
            leading = 0
            for tp, state in sorted(states.items()):
                by_topic.setdefault(tp.topic, []).append(state)
                leading += state.leader == broker_id
                if trace:
                    role = "become-leader" if state.leader == broker_id else "become-follower"
                    log.trace(
                        f"Sending {role} LeaderAndIsr request {_describe_partition_state(state)} to broker "
                        f"{broker_id} for partition {tp}"
                    )
            log.info(
                f"Sending LeaderAndIsr request to broker {broker_id} with {leading} become-leader and "
                f"{len(states) - leading} become-follower partitions"
            )
            body = LeaderAndIsrRequest(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=self._broker_epoch(broker_id),
                type=0,
                topic_states=[
                    LeaderAndIsrTopicState(topic_name=t, topic_id=self._topic_uuid(t), partition_states=ps)
                    for t, ps in by_topic.items()
                ],
                live_leaders=live_leaders,
            )
            # Resolved now: the callback runs on the sender thread and must not read the context.
            id_to_topic = {self._topic_uuid(t): t for t in by_topic}
            callback = self._leader_and_isr_callback(broker_id, id_to_topic)
            self._send(broker_id, LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body, callback)

    def _leader_and_isr_callback(
        self, broker_id: int, id_to_topic: dict[uuid.UUID, str]
    ) -> Callable[[Message], None]:
        def callback(response: Message) -> None:
            if not isinstance(response, LeaderAndIsrResponse):
                raise TypeError(f"LeaderAndIsr answered with {type(response).__name__}")
            errors: dict[TopicPartition, int] = {}
            for topic in response.topics:
                name = id_to_topic.get(topic.topic_id, str(topic.topic_id))
                for pe in topic.partition_errors:
                    errors[TopicPartition(name, pe.partition_index)] = pe.error_code
            self._put_event(LeaderAndIsrResponseReceived(broker_id, response.error_code, errors))

        return callback

    def _send_update_metadata(self, controller_epoch: int) -> None:
        if not self.update_metadata_brokers:
            return
        log = self._state_change_logger.with_controller_epoch(controller_epoch)
        by_topic: dict[str, list[UpdateMetadataPartitionState]] = {}
        for tp, state in sorted(self.update_metadata_partitions.items()):
            by_topic.setdefault(tp.topic, []).append(state)
        topic_states = [
            UpdateMetadataTopicState(topic_name=t, topic_id=self._topic_uuid(t), partition_states=ps)
            for t, ps in by_topic.items()
        ]
        live_brokers = [
            UpdateMetadataBroker(
                id=b.id,
                endpoints=[
                    UpdateMetadataEndpoint(
                        port=e.port,
                        host=e.host or "",
                        listener=e.listener_name,
                        security_protocol=SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0),
                    )
                    for e in b.endpoints
                ],
                rack=b.rack,
            )
            for b in sorted(self.context.live_brokers.values(), key=lambda b: b.id)
        ]
        for broker_id in sorted(self.update_metadata_brokers & self.context.live_or_shutting_down_broker_ids):
            log.info(
                f"Sending UpdateMetadata request to broker {broker_id} for {len(self.update_metadata_partitions)} partitions"
            )
            body = UpdateMetadataRequest(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=self._broker_epoch(broker_id),
                type=0,
                topic_states=topic_states,
                live_brokers=live_brokers,
            )
            self._send(broker_id, UPDATE_METADATA, UPDATE_METADATA_VERSION, body, None)

    def _send_stop_replica(self, controller_epoch: int) -> None:
        log = self._state_change_logger.with_controller_epoch(controller_epoch)
        for broker_id, states in self.stop_replica.items():
            if broker_id not in self.context.live_brokers:
                continue
            by_topic: dict[str, list[StopReplicaPartitionState]] = {}
            for tp, state in sorted(states.items()):
                by_topic.setdefault(tp.topic, []).append(state)
            deleting = sum(1 for s in states.values() if s.delete_partition)
            log.info(
                f"Sending StopReplica request for {len(states)} partitions ({deleting} with deletion) to broker {broker_id}"
            )
            body = StopReplicaRequest(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=self._broker_epoch(broker_id),
                topic_states=[
                    StopReplicaTopicState(topic_name=t, partition_states=ps) for t, ps in by_topic.items()
                ],
            )
            deleted = tuple(tp for tp, state in states.items() if state.delete_partition)
            callback = self._stop_replica_callback(broker_id, deleted) if deleted else None
            self._send(broker_id, STOP_REPLICA, STOP_REPLICA_VERSION, body, callback)

    def _stop_replica_callback(
        self, broker_id: int, deleted: tuple[TopicPartition, ...]
    ) -> Callable[[Message], None]:
        """Only partitions this request asked to delete count for topic deletion: a plain stop
        (delete=false, sent on the way to ReplicaDeletionStarted) must not look like a deletion."""
        wanted = set(deleted)

        def callback(response: Message) -> None:
            # Runs on the sender thread: only look at immutable inputs and enqueue an event; the
            # event processing decides which topics are still being deleted.
            if not isinstance(response, StopReplicaResponse):
                raise TypeError(f"StopReplica answered with {type(response).__name__}")
            request_error = response.error_code
            errors = {
                TopicPartition(pe.topic_name, pe.partition_index): pe.error_code
                for pe in response.partition_errors
            }
            errors = {tp: code for tp, code in errors.items() if tp in wanted}
            if request_error:
                # A failed request fails every partition it carried, listed or not.
                errors = {tp: errors.get(tp) or request_error for tp in deleted}
            self._put_event(TopicDeletionStopReplicaResponseReceived(broker_id, request_error, errors))

        return callback


def _describe_partition_state(state: LeaderAndIsrPartitionState) -> str:
    return (
        f"LeaderAndIsrPartitionState(partitionIndex={state.partition_index}, "
        f"controllerEpoch={state.controller_epoch}, leader={state.leader}, "
        f"leaderEpoch={state.leader_epoch}, isr={state.isr}, partitionEpoch={state.partition_epoch}, "
        f"replicas={state.replicas}, isNew={state.is_new})"
    )
