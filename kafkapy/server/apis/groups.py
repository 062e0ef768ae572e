"""FindCoordinator and the group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups.

The handlers translate between each version's wire shape and the GroupCoordinator, which answers
with error codes and the generated response structs. FindCoordinator creates __consumer_offsets on first use through
the normal controller path (its znodes in ZooKeeper) and answers COORDINATOR_NOT_AVAILABLE until
the partition leading the group is known, as Kafka does. The topic is created with
offsets.topic.replication.factor replicas or not at all: while fewer brokers are alive, the answer
is COORDINATOR_NOT_AVAILABLE (an RF 1 offsets topic made during a rolling start would stay RF 1).

Authorization as Kafka's KafkaApis: FindCoordinator needs Describe on the group (or the
transactional id); JoinGroup, SyncGroup, Heartbeat and LeaveGroup Read on the group;
DescribeGroups Describe on each group; ListGroups lists everything to a principal that may
Describe the cluster, else only the groups it may Describe; DeleteGroups Delete on each group.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    GroupAuthorizationException,
    InvalidRequestException,
    KafkaError,
    TopicExistsException,
    TransactionalIdAuthorizationException,
)
from kafkapy.protocol.generated.delete_groups_request import DeleteGroupsRequest
from kafkapy.protocol.generated.delete_groups_response import DeletableGroupResult, DeleteGroupsResponse
from kafkapy.protocol.generated.describe_groups_request import DescribeGroupsRequest
from kafkapy.protocol.generated.describe_groups_response import DescribedGroup, DescribeGroupsResponse
from kafkapy.protocol.generated.find_coordinator_request import FindCoordinatorRequest
from kafkapy.protocol.generated.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kafkapy.protocol.generated.heartbeat_request import HeartbeatRequest
from kafkapy.protocol.generated.heartbeat_response import HeartbeatResponse
from kafkapy.protocol.generated.join_group_request import JoinGroupRequest
from kafkapy.protocol.generated.join_group_response import JoinGroupResponse
from kafkapy.protocol.generated.leave_group_request import LeaveGroupRequest
from kafkapy.protocol.generated.leave_group_response import LeaveGroupResponse, MemberResponse
from kafkapy.protocol.generated.list_groups_request import ListGroupsRequest
from kafkapy.protocol.generated.list_groups_response import ListedGroup, ListGroupsResponse
from kafkapy.protocol.generated.sync_group_request import SyncGroupRequest
from kafkapy.protocol.generated.sync_group_response import SyncGroupResponse
from kafkapy.server.apis.auth_helper import authorize, authorize_cluster, authorized_operations
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.coordinator.group_coordinator import GroupCoordinator
from kafkapy.server.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation, ResourceType

log = logging.getLogger("kafkapy.server.KafkaApis")

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
_NOT_AVAILABLE = CoordinatorNotAvailableException.code


def coordinator(apis: KafkaApis) -> GroupCoordinator:
    return apis.group_coordinator


# -- FindCoordinator ---------------------------------------------------------------------------


def offsets_topic_configs(config: Any) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.offsets_topic_segment_bytes),
        "compression.type": "producer",
    }


def _create_offsets_topic(apis: KafkaApis) -> None:
    """Write __consumer_offsets' znodes; the controller does the rest (blocking: io thread)."""
    from kafkapy.zk.admin_zk_client import AdminZkClient, RackAwareMode

    config = apis.config
    rf = int(config.offsets_topic_replication_factor)
    try:
        # Kafka's createInternalTopic places it with RackAwareMode.Safe.
        AdminZkClient(apis.zk).create_topic(
            GROUP_METADATA_TOPIC_NAME,
            int(config.offsets_topic_num_partitions),
            rf,
            offsets_topic_configs(config),
            rack_aware_mode=RackAwareMode.SAFE,
        )
        log.info("Created %s with replication factor %d", GROUP_METADATA_TOPIC_NAME, rf)
    except KafkaError as e:
        if e.code != TopicExistsException.code:  # another broker or request got there first
            raise


def _enough_brokers_for_offsets_topic(apis: KafkaApis) -> bool:
    """Kafka's check before creating the offsets topic, with its log line when it fails."""
    alive = len(apis.metadata_cache.alive_broker_ids())
    required = int(apis.config.offsets_topic_replication_factor)
    if alive >= required:
        return True
    log.error(
        "Number of alive brokers '%d' does not meet the required replication factor '%d' for the offsets topic "
        "(configured via 'offsets.topic.replication.factor'). This error can be ignored if the cluster is "
        "starting up and not all brokers are up yet.",
        alive,
        required,
    )
    return False


async def _ensure_offsets_topic(apis: KafkaApis, gc: Any) -> None:
    if gc.offsets_topic_creation is None or gc.offsets_topic_creation.done():
        loop = asyncio.get_running_loop()
        gc.offsets_topic_creation = loop.run_in_executor(None, _create_offsets_topic, apis)
    try:
        await asyncio.shield(gc.offsets_topic_creation)
    except Exception as e:
        log.warning("Could not create %s: %s", GROUP_METADATA_TOPIC_NAME, e)


