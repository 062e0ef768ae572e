"""Transactional offset commits (TxnOffsetCommit, KIP-98) on the group coordinator's side.

A TxnOffsetCommit writes the offsets to __consumer_offsets as a transactional batch of the
producer (its id and epoch, so a fenced producer is refused by the partition's producer state)
and keeps them pending, invisible to OffsetFetch. The COMMIT marker the transaction coordinator
later writes to that partition makes them the group's committed offsets; an ABORT drops them
(Kafka's GroupMetadataManager.handleTxnCompletion). A coordinator that loads the partition
replays the same rule (group_metadata_manager._read_partition).
"""

from __future__ import annotations

import logging

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import InvalidProducerEpochException, ProducerFencedException
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.coordinator.group_metadata import GroupMetadata, now_ms
from kafkapy.server.coordinator.group_metadata_manager import (
    GROUP_METADATA_TOPIC_NAME,
    GroupMetadataManager,
    map_append_error,
)

log = logging.getLogger("kafkapy.coordinator.group.GroupCoordinator")

TopicPartitionKey = tuple[str, int]
_FENCED = (InvalidProducerEpochException.code, ProducerFencedException.code)
# producer id -> group id -> offsets waiting for the transaction's end
PendingTxnOffsets = dict[int, dict[str, dict[TopicPartitionKey, codec.OffsetAndMetadata]]]


async def store_txn_offsets(
    manager: GroupMetadataManager,
    pending: PendingTxnOffsets,
    group: GroupMetadata,
    producer_id: int,
    producer_epoch: int,
    offsets: dict[TopicPartitionKey, codec.OffsetAndMetadata],
) -> int:
    """Append the offsets as the producer's transactional batch; keep them pending on success."""
    group_id = group.group_id
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, manager.partition_for(group_id))
    ts = now_ms()
    batch = build_batch(
        [
            (codec.offset_key(group_id, t, p), codec.offset_value(om), (), ts)
            for (t, p), om in offsets.items()
        ],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
    )
    rm = manager.replica_manager
    results = rm.append_records(-1, [(tp, batch)], from_coordinator=True)
    if results[tp].error_code == 0:
        await rm.await_isr(results, int(manager.config.offsets_commit_timeout_ms))
    code = results[tp].error_code
    if code:
        log.warning(
            "Appending transactional offsets to %s for group %s failed with error %d", tp, group_id, code
        )
        # A fenced producer must learn that it is fenced, not that the coordinator moved.
        return code if code in _FENCED else map_append_error(code)
    pending.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
    return 0


def complete_txn_offsets(
    manager: GroupMetadataManager,
    pending: PendingTxnOffsets,
    producer_id: int,
    partition: int,
    committed: bool,
) -> None:
    """A marker reached __consumer_offsets-`partition`: apply or drop the producer's offsets there."""
    groups = pending.get(producer_id)
    if not groups:
        return
    for group_id in [g for g in groups if manager.partition_for(g) == partition]:
        offsets = groups.pop(group_id)
        group = manager.get_group(group_id)
        if committed and group is not None:
            group.offsets.update(offsets)
    if not groups:
        pending.pop(producer_id, None)


def any_pending(pending: PendingTxnOffsets, group_id: str) -> bool:
    return any(group_id in groups for groups in pending.values())


def txn_offset_commit_group(manager: GroupMetadataManager, group_id: str) -> GroupMetadata:
    group = manager.get_group(group_id)
    return group if group is not None else manager.add_group(GroupMetadata(group_id))
