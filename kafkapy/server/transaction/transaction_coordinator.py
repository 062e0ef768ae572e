"""TransactionCoordinator: InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn, after Kafka 2.8's TransactionCoordinator.

Every request is checked against the id's metadata (producer id and epoch: a stale epoch is
PRODUCER_FENCED; a write in flight or a transaction being completed is CONCURRENT_TRANSACTIONS,
which clients retry), then the new state is written to __transaction_state and applied once it
is replicated. EndTxn answers after PrepareCommit/PrepareAbort is written; the markers then go
to every partition (transaction_markers.py) and CompleteCommit/CompleteAbort is written. A
transaction left open past its timeout is aborted by the coordinator with the producer's epoch
bumped, which fences the producer; an InitProducerId for an id with an open transaction does
the same. Everything runs on the broker's event loop: no locks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafkapy.client.sasl_client import PLAINTEXT, ClientSecurity
from kafkapy.protocol.constants import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkapy.protocol.errors import (
    ConcurrentTransactionsException,
    InvalidPidMappingException,
    InvalidRequestException,
    InvalidTxnStateException,
    InvalidTxnTimeoutException,
    ProducerFencedException,
)
from kafkapy.server.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafkapy.server.transaction.transaction_log import TxnLogValue
from kafkapy.server.transaction.transaction_markers import (
    TransactionMarkerChannel,
    TxnMarker,
    write_txn_markers,
)
from kafkapy.server.transaction.transaction_state import (
    COMPLETED_STATES,
    PREPARED_STATES,
    TransactionMetadata,
    TransactionState,
    now_ms,
)
from kafkapy.server.transaction.transaction_state_manager import TransactionStateManager

log = logging.getLogger("kafkapy.coordinator.transaction.TransactionCoordinator")

S = TransactionState
MAX_EPOCH = 32767  # Short.MaxValue: an epoch about to reach it moves to a new producer id
_CONCURRENT = ConcurrentTransactionsException.code
_FENCED = ProducerFencedException.code


class TransactionCoordinator:
    def __init__(
        self,
        broker_id: int,
        config: Any,
        replica_manager: Any,
        producer_id_manager: Any,
        metadata_cache: Any,
        group_coordinator: Any,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.producer_id_manager = producer_id_manager
        self.manager = TransactionStateManager(broker_id, config, replica_manager)
        timeout_ms = int(config.request_timeout_ms)
        self.channel = TransactionMarkerChannel(
            broker_id,
            metadata_cache,
            config.inter_broker_listener_name,
            lambda marker: write_txn_markers(replica_manager, group_coordinator, marker, timeout_ms),
            timeout_ms,
            security,  # the inter-broker listener's, as the controller's and fetchers' connections
        )
        self.active = False
        self.topic_creation: asyncio.Future[None] | None = None  # FindCoordinator's, shared
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle ------------------------------------------------------------------------------

    def startup(self) -> None:
        self.active = True
        self._spawn(self._abort_timed_out_periodically())
        self._spawn(self._expire_ids_periodically())
        log.info("[TransactionCoordinator id=%d] Startup complete.", self.broker_id)

    def shutdown(self) -> None:
        self.active = False
        for task in list(self._tasks):
            task.cancel()
        for partition in sorted(self.manager.owned_partitions | self.manager.loading_partitions):
            self.manager.unload(partition)
        self.channel.close()
        log.info("[TransactionCoordinator id=%d] Shutdown complete.", self.broker_id)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def on_elected(self, partition: int, coordinator_epoch: int) -> None:
        """This broker now leads __transaction_state-`partition` (at that leader epoch): load it,
        then finish the transactions caught between prepare and complete."""

        async def load() -> None:
            for md in await self.manager.load(partition, coordinator_epoch):
                if md.state in PREPARED_STATES:
                    self._spawn(self._complete(md, coordinator_epoch, md.state == S.PREPARE_COMMIT))

        self._spawn(load())

    def on_resigned(self, partition: int) -> None:
        self.manager.unload(partition)

    # -- writes ---------------------------------------------------------------------------------

    async def _write(
        self,
        md: TransactionMetadata,
        coordinator_epoch: int,
        target: TransactionState,
        *,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: set[tuple[str, int]] | None = None,
        start_ms: int | None = None,
    ) -> int:
        """Write `md` moved to `target` (with the given fields changed); apply it once replicated."""
        md.check_transition(target)
        now = now_ms()
        new_partitions = md.partitions if partitions is None else partitions
        value = TxnLogValue(
            md.producer_id if producer_id is None else producer_id,
            md.producer_epoch if producer_epoch is None else producer_epoch,
            md.txn_timeout_ms if timeout_ms is None else timeout_ms,
            target,
            tuple(sorted(new_partitions)),
            now,
            md.txn_start_timestamp if start_ms is None else start_ms,
        )
        md.pending = target
        try:
            code = await self.manager.append(md.transactional_id, value, coordinator_epoch)
        finally:
            md.pending = None
        if code == 0:
            md.transition_to(target)
            md.producer_id, md.producer_epoch, md.txn_timeout_ms = (
                value.producer_id,
                value.producer_epoch,
                value.txn_timeout_ms,
            )
            md.partitions = set(new_partitions)
            md.txn_last_update_timestamp, md.txn_start_timestamp = now, value.txn_start_timestamp
        return code

    # -- InitProducerId -------------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        txn_timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> tuple[int, int, int]:
        """(error code, producer id, producer epoch)."""
        if transactional_id == "":
            return InvalidRequestException.code, -1, -1
        if txn_timeout_ms <= 0 or txn_timeout_ms > int(self.config.transaction_max_timeout_ms):
            return InvalidTxnTimeoutException.code, -1, -1
        code, md, coordinator_epoch = self.manager.lookup(transactional_id)
        if code:
            return code, -1, -1
        if md is None:
            pid = await self._new_producer_id()
            code, md, coordinator_epoch = self.manager.lookup(transactional_id)  # it may have moved meanwhile
            if code:
                return code, -1, -1
            if md is None:
                md = self.manager.put(TransactionMetadata(transactional_id, pid, -1, txn_timeout_ms))
        if producer_id >= 0 and (producer_id, producer_epoch) != (md.producer_id, md.producer_epoch):
            return _FENCED, -1, -1  # KIP-360: a producer that is not the current one
        if md.pending is not None or md.state in PREPARED_STATES:
            return _CONCURRENT, -1, -1
        if md.state == S.ONGOING:
            # Fence the producer of the open transaction: abort it with a bumped epoch. The new
            # producer retries and gets its epoch once the abort is complete.
            await self._fence_and_abort(md, coordinator_epoch)
            return _CONCURRENT, -1, -1
        pid, epoch = md.producer_id, md.producer_epoch + 1
        if epoch >= MAX_EPOCH:
            pid, epoch = await self._new_producer_id(), 0
        code = await self._write(
            md, coordinator_epoch, S.EMPTY, producer_id=pid, producer_epoch=epoch, timeout_ms=txn_timeout_ms,
            partitions=set(), start_ms=-1,
        )  # fmt: skip
        if code:
            return code, -1, -1
        log.info(
            "Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
            transactional_id, pid, epoch, "__transaction_state", self.manager.partition_for(transactional_id),
        )  # fmt: skip
        return 0, pid, epoch

    async def _new_producer_id(self) -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.producer_id_manager.generate_producer_id)

    async def _fence_and_abort(self, md: TransactionMetadata, coordinator_epoch: int) -> int:
        epoch = md.producer_epoch + 1 if md.producer_epoch + 1 < MAX_EPOCH else md.producer_epoch
        code = await self._write(md, coordinator_epoch, S.PREPARE_ABORT, producer_epoch=epoch)
        if code == 0:
            self._spawn(self._complete(md, coordinator_epoch, committed=False))
        return code

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------

    def _check_producer(self, md: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> int:
        if md is None or md.producer_id != producer_id:
            return InvalidPidMappingException.code
        if md.producer_epoch != producer_epoch:
            return _FENCED
        if md.pending is not None or md.state in PREPARED_STATES:
            return _CONCURRENT
        return 0

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[tuple[str, int]]
    ) -> int:
        code, md, coordinator_epoch = self.manager.lookup(transactional_id)
        if code:
            return code
        code = self._check_producer(md, producer_id, producer_epoch)
        if code:
            return code
        assert md is not None
        if md.state == S.ONGOING and partitions <= md.partitions:
            return 0
        start = md.txn_start_timestamp if md.state == S.ONGOING else now_ms()
        return await self._write(
            md, coordinator_epoch, S.ONGOING, partitions=md.partitions | partitions, start_ms=start
        )

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> int:
        partition = self.group_partition_for(group_id)
        return await self.add_partitions(
            transactional_id, producer_id, producer_epoch, {(GROUP_METADATA_TOPIC_NAME, partition)}
        )

    def group_partition_for(self, group_id: str) -> int:
        from kafkapy.server.coordinator.group_metadata_manager import partition_for

        return partition_for(group_id, int(self.config.offsets_topic_num_partitions))

    # -- EndTxn ---------------------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool
    ) -> int:
        code, md, coordinator_epoch = self.manager.lookup(transactional_id)
        if code:
            return code
        if md is None or md.producer_id != producer_id:
            return InvalidPidMappingException.code
        if md.producer_epoch != producer_epoch:
            return _FENCED
        if md.pending is not None:
            return _CONCURRENT
        state = md.state
        if state == S.ONGOING:
            target = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
            code = await self._write(md, coordinator_epoch, target)
            if code == 0:
                self._spawn(self._complete(md, coordinator_epoch, committed))
            return code
        if state in COMPLETED_STATES:  # a retry of an EndTxn already done
            return 0 if (state == S.COMPLETE_COMMIT) == committed else InvalidTxnStateException.code
        if state in PREPARED_STATES:
            return _CONCURRENT if (state == S.PREPARE_COMMIT) == committed else InvalidTxnStateException.code
        return InvalidTxnStateException.code

    async def _complete(self, md: TransactionMetadata, coordinator_epoch: int, committed: bool) -> None:
        """Send the markers, then write CompleteCommit/CompleteAbort."""
        txn_id = md.transactional_id
        marker = TxnMarker(
            md.producer_id, md.producer_epoch, committed, coordinator_epoch, tuple(sorted(md.partitions))
        )
        if not await self.channel.send(marker, lambda: self.manager.still_owns(txn_id, coordinator_epoch)):
            return
        target = S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT
        while self.manager.still_owns(txn_id, coordinator_epoch):
            code = await self._write(md, coordinator_epoch, target, partitions=set())
            if code == 0:
                log.debug("Completed transaction of %s as %s", txn_id, target)
                return
            log.warning("Writing %s for %s failed with error %d; retrying", target, txn_id, code)
            await asyncio.sleep(0.1)

    # -- timeouts and expiration ----------------------------------------------------------------

    async def _abort_timed_out_periodically(self) -> None:
        interval = int(self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.abort_timed_out_transactions()
            except Exception:
                log.exception("Error aborting timed-out transactions")

    async def abort_timed_out_transactions(self) -> int:
        now = now_ms()
        aborted = 0
        for md, coordinator_epoch in self.manager.all_transactions():
            if (
                md.state == S.ONGOING
                and md.pending is None
                and now > md.txn_start_timestamp + md.txn_timeout_ms
            ):
                log.info(
                    "Aborting transaction %s of producer %d epoch %d: it timed out after %d ms",
                    md.transactional_id, md.producer_id, md.producer_epoch, md.txn_timeout_ms,
                )  # fmt: skip
                if await self._fence_and_abort(md, coordinator_epoch) == 0:
                    aborted += 1
        return aborted

    async def _expire_ids_periodically(self) -> None:
        interval = int(self.config.transaction_remove_expired_transaction_cleanup_interval_ms) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.remove_expired_transactional_ids()
            except Exception:
                log.exception("Error expiring transactional ids")

    async def remove_expired_transactional_ids(self) -> int:
        """transactional.id.expiration.ms: ids idle that long with no open transaction get a tombstone."""
        expiration = int(self.config.transactional_id_expiration_ms)
        now = now_ms()
        removed = 0
        for md, coordinator_epoch in self.manager.all_transactions():
            idle = md.state == S.EMPTY or md.state in COMPLETED_STATES
            if idle and md.pending is None and now - md.txn_last_update_timestamp >= expiration:
                md.pending = S.DEAD
                try:
                    code = await self.manager.append(md.transactional_id, None, coordinator_epoch)
                finally:
                    md.pending = None
                if code == 0:
                    md.transition_to(S.DEAD)
                    self.manager.remove(md.transactional_id)
                    removed += 1
        return removed