async def _find_one(apis: KafkaApis, request: Request, key: str, key_type: int) -> Coordinator:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _coordinator_error(key, InvalidRequestException.code, f"Unknown coordinator type {key_type}")
    if key_type == GROUP_KEY_TYPE and not authorize(
        apis, request, Operation.DESCRIBE, ResourceType.GROUP, key
    ):
        return _coordinator_error(key, GroupAuthorizationException.code)
    if key_type == TRANSACTION_KEY_TYPE and not authorize(
        apis, request, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return _coordinator_error(key, TransactionalIdAuthorizationException.code)
    cache = apis.metadata_cache
    if key_type == TRANSACTION_KEY_TYPE:
        from kafkapy.server.apis.transaction_topic import ensure_transaction_topic
        from kafkapy.server.transaction.transaction_state_manager import TRANSACTION_STATE_TOPIC_NAME

        tc = apis.transaction_coordinator
        if tc is None or not tc.active:
            return _coordinator_error(key, _NOT_AVAILABLE)
        if not key:
            return _coordinator_error(key, InvalidRequestException.code, "Transactional id must not be empty")
        if not cache.contains_topic(TRANSACTION_STATE_TOPIC_NAME):
            await ensure_transaction_topic(apis, tc)
            return _coordinator_error(key, _NOT_AVAILABLE)
        topic, partition = TRANSACTION_STATE_TOPIC_NAME, tc.manager.partition_for(key)
    else:
        gc = coordinator(apis)
        if gc is None or not gc.active:
            return _coordinator_error(key, _NOT_AVAILABLE)
        if not cache.contains_topic(GROUP_METADATA_TOPIC_NAME):
            if _enough_brokers_for_offsets_topic(apis):
                await _ensure_offsets_topic(apis, gc)
            return _coordinator_error(key, _NOT_AVAILABLE)
        topic, partition = GROUP_METADATA_TOPIC_NAME, gc.manager.partition_for(key)
    info = cache.partition_info(topic, partition)
    endpoint = (
        None if info is None or info.leader < 0 else cache.alive_endpoint(info.leader, request.listener_name)
    )
    if info is None or endpoint is None:
        return _coordinator_error(key, _NOT_AVAILABLE)
    return Coordinator(
        key=key, node_id=info.leader, host=endpoint[0], port=endpoint[1], error_code=0, error_message=None
    )


def _coordinator_error(key: str, code: int, message: str | None = None) -> Coordinator:
    from kafkapy.protocol.errors import error_name

    return Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message or error_name(code)
    )


@handles(ApiKey.FIND_COORDINATOR)
async def handle_find_coordinator(
    apis: KafkaApis, request: Request, body: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    version = request.header.api_version
    key_type = body.key_type if version >= 1 else GROUP_KEY_TYPE
    if version >= 4:
        results = [await _find_one(apis, request, k, key_type) for k in body.coordinator_keys]
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=results)
    r = await _find_one(apis, request, body.key, key_type)
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=r.error_code,
        error_message=r.error_message if r.error_code else None,
        node_id=r.node_id,
        host=r.host,
        port=r.port,
    )


# -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup --------------------------------------------


@handles(ApiKey.JOIN_GROUP)
async def handle_join_group(apis: KafkaApis, request: Request, body: JoinGroupRequest) -> JoinGroupResponse:
    version = request.header.api_version
    gc = coordinator(apis)
    allowed = _may_read(apis, request, body.group_id)
    if gc is None or not allowed:
        code = GroupAuthorizationException.code if not allowed else _NOT_AVAILABLE
        result = JoinGroupResponse(error_code=code, member_id=body.member_id, protocol_name=None)
    else:
        result = await gc.join_group(
            body.group_id,
            body.member_id,
            body.group_instance_id if version >= 5 else None,
            version >= 4,  # v4+ clients understand MEMBER_ID_REQUIRED
            request.header.client_id or "",
            "/" + request.client_host,  # Kafka shows the client's InetAddress.toString
            body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
            body.session_timeout_ms,
            body.protocol_type,
            [(p.name, bytes(p.metadata)) for p in body.protocols],
        )
    if version < 7 and result.protocol_name is None:
        result.protocol_name = ""  # not nullable before v7
    return result


@handles(ApiKey.SYNC_GROUP)
async def handle_sync_group(apis: KafkaApis, request: Request, body: SyncGroupRequest) -> SyncGroupResponse:
    version = request.header.api_version
    gc = coordinator(apis)
    if not _may_read(apis, request, body.group_id):
        return SyncGroupResponse(
            throttle_time_ms=0, error_code=GroupAuthorizationException.code, assignment=b""
        )
    if gc is None:
        return SyncGroupResponse(throttle_time_ms=0, error_code=_NOT_AVAILABLE, assignment=b"")
    result: SyncGroupResponse = await gc.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        body.protocol_type if version >= 5 else None,
        body.protocol_name if version >= 5 else None,
        body.group_instance_id if version >= 3 else None,
        {a.member_id: bytes(a.assignment) for a in body.assignments},
    )
    return result


