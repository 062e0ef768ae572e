"""TransactionStateManager: the transactional ids this broker coordinates, kept in __transaction_state.

A transactional id lives in partition `partition_for(id)` of __transaction_state, and the
leader of that partition is its coordinator. When this broker becomes leader of a partition
it loads it (COORDINATOR_LOAD_IN_PROGRESS meanwhile), remembering the partition's leader
epoch as the coordinator epoch its markers carry; when it stops leading one it unloads it.
Every state change is one record (transaction_log.py) appended as leader with acks=-1: a
request is answered once the high watermark has passed it, as Kafka's TransactionStateManager
does, so a new coordinator resumes from what was acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import (
    CoordinatorLoadInProgressException,
    NotCoordinatorException,
)
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.coordinator.group_metadata_manager import map_append_error, partition_for
from kafkapy.server.coordinator.log_reader import read_log_records
from kafkapy.server.transaction import transaction_log as txn_log
from kafkapy.server.transaction.transaction_state import TransactionMetadata, now_ms

log = logging.getLogger("kafkapy.coordinator.transaction.TransactionStateManager")

TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"


def transaction_topic_configs(config: Any) -> dict[str, str]:
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.transaction_state_log_segment_bytes),
        "min.insync.replicas": str(config.transaction_state_log_min_isr),
        "compression.type": "uncompressed",
        "unclean.leader.election.enable": "false",
    }


class TransactionStateManager:
    def __init__(self, broker_id: int, config: Any, replica_manager: Any) -> None:
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.num_partitions = int(config.transaction_state_log_num_partitions)
        self.txns: dict[int, dict[str, TransactionMetadata]] = {}  # partition -> id -> metadata
        self.coordinator_epochs: dict[int, int] = {}
        self.loading_partitions: set[int] = set()
        self._load_generation: dict[int, int] = {}

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    @property
    def owned_partitions(self) -> set[int]:
        return set(self.txns)

    def lookup(self, transactional_id: str) -> tuple[int, TransactionMetadata | None, int]:
        """(error code, metadata or None, coordinator epoch) for a request naming this id."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading_partitions:
            return CoordinatorLoadInProgressException.code, None, -1
        txns = self.txns.get(partition)
        if txns is None:
            return NotCoordinatorException.code, None, -1
        return 0, txns.get(transactional_id), self.coordinator_epochs[partition]

    def put(self, metadata: TransactionMetadata) -> TransactionMetadata:
        txns = self.txns[self.partition_for(metadata.transactional_id)]
        return txns.setdefault(metadata.transactional_id, metadata)

    def remove(self, transactional_id: str) -> None:
        self.txns.get(self.partition_for(transactional_id), {}).pop(transactional_id, None)

    def all_transactions(self) -> list[tuple[TransactionMetadata, int]]:
        return [(m, self.coordinator_epochs[p]) for p, txns in self.txns.items() for m in txns.values()]

    def still_owns(self, transactional_id: str, coordinator_epoch: int) -> bool:
        partition = self.partition_for(transactional_id)
        return partition in self.txns and self.coordinator_epochs.get(partition) == coordinator_epoch

    # -- load / unload --------------------------------------------------------------------------

    async def load(self, partition: int, coordinator_epoch: int) -> list[TransactionMetadata]:
        """Read the partition's log; returns the loaded transactions (the coordinator completes
        those caught between prepare and complete)."""
        generation = self._load_generation.get(partition, 0) + 1
        self._load_generation[partition] = generation
        self.loading_partitions.add(partition)
        tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition)
        started = now_ms()
        the_log = self.replica_manager.log_manager.get_log(tp)
        loaded: dict[str, TransactionMetadata] = {}
        try:
            if the_log is not None:
                loaded = await asyncio.get_running_loop().run_in_executor(
                    None, _read_partition, the_log, int(self.config.transaction_state_log_load_buffer_size)
                )
        except Exception:
            log.exception("Error loading transactions from %s", tp)
        if self._load_generation.get(partition) != generation or partition not in self.loading_partitions:
            return []  # resigned (or re-elected) while loading
        self.loading_partitions.discard(partition)
        self.txns[partition] = loaded
        self.coordinator_epochs[partition] = coordinator_epoch
        log.info(
            "Finished loading %d transaction metadata from %s in %d milliseconds, coordinator epoch %d",
            len(loaded), tp, now_ms() - started, coordinator_epoch,
        )  # fmt: skip
        return list(loaded.values())

    def unload(self, partition: int) -> None:
        self._load_generation[partition] = self._load_generation.get(partition, 0) + 1
        self.loading_partitions.discard(partition)
        if self.txns.pop(partition, None) is not None:
            log.info("Unloaded transaction metadata of %s-%d", TRANSACTION_STATE_TOPIC_NAME, partition)
        self.coordinator_epochs.pop(partition, None)

    # -- writes ---------------------------------------------------------------------------------

    async def append(
        self, transactional_id: str, value: txn_log.TxnLogValue | None, coordinator_epoch: int
    ) -> int:
        """Write one record for `transactional_id` and wait for the high watermark; an error code."""
        tp = TopicPartition(TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id))
        record = (txn_log.key_bytes(transactional_id), None if value is None else txn_log.value_bytes(value))
        batch = build_batch([(record[0], record[1], (), now_ms())])
        rm = self.replica_manager
        results = rm.append_records(-1, [(tp, batch)])
        if results[tp].error_code == 0:
            await rm.await_isr(results, int(self.config.request_timeout_ms))
        code = results[tp].error_code
        if code:
            log.warning(
                "Appending to %s for transactional id %s failed with error code %d",
                tp,
                transactional_id,
                code,
            )
            return map_append_error(code)
        if not self.still_owns(transactional_id, coordinator_epoch):
            return NotCoordinatorException.code  # a newer coordinator took over meanwhile
        return 0


def _read_partition(the_log: Any, buffer_size: int) -> dict[str, TransactionMetadata]:
    """Replay a partition: the last record per id wins, a tombstone removes it (io thread)."""
    out: dict[str, TransactionMetadata] = {}
    for key, value in read_log_records(the_log, the_log.log_end_offset, buffer_size):
        if key is None:
            continue
        try:
            txn_id = txn_log.read_key(key)
            if value is None:
                out.pop(txn_id, None)
                continue
            v = txn_log.read_value(value)
            out[txn_id] = TransactionMetadata(
                txn_id, v.producer_id, v.producer_epoch, v.txn_timeout_ms, v.state, set(v.partitions),
                v.txn_start_timestamp, v.txn_last_update_timestamp,
            )  # fmt: skip
        except Exception as e:  # one bad record must not lose the partition's other ids
            log.warning("Skipping unreadable record in %s: %s", TRANSACTION_STATE_TOPIC_NAME, e)
    return out
