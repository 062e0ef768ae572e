"""TransactionCoordinator request rules, on fakes of the replica manager and metadata cache:
epochs, fencing, EndTxn and its retries, markers with the coordinator epoch, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from kafkapy.protocol.control_records import ControlRecordType, parse_control_batch
from kafkapy.protocol.errors import (
    ConcurrentTransactionsException,
    CoordinatorLoadInProgressException,
    CoordinatorNotAvailableException,
    InvalidPidMappingException,
    InvalidTxnStateException,
    InvalidTxnTimeoutException,
    NotCoordinatorException,
    NotEnoughReplicasException,
    ProducerFencedException,
)
from kafkapy.protocol.record_batch import read_header
from kafkapy.server.transaction.transaction_coordinator import TransactionCoordinator
from kafkapy.server.transaction.transaction_state import TransactionState

S = TransactionState
COORDINATOR_EPOCH = 7
TXN = "tx"


class FakeReplicaManager:
    def __init__(self) -> None:
        self.appended: list[tuple[Any, bytes, bool]] = []
        self.fail_code = 0
        self.log_manager = SimpleNamespace(get_log=lambda tp: None)

    def append_records(self, acks: int, entries: Any, *, from_coordinator: bool = False) -> dict[Any, Any]:
        results = {}
        for tp, batch in entries:
            self.appended.append((tp, bytes(batch), from_coordinator))
            results[tp] = SimpleNamespace(error_code=self.fail_code)
        return results

    async def await_isr(self, results: Any, timeout_ms: int) -> None:
        return None

    def markers(self) -> list[tuple[str, int, int, ControlRecordType, int]]:
        """(topic, partition, producer epoch, COMMIT/ABORT, coordinator epoch) of control batches."""
        out = []
        for tp, batch, _ in self.appended:
            header = read_header(batch)
            if header.is_control:
                m = parse_control_batch(batch)
                out.append(
                    (tp.topic, tp.partition, header.producer_epoch, m.control_type, m.coordinator_epoch)
                )
        return out


class FakeCache:
    def contains_topic(self, topic: str) -> bool:
        return True

    def partition_info(self, topic: str, partition: int) -> Any:
        return SimpleNamespace(leader=0)


def make() -> tuple[TransactionCoordinator, FakeReplicaManager]:
    config = SimpleNamespace(
        transaction_state_log_num_partitions=1, request_timeout_ms=1000, inter_broker_listener_name="PLAINTEXT",
        transaction_max_timeout_ms=900_000, offsets_topic_num_partitions=1, transactional_id_expiration_ms=10,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=10_000,
        transaction_remove_expired_transaction_cleanup_interval_ms=10_000,
        transaction_state_log_load_buffer_size=1 << 20,
    )  # fmt: skip
    ids = iter(range(1000, 2000))
    rm = FakeReplicaManager()
    tc = TransactionCoordinator(
        0, config, rm, SimpleNamespace(generate_producer_id=lambda: next(ids)), FakeCache(), None
    )
    tc.active = True
    return tc, rm


def run(
    body: Callable[[TransactionCoordinator, FakeReplicaManager], Awaitable[None]], load: bool = True
) -> None:
    async def main() -> None:
        tc, rm = make()
        if load:
            await tc.manager.load(0, COORDINATOR_EPOCH)
        await body(tc, rm)
        for task in list(tc._tasks):
            task.cancel()

    asyncio.run(main())


async def settle(tc: TransactionCoordinator) -> None:
    """Let spawned completions (markers, then CompleteCommit/Abort) finish."""
    for _ in range(100):
        if not tc._tasks:
            return
        await asyncio.sleep(0.01)


def state(tc: TransactionCoordinator) -> Any:
    return tc.manager.lookup(TXN)[1]


def test_init_bumps_the_epoch_each_time() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        assert await tc.init_producer_id(TXN, 60_000) == (0, 1000, 0)
        assert await tc.init_producer_id(TXN, 60_000) == (0, 1000, 1)
        assert (await tc.init_producer_id(TXN, 900_001))[0] == InvalidTxnTimeoutException.code

    run(body)


def test_commit_writes_markers_with_the_coordinator_epoch_and_completes() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        _, pid, epoch = await tc.init_producer_id(TXN, 60_000)
        assert await tc.add_partitions(TXN, pid, epoch, {("t", 0), ("t", 1)}) == 0
        assert state(tc).state == S.ONGOING
        assert await tc.end_txn(TXN, pid, epoch, committed=True) == 0
        assert state(tc).state == S.PREPARE_COMMIT
        assert await tc.add_partitions(TXN, pid, epoch, {("t", 2)}) == ConcurrentTransactionsException.code
        await settle(tc)
        assert state(tc).state == S.COMPLETE_COMMIT and not state(tc).partitions
        assert sorted(rm.markers()) == [
            ("t", 0, 0, ControlRecordType.COMMIT, COORDINATOR_EPOCH),
            ("t", 1, 0, ControlRecordType.COMMIT, COORDINATOR_EPOCH),
        ]
        assert all(from_coordinator for tp, _, from_coordinator in rm.appended if tp.topic == "t")
        assert await tc.end_txn(TXN, pid, epoch, committed=True) == 0  # a retry
        assert await tc.end_txn(TXN, pid, epoch, committed=False) == InvalidTxnStateException.code

    run(body)


def test_stale_epochs_and_unknown_producers_are_refused() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        _, pid, epoch = await tc.init_producer_id(TXN, 60_000)
        assert await tc.add_partitions(TXN, pid, epoch + 1, {("t", 0)}) == ProducerFencedException.code
        assert await tc.add_partitions(TXN, pid + 1, epoch, {("t", 0)}) == InvalidPidMappingException.code
        assert await tc.end_txn(TXN, pid, epoch, committed=True) == InvalidTxnStateException.code  # Empty
        assert await tc.add_partitions("other", pid, epoch, {("t", 0)}) == InvalidPidMappingException.code

    run(body)


def test_init_with_an_open_transaction_fences_and_aborts_it() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        _, pid, epoch = await tc.init_producer_id(TXN, 60_000)
        await tc.add_partitions(TXN, pid, epoch, {("t", 0)})
        assert (await tc.init_producer_id(TXN, 60_000))[0] == ConcurrentTransactionsException.code
        await settle(tc)
        assert rm.markers() == [("t", 0, epoch + 1, ControlRecordType.ABORT, COORDINATOR_EPOCH)]
        assert await tc.end_txn(TXN, pid, epoch, committed=True) == ProducerFencedException.code
        assert await tc.init_producer_id(TXN, 60_000) == (0, pid, epoch + 2)

    run(body)


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        _, pid, epoch = await tc.init_producer_id(TXN, 1)
        await tc.add_partitions(TXN, pid, epoch, {("t", 0)})
        await asyncio.sleep(0.01)
        assert await tc.abort_timed_out_transactions() == 1
        await settle(tc)
        assert state(tc).state == S.COMPLETE_ABORT and state(tc).producer_epoch == epoch + 1
        assert rm.markers() == [("t", 0, epoch + 1, ControlRecordType.ABORT, COORDINATOR_EPOCH)]

    run(body)


def test_failed_write_changes_nothing_and_maps_the_error() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        _, pid, epoch = await tc.init_producer_id(TXN, 60_000)
        rm.fail_code = NotEnoughReplicasException.code
        assert await tc.add_partitions(TXN, pid, epoch, {("t", 0)}) == CoordinatorNotAvailableException.code
        assert state(tc).state == S.EMPTY and not state(tc).partitions and state(tc).pending is None

    run(body)


def test_requests_before_load_or_elsewhere_are_refused() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        assert (await tc.init_producer_id(TXN, 60_000))[0] == NotCoordinatorException.code
        tc.manager.loading_partitions.add(0)
        assert (await tc.init_producer_id(TXN, 60_000))[0] == CoordinatorLoadInProgressException.code

    run(body, load=False)


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    async def body(tc: TransactionCoordinator, rm: FakeReplicaManager) -> None:
        await tc.init_producer_id(TXN, 60_000)
        await asyncio.sleep(0.02)
        assert await tc.remove_expired_transactional_ids() == 1
        assert state(tc) is None
        tombstone = rm.appended[-1][1]
        assert read_header(tombstone).records_count == 1

    run(body)
