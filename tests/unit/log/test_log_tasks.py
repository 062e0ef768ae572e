"""The producer id expiration task: scheduled by LogTasks, run off the event loop."""

from __future__ import annotations

import asyncio
import threading

from kafkapy.server.config import KafkaConfig
from kafkapy.server.log_tasks import LogTasks


class RecordingLogManager:
    """Stands in for LogManager: records the expiration calls and the threads they ran on."""

    def __init__(self) -> None:
        self.expirations: list[tuple[int, str]] = []

    def remove_expired_producers(self, expiration_ms: int) -> int:
        self.expirations.append((expiration_ms, threading.current_thread().name))
        return 0

    def cleanup_logs(self) -> int:
        return 0

    def flush_dirty_logs(self) -> None:
        pass

    def checkpoint_recovery_points(self) -> None:
        pass

    def checkpoint_log_start_offsets(self) -> None:
        pass

    def checkpoint_high_watermarks(self) -> None:
        pass


def test_producer_ids_are_expired_periodically_off_the_loop() -> None:
    config = KafkaConfig(
        {
            "zookeeper.connect": "localhost:2181",
            "producer.id.expiration.ms": "12345",
            "producer.id.expiration.check.interval.ms": "20",
        }
    )
    manager = RecordingLogManager()

    async def run() -> str:
        tasks = LogTasks(config, manager, None)
        tasks.start()
        await asyncio.sleep(0.2)
        tasks.stop()
        return threading.current_thread().name

    loop_thread = asyncio.run(run())
    assert len(manager.expirations) >= 2
    assert {ms for ms, _ in manager.expirations} == {12345}
    assert all(thread != loop_thread for _, thread in manager.expirations)


def test_kafkas_defaults() -> None:
    config = KafkaConfig({"zookeeper.connect": "localhost:2181"})
    assert config.producer_id_expiration_ms == 86_400_000
    assert config.producer_id_expiration_check_interval_ms == 600_000
    assert config.num_recovery_threads_per_data_dir == 1