@handles(ApiKey.HEARTBEAT)
def handle_heartbeat(apis: KafkaApis, request: Request, body: HeartbeatRequest) -> HeartbeatResponse:
    version = request.header.api_version
    gc = coordinator(apis)
    instance_id = body.group_instance_id if version >= 3 else None
    if not _may_read(apis, request, body.group_id):
        code = GroupAuthorizationException.code
    elif gc is None:
        code = _NOT_AVAILABLE
    else:
        code = gc.heartbeat(body.group_id, body.member_id, instance_id, body.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


@handles(ApiKey.LEAVE_GROUP)
def handle_leave_group(apis: KafkaApis, request: Request, body: LeaveGroupRequest) -> LeaveGroupResponse:
    version = request.header.api_version
    gc = coordinator(apis)
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id, None)]
    if not _may_read(apis, request, body.group_id):
        return LeaveGroupResponse(throttle_time_ms=0, error_code=GroupAuthorizationException.code, members=[])
    top, members = (_NOT_AVAILABLE, []) if gc is None else gc.leave_group(body.group_id, leaving)
    if version < 3 and top == 0 and members:
        top = members[0][2]  # before batching, the one member's error is the answer
    return LeaveGroupResponse(
        throttle_time_ms=0,
        error_code=top,
        members=[MemberResponse(member_id=m, group_instance_id=i, error_code=c) for m, i, c in members],
    )


def _may_read(apis: KafkaApis, request: Request, group_id: str) -> bool:
    return authorize(apis, request, Operation.READ, ResourceType.GROUP, group_id)


# -- DescribeGroups / ListGroups / DeleteGroups ------------------------------------------------


@handles(ApiKey.DESCRIBE_GROUPS)
def handle_describe_groups(
    apis: KafkaApis, request: Request, body: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    gc = coordinator(apis)
    groups = []
    seen: set[str] = set()
    for group_id in body.groups:
        if group_id in seen:
            # A group's description carries every member's metadata and assignment (client
            # bytes): naming it twice would repeat them all. The repeats are refused
            # (kafkapy's bound; Kafka 2.x describes every copy).
            groups.append(
                DescribedGroup(
                    error_code=InvalidRequestException.code,
                    error_message=f"Duplicate group {group_id!r} in request",
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
            continue
        seen.add(group_id)
        if not authorize(apis, request, Operation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(
                DescribedGroup(
                    error_code=GroupAuthorizationException.code,
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
            continue
        if gc is None:
            described = DescribedGroup(error_code=_NOT_AVAILABLE, group_id=group_id)
        else:
            described = gc.describe_group(group_id)
        if request.header.api_version >= 3 and body.include_authorized_operations:
            described.authorized_operations = authorized_operations(
                apis, request, ResourceType.GROUP, group_id
            )
        groups.append(described)
    return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)


@handles(ApiKey.LIST_GROUPS)
def handle_list_groups(apis: KafkaApis, request: Request, body: ListGroupsRequest) -> ListGroupsResponse:
    version = request.header.api_version
    gc = coordinator(apis)
    states = set(body.states_filter or ()) if version >= 4 else None
    code, groups = (_NOT_AVAILABLE, []) if gc is None else gc.list_groups(states)
    if not authorize_cluster(apis, request, Operation.DESCRIBE, log_denied=False):
        groups = [
            g
            for g in groups
            if authorize(apis, request, Operation.DESCRIBE, ResourceType.GROUP, g.group_id, False)
        ]
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=code,
        groups=[
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type or "",
                group_state=str(g.state),
                group_type="classic",
            )
            for g in groups
        ],
    )


@handles(ApiKey.DELETE_GROUPS)
async def handle_delete_groups(
    apis: KafkaApis, request: Request, body: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    gc = coordinator(apis)
    names = list(body.groups_names)
    allowed = [g for g in names if authorize(apis, request, Operation.DELETE, ResourceType.GROUP, g)]
    results = dict.fromkeys(names, GroupAuthorizationException.code)
    if allowed:
        results.update(
            dict.fromkeys(allowed, _NOT_AVAILABLE) if gc is None else await gc.delete_groups(allowed)
        )
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[DeletableGroupResult(group_id=g, error_code=results[g]) for g in names],
    )


# OffsetCommit/OffsetFetch/OffsetDelete belong to the same coordinator: importing this module
# registers them too (after `coordinator` above exists, which offsets.py imports).
from kafkapy.server.apis import offsets as _offsets  # noqa: E402, F401, I001
