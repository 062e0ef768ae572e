"""ReplicaManager.handle_log_dir_failure (Kafka's): the replicas in the failed dir become offline
partitions that answer KAFKA_STORAGE_ERROR to clients, to LeaderAndIsr and to StopReplica, their
fetcher stops, the controller is told through /log_dir_event_notification, and the replicas in
the other dir go on as before."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from replication_helpers import batch
from test_replica_manager_replication import FakeFetcherManager

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaStorageException
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager
from kafkapy.server.replica_manager import ReplicaManager

STORAGE = KafkaStorageException.code
LED, FOLLOWED = TopicPartition("t", 0), TopicPartition("t", 1)


class NotifyingZk:
    def __init__(self) -> None:
        self.notified: list[int] = []

    def propagate_log_dir_event(self, broker_id: int) -> str:
        self.notified.append(broker_id)
        return "/log_dir_event_notification/log_dir_event_0000000000"


def leader_and_isr(*states: tuple[int, int, bool]) -> Any:
    """(partition, leader, is_new) for topic t, leader epoch 1, replicas 0,1,2."""
    return SimpleNamespace(
        controller_id=5, controller_epoch=1,
        topic_states=[SimpleNamespace(topic_name="t", topic_id=uuid.UUID(int=7), partition_states=[
            SimpleNamespace(partition_index=p, leader=leader, leader_epoch=1, isr=[0, 1, 2], replicas=[0, 1, 2],
                            partition_epoch=0, is_new=is_new)
            for p, leader, is_new in states])],
        live_leaders=[SimpleNamespace(broker_id=b, host_name="127.0.0.1", port=9000 + b) for b in range(3)],
    )  # fmt: skip


def stop_replica(partition: int) -> Any:
    return SimpleNamespace(
        controller_epoch=1,
        topic_states=[
            SimpleNamespace(
                topic_name="t",
                partition_states=[SimpleNamespace(partition_index=partition, delete_partition=False)],
            )
        ],
    )


@pytest.mark.timeout(30)
def test_a_failed_dir_takes_its_replicas_offline_and_only_those(tmp_path: Path) -> None:
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    logs = LogManager(dirs, LogConfig())
    logs.startup()
    zk = NotifyingZk()
    config = SimpleNamespace(
        replica_lag_time_max_ms=10_000, num_replica_fetchers=1, replica_fetch_wait_max_ms=500,
        replica_fetch_min_bytes=1, replica_fetch_response_max_bytes=1 << 20, replica_fetch_max_bytes=1 << 20,
        replica_fetch_backoff_ms=100, replica_socket_timeout_ms=30_000,
        replica_socket_receive_buffer_bytes=65536,
    )  # fmt: skip
    rm = ReplicaManager(0, logs, lambda topic: LogConfig(), config, lambda: zk)
    events: list[tuple[str, Any]] = []
    rm.fetcher_manager = FakeFetcherManager(events)  # type: ignore[assignment]
    configs = {"t": LogConfig()}
    out = rm.become_leader_or_follower(leader_and_isr((0, 0, True), (1, 1, True)), configs)
    assert [p.error_code for p in out.topics[0].partition_errors] == [0, 0]
    assert rm.append_records(1, [(LED, batch(2))])[LED].error_code == 0
    failed = os.path.dirname(rm.partitions[FOLLOWED].log.dir)
    healthy = os.path.dirname(rm.partitions[LED].log.dir)
    assert failed != healthy

    logs.failure_channel.maybe_add_offline_log_dir(
        failed, f"Error while appending records to t-1 in dir {failed}", OSError("EIO")
    )
    events.clear()
    asyncio.run(rm.handle_log_dir_failure(failed))

    assert zk.notified == [0]
    assert events == [("remove", [FOLLOWED])]
    assert FOLLOWED not in rm.partitions and rm.offline_partitions == {FOLLOWED}
    assert logs.get_log(FOLLOWED) is None and os.path.isdir(os.path.join(failed, "t-1"))  # closed, kept
    fetched = rm.read_from_local_log(-1, 0, 1 << 20, [(FOLLOWED, 0, 1 << 20, -1), (LED, 0, 1 << 20, -1)])
    assert fetched[FOLLOWED].error_code == STORAGE and fetched[LED].error_code == 0
    assert rm.append_records(1, [(FOLLOWED, batch(1))])[FOLLOWED].error_code == STORAGE
    again = rm.become_leader_or_follower(leader_and_isr((0, 0, False), (1, 0, False)), configs)
    assert [p.error_code for p in again.topics[0].partition_errors] == [0, STORAGE]
    assert rm.stop_replicas(stop_replica(1)).partition_errors[0].error_code == STORAGE
    logs.shutdown()
