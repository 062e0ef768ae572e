"""The controller's requests to brokers: LeaderAndIsr, UpdateMetadata, StopReplica, and the
broker's ControlledShutdown request to the controller.

Only brokers send them: with an authorizer, the sender needs ClusterAction on the cluster (brokers
authenticate as a super user or a principal granted it), else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import logging

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import ClusterAuthorizationException, KafkaError, NotControllerException
from kafkapy.protocol.generated.controlled_shutdown_request import ControlledShutdownRequest
from kafkapy.protocol.generated.controlled_shutdown_response import (
    ControlledShutdownResponse,
    RemainingPartition,
)
from kafkapy.protocol.generated.leader_and_isr_request import LeaderAndIsrRequest
from kafkapy.protocol.generated.leader_and_isr_response import LeaderAndIsrResponse
from kafkapy.protocol.generated.stop_replica_request import StopReplicaRequest
from kafkapy.protocol.generated.stop_replica_response import StopReplicaResponse
from kafkapy.protocol.generated.update_metadata_request import UpdateMetadataRequest
from kafkapy.protocol.generated.update_metadata_response import UpdateMetadataResponse
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.replica_manager import STALE_CONTROLLER_EPOCH, gather_configs
from kafkapy.server.security.acl import Operation

state_change_log = logging.getLogger("state.change.logger")
_REFUSED = ClusterAuthorizationException.code


@handles(ApiKey.LEADER_AND_ISR)
async def handle_leader_and_isr(
    apis: KafkaApis, request: Request, body: LeaderAndIsrRequest
) -> LeaderAndIsrResponse:
    if not authorize_cluster(apis, request, Operation.CLUSTER_ACTION):
        return LeaderAndIsrResponse(error_code=_REFUSED)
    loop = asyncio.get_running_loop()
    topics = {ts.topic_name for ts in body.topic_states}
    configs = await gather_configs(loop, topics, apis.log_config_for)
    await loop.run_in_executor(None, apis.replica_manager.create_missing_logs, body, configs)
    response: LeaderAndIsrResponse = apis.replica_manager.become_leader_or_follower(body, configs)
    _update_group_coordinator(apis, body, response)
    _update_transaction_coordinator(apis, body, response)
    return response


def _update_transaction_coordinator(
    apis: KafkaApis, body: LeaderAndIsrRequest, response: LeaderAndIsrResponse
) -> None:
    """Load the __transaction_state partitions we now lead, with their leader epoch as the
    coordinator epoch of the markers we send for them; unload those we stopped leading."""
    from kafkapy.common.topic_partition import TopicPartition
    from kafkapy.server.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC_NAME

    tc = apis.transaction_coordinator
    if tc is None or response.error_code:
        return
    manager = tc.manager
    for ts in body.topic_states:
        if ts.topic_name != TRANSACTION_STATE_TOPIC_NAME:
            continue
        for ps in ts.partition_states:
            index = ps.partition_index
            partition = apis.replica_manager.partitions.get(TopicPartition(ts.topic_name, index))
            if partition is not None and partition.is_leader and ps.leader == apis.broker_id:
                loaded_at = manager.coordinator_epochs.get(index)
                if index not in manager.loading_partitions and loaded_at != ps.leader_epoch:
                    tc.on_elected(index, ps.leader_epoch)
            else:
                tc.on_resigned(index)


def _update_group_coordinator(
    apis: KafkaApis, body: LeaderAndIsrRequest, response: LeaderAndIsrResponse
) -> None:
    """Load the groups of __consumer_offsets partitions we now lead; unload those we stopped leading."""
    from kafkapy.common.topic_partition import TopicPartition
    from kafkapy.server.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME

    gc = apis.group_coordinator
    if gc is None or response.error_code:
        return
    for ts in body.topic_states:
        if ts.topic_name != GROUP_METADATA_TOPIC_NAME:
            continue
        for ps in ts.partition_states:
            partition = apis.replica_manager.partitions.get(TopicPartition(ts.topic_name, ps.partition_index))
            if partition is not None and partition.is_leader and ps.leader == apis.broker_id:
                if ps.partition_index not in gc.manager.owned_partitions | gc.manager.loading_partitions:
                    gc.on_elected(ps.partition_index)
            else:
                gc.on_resigned(ps.partition_index)


@handles(ApiKey.UPDATE_METADATA)
def handle_update_metadata(
    apis: KafkaApis, request: Request, body: UpdateMetadataRequest
) -> UpdateMetadataResponse:
    if not authorize_cluster(apis, request, Operation.CLUSTER_ACTION):
        return UpdateMetadataResponse(error_code=_REFUSED)
    rm = apis.replica_manager
    if body.controller_epoch < rm.controller_epoch:
        state_change_log.warning(
            "[Broker id=%d] Ignoring UpdateMetadata from controller %d with epoch %d older than %d",
            apis.broker_id,
            body.controller_id,
            body.controller_epoch,
            rm.controller_epoch,
        )
        return UpdateMetadataResponse(error_code=STALE_CONTROLLER_EPOCH)
    rm.controller_epoch = body.controller_epoch
    apis.metadata_cache.update_metadata(body)
    return UpdateMetadataResponse(error_code=0)


@handles(ApiKey.STOP_REPLICA)
def handle_stop_replica(apis: KafkaApis, request: Request, body: StopReplicaRequest) -> StopReplicaResponse:
    from kafkapy.server.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
    from kafkapy.server.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC_NAME

    gc = apis.group_coordinator
    tc = apis.transaction_coordinator
    if not authorize_cluster(apis, request, Operation.CLUSTER_ACTION):
        return StopReplicaResponse(error_code=_REFUSED)
    if body.controller_epoch >= apis.replica_manager.controller_epoch:
        # A stopped __consumer_offsets / __transaction_state replica no longer coordinates.
        for ts in body.topic_states:
            for ps in ts.partition_states:
                if ts.topic_name == GROUP_METADATA_TOPIC_NAME and gc is not None:
                    gc.on_resigned(ps.partition_index)
                elif ts.topic_name == TRANSACTION_STATE_TOPIC_NAME and tc is not None:
                    tc.on_resigned(ps.partition_index)
    response: StopReplicaResponse = apis.replica_manager.stop_replicas(body)
    return response


@handles(ApiKey.CONTROLLED_SHUTDOWN)
async def handle_controlled_shutdown(
    apis: KafkaApis, request: Request, body: ControlledShutdownRequest
) -> ControlledShutdownResponse:
    if not authorize_cluster(apis, request, Operation.CLUSTER_ACTION):
        return ControlledShutdownResponse(error_code=_REFUSED)
    controller = apis.controller
    if controller is None or not controller.is_active():
        return ControlledShutdownResponse(error_code=NotControllerException.code)
    try:
        remaining = await asyncio.wrap_future(
            controller.controlled_shutdown(body.broker_id, body.broker_epoch)
        )
    except KafkaError as e:
        return ControlledShutdownResponse(error_code=e.code)
    return ControlledShutdownResponse(
        error_code=0,
        remaining_partitions=[
            RemainingPartition(topic_name=t, partition_index=p) for t, p in sorted(remaining)
        ],
    )
