"""GroupMetadataManager: the groups this broker coordinates, kept in __consumer_offsets.

A group lives in partition `partition_for(group)` of __consumer_offsets, and the leader of that
partition is its coordinator. When this broker becomes leader of a partition it loads the
partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops leading one it unloads its
groups. Writes are record batches (keys and values in Kafka's schemas, offsets_codec.py)
appended through the ReplicaManager as leader, with acks=-1: a commit is answered once the
high watermark has passed it, so an acknowledged offset survives a failover or a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkapy.common.java_hash import java_string_hash, kafka_abs
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import (
    CoordinatorNotAvailableException,
    InvalidCommitOffsetSizeException,
    InvalidFetchSizeException,
    KafkaStorageException,
    NotCoordinatorException,
    NotEnoughReplicasAfterAppendException,
    NotEnoughReplicasException,
    NotLeaderOrFollowerException,
    RecordBatchTooLargeException,
    RecordTooLargeException,
    TimeoutException,
    UnknownServerException,
    UnknownTopicOrPartitionException,
)
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.coordinator.group_metadata import GroupMetadata, GroupState, now_ms
from kafkapy.server.coordinator.log_reader import CommittedRecordsReader
from kafkapy.server.coordinator.member_metadata import MemberMetadata

log = logging.getLogger("kafkapy.coordinator.group.GroupMetadataManager")

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"

# How append errors on __consumer_offsets reach the members (GroupMetadataManager.storeGroup).
_APPEND_ERROR_MAP = {
    UnknownTopicOrPartitionException.code: CoordinatorNotAvailableException.code,
    NotEnoughReplicasException.code: CoordinatorNotAvailableException.code,
    NotEnoughReplicasAfterAppendException.code: CoordinatorNotAvailableException.code,
    TimeoutException.code: CoordinatorNotAvailableException.code,
    NotLeaderOrFollowerException.code: NotCoordinatorException.code,
    KafkaStorageException.code: NotCoordinatorException.code,
    RecordTooLargeException.code: InvalidCommitOffsetSizeException.code,
    RecordBatchTooLargeException.code: InvalidCommitOffsetSizeException.code,
    InvalidFetchSizeException.code: InvalidCommitOffsetSizeException.code,
}


def partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions


def map_append_error(code: int) -> int:
    if code == 0:
        return 0
    return _APPEND_ERROR_MAP.get(code, UnknownServerException.code)


class GroupMetadataManager:
    def __init__(self, broker_id: int, config: Any, replica_manager: Any) -> None:
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.num_partitions = int(config.offsets_topic_num_partitions)
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self._load_epochs: dict[int, int] = {}
        # Transactional offsets waiting for their marker (txn_offsets.py), shared with the
        # coordinator: producer id -> group id -> offsets.
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]]] = {}
        # Set by the coordinator: members of a loaded group get heartbeat timers; an unloaded
        # group's parked requests are answered NOT_COORDINATOR.
        self.on_group_loaded: Callable[[GroupMetadata], None] = lambda g: None
        self.on_group_unloaded: Callable[[GroupMetadata], None] = lambda g: None

    # -- ownership ------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading_partitions

    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    def current_groups(self) -> list[GroupMetadata]:
        return list(self.groups.values())

    # -- load / unload --------------------------------------------------------------------------

    def schedule_load(self, partition: int) -> asyncio.Task[None]:
        epoch = self._load_epochs.get(partition, 0) + 1
        self._load_epochs[partition] = epoch
        self.loading_partitions.add(partition)
        return asyncio.ensure_future(self._load(partition, epoch))

    async def _load(self, partition: int, epoch: int) -> None:
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
        started = now_ms()
        the_log = self.replica_manager.log_manager.get_log(tp)
        try:
            if the_log is not None:
                loop = asyncio.get_running_loop()
                offsets, groups, pending = await loop.run_in_executor(
                    None, _read_partition, the_log, int(self.config.offsets_load_buffer_size)
                )
            else:
                offsets, groups, pending = {}, {}, {}
        except Exception:
            log.exception("Error loading offsets from %s", tp)
            offsets, groups, pending = {}, {}, {}
        if self._load_epochs.get(partition) != epoch or partition not in self.loading_partitions:
            return  # resigned (or re-elected) while loading: that newer event decides
        self._install(offsets, groups)
        for producer_id, by_group in pending.items():
            self.pending_txn_offsets.setdefault(producer_id, {}).update(by_group)
        self.loading_partitions.discard(partition)
        self.owned_partitions.add(partition)
        log.info(
            "Finished loading offsets and group metadata from %s in %d milliseconds (%d groups)",
            tp,
            now_ms() - started,
            len(set(offsets) | set(groups)),
        )

    def _install(
        self,
        offsets: dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]],
        groups: dict[str, codec.GroupMetadataValue],
    ) -> None:
        for group_id in set(offsets) | set(groups):
            group = _group_from_record(group_id, groups.get(group_id))
            group.offsets = offsets.get(group_id, {})
            old = self.groups.get(group_id)
            if old is not None:
                self.on_group_unloaded(old)
            self.groups[group_id] = group
            self.on_group_loaded(group)

    def unload_partition(self, partition: int) -> None:
        self._load_epochs[partition] = self._load_epochs.get(partition, 0) + 1
        self.loading_partitions.discard(partition)
        self.owned_partitions.discard(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            self.on_group_unloaded(group)
        # Pending transactional offsets go too: a coordinator that loads the partition later
        # rebuilds them from the log (transactions still open there).
        for producer_id, by_group in list(self.pending_txn_offsets.items()):
            for group_id in [g for g in by_group if self.partition_for(g) == partition]:
                del by_group[group_id]
            if not by_group:
                del self.pending_txn_offsets[producer_id]
        log.info("Unloaded groups of %s-%d", GROUP_METADATA_TOPIC_NAME, partition)

    # -- writes ---------------------------------------------------------------------------------

    async def _append(self, group_id: str, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        """Append one batch to the group's partition and wait for the high watermark."""
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, self.partition_for(group_id))
        ts = now_ms()
        batch = build_batch((k, v, (), ts) for k, v in records)
        rm = self.replica_manager
        acks = int(self.config.offsets_commit_required_acks)
        results = rm.append_records(acks, [(tp, batch)])
        if acks == -1 and results[tp].error_code == 0:
            await rm.await_isr(results, int(self.config.offsets_commit_timeout_ms))
        code = results[tp].error_code
        if code:
            log.warning("Appending to %s for group %s failed with error code %d", tp, group_id, code)
        return map_append_error(code)

    async def store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> int:
        value = group_record(group, assignment)
        return await self._append(
            group.group_id, [(codec.group_metadata_key(group.group_id), codec.group_metadata_value(value))]
        )

    async def store_offsets(
        self, group: GroupMetadata, offsets: dict[tuple[str, int], codec.OffsetAndMetadata]
    ) -> int:
        records = [
            (codec.offset_key(group.group_id, t, p), codec.offset_value(om)) for (t, p), om in offsets.items()
        ]
        code = await self._append(group.group_id, records)
        if code == 0 and self.groups.get(group.group_id) is group:
            group.offsets.update(offsets)
        return code

    async def write_tombstones(
        self, group_id: str, partitions: Iterable[tuple[str, int]], include_group: bool = False
    ) -> int:
        records: list[tuple[bytes, bytes | None]] = [
            (codec.offset_key(group_id, t, p), None) for t, p in partitions
        ]
        if include_group:
            records.append((codec.group_metadata_key(group_id), None))
        if not records:
            return 0
        return await self._append(group_id, records)

    # -- offset expiration ----------------------------------------------------------------------

    async def cleanup_expired_offsets(self) -> int:
        """Remove offsets past offsets.retention.minutes (Kafka 2.1+ rules) and write tombstones.

        Empty groups expire every offset measured from the moment they became empty (from the
        commit for simple-consumer groups); stable consumer groups only those of topics no member
        subscribes to. An empty group left without offsets dies and its metadata is tombstoned.
        """
        retention_ms = int(self.config.offsets_retention_minutes) * 60_000
        now = now_ms()
        removed = 0
        for group in list(self.groups.values()):
            if group.is_state(GroupState.EMPTY):
                expired = _expired(group, retention_ms, now, group.state_timestamp, None)
            elif group.is_state(GroupState.STABLE) and group.subscribed_topics() is not None:
                expired = _expired(group, retention_ms, now, None, group.subscribed_topics())
            else:
                continue
            for tp in expired:
                group.offsets.pop(tp, None)
            dead = group.is_state(GroupState.EMPTY) and not group.offsets
            if dead:
                group.transition_to(GroupState.DEAD)
                self.groups.pop(group.group_id, None)
            if expired or dead:
                removed += len(expired)
                await self.write_tombstones(group.group_id, expired, include_group=dead)
        if removed:
            log.info("Removed %d expired offsets", removed)
        return removed


def _expired(
    group: GroupMetadata, retention_ms: int, now: int, base: int | None, subscribed: set[str] | None
) -> list[tuple[str, int]]:
    out = []
    for tp, om in group.offsets.items():
        if subscribed is not None and tp[0] in subscribed:
            continue
        if om.expire_timestamp is not None:
            expired = now >= om.expire_timestamp
        else:
            expired = now >= (base if base is not None else om.commit_timestamp) + retention_ms
        if expired:
            out.append(tp)
    return out


def group_record(group: GroupMetadata, assignment: dict[str, bytes]) -> codec.GroupMetadataValue:
    protocol = group.protocol_name
    members = tuple(
        codec.MemberRecord(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata(protocol) if protocol else b"",
            assignment.get(m.member_id, b""),
        )  # fmt: skip
        for m in group.members.values()
    )
    return codec.GroupMetadataValue(
        group.protocol_type or "",
        group.generation_id,
        protocol,
        group.leader_id,
        group.state_timestamp if group.state_timestamp is not None else -1,
        members,
    )


def _group_from_record(group_id: str, value: codec.GroupMetadataValue | None) -> GroupMetadata:
    if value is None:
        return GroupMetadata(group_id, GroupState.EMPTY)
    group = GroupMetadata(group_id, GroupState.STABLE if value.members else GroupState.EMPTY)
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.state_timestamp = value.current_state_timestamp if value.current_state_timestamp >= 0 else None
    for m in value.members:
        member = MemberMetadata(
            m.member_id, group_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout,
            m.session_timeout, value.protocol_type, [(value.protocol or "", m.subscription)], m.assignment,
        )  # fmt: skip
        group.add(member)
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    return group


def _read_partition(
    the_log: Any, buffer_size: int
) -> tuple[
    dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]],
    dict[str, codec.GroupMetadataValue],
    dict[int, dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]]],
]:
    """Replay a partition: the last record per key wins, a tombstone removes it (io thread)."""
    offsets: dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]] = {}
    groups: dict[str, codec.GroupMetadataValue] = {}
    reader = CommittedRecordsReader(the_log, the_log.log_end_offset, buffer_size)
    for key, value in reader:
        if key is None:
            continue
        try:
            k = codec.read_key(key)
            if isinstance(k, codec.OffsetKey):
                group_offsets = offsets.setdefault(k.group, {})
                if value is None:
                    group_offsets.pop((k.topic, k.partition), None)
                else:
                    group_offsets[(k.topic, k.partition)] = codec.read_offset_value(value)
            elif value is None:
                groups.pop(k.group, None)
            else:
                groups[k.group] = codec.read_group_value(value)
        except Exception as e:  # one bad record must not lose the partition's other groups
            log.warning("Skipping unreadable record in %s: %s", GROUP_METADATA_TOPIC_NAME, e)
    pending = _open_txn_offsets(reader.open_txns)
    return {g: o for g, o in offsets.items() if o}, groups, pending


def _open_txn_offsets(
    open_txns: dict[int, list[tuple[bytes | None, bytes | None]]],
) -> dict[int, dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]]]:
    """Offsets of transactions still open in the log: pending until their marker arrives."""
    pending: dict[int, dict[str, dict[tuple[str, int], codec.OffsetAndMetadata]]] = {}
    for producer_id, records in open_txns.items():
        for key, value in records:
            if key is None or value is None:
                continue
            with contextlib.suppress(Exception):
                k = codec.read_key(key)
                if isinstance(k, codec.OffsetKey):
                    by_group = pending.setdefault(producer_id, {}).setdefault(k.group, {})
                    by_group[(k.topic, k.partition)] = codec.read_offset_value(value)
    return pending
