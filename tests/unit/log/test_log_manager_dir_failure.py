"""A failed log dir is taken offline (Kafka's LogDirFailureChannel + LogManager.handleLogDirFailure):
an OSError in a log operation or a checkpoint reports the dir once, the log operation answers
KAFKA_STORAGE_ERROR, and handling the failure closes the dir's logs without deleting them."""

from __future__ import annotations

import logging
import os
import shutil

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaStorageException
from kafkapy.server.log import log_manager as log_manager_module
from kafkapy.server.log.log_dir_failure_channel import LogDirFailureChannel
from kafkapy.server.log.log_manager import LogManager

CONFIG = small_config(segment_bytes=200, retention_ms=-1)


def fail_dir(path: str) -> None:
    """What Kafka's LogDirFailureTest does: the dir is replaced by a file (open files live on)."""
    shutil.rmtree(path)
    with open(path, "w"):
        pass


@pytest.fixture
def dirs(tmp_path) -> list[str]:
    return [str(tmp_path / "a"), str(tmp_path / "b")]


def two_logs(dirs: list[str], clock: FakeClock) -> tuple[LogManager, TopicPartition, TopicPartition]:
    manager = LogManager(dirs, CONFIG, time_ms=clock)
    manager.startup()
    first, second = TopicPartition("t", 0), TopicPartition("t", 1)
    manager.get_or_create_log(first)
    manager.get_or_create_log(second)
    assert {os.path.dirname(manager.get_log(tp).dir) for tp in (first, second)} == set(dirs)
    return manager, first, second


def in_dir(manager: LogManager, tp0: TopicPartition, tp1: TopicPartition, d: str) -> TopicPartition:
    return tp0 if os.path.dirname(manager.get_log(tp0).dir) == d else tp1


def test_a_roll_into_a_failed_dir_reports_it_once_and_answers_storage_error(
    dirs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    manager, tp0, tp1 = two_logs(dirs, FakeClock())
    failing = in_dir(manager, tp0, tp1, dirs[0])
    log = manager.get_log(failing)
    fail_dir(dirs[0])
    with caplog.at_level(logging.ERROR), pytest.raises(KafkaStorageException):
        for _ in range(10):  # past segment.bytes: the roll creates files in a dir that is a file
            log.append_as_leader(records(5))
    assert f"in dir {dirs[0]}" in caplog.text and f"{failing}" in caplog.text
    channel = manager.failure_channel
    assert channel.offline_dirs == {dirs[0]}
    assert channel.take_next_offline_log_dir(timeout=1) == dirs[0]
    # Once offline, every guarded operation refuses at once, and the dir is not queued again.
    with pytest.raises(KafkaStorageException, match="already offline"):
        log.append_as_leader(records(1))
    assert channel.take_next_offline_log_dir(timeout=0.01) is None


def test_a_failed_checkpoint_takes_the_dir_offline(dirs: list[str]) -> None:
    manager, _, _ = two_logs(dirs, FakeClock())
    fail_dir(dirs[1])
    manager.checkpoint_high_watermarks()
    assert manager.failure_channel.offline_dirs == {dirs[1]}
    assert manager.live_log_dirs == [dirs[0]]


def test_handling_the_failure_closes_the_logs_keeps_the_files_and_places_new_logs_elsewhere(
    dirs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    manager, tp0, tp1 = two_logs(dirs, FakeClock())
    failing, healthy = in_dir(manager, tp0, tp1, dirs[0]), in_dir(manager, tp0, tp1, dirs[1])
    manager.get_log(failing).append_as_leader(records(2))
    manager.failure_channel.maybe_add_offline_log_dir(dirs[0], "Disk error", OSError("EIO"))
    with caplog.at_level(logging.WARNING):
        manager.handle_log_dir_failure(dirs[0])
    assert f"Stopping serving logs in dir {dirs[0]}" in caplog.text
    assert f"Logs for partitions {failing} are offline" in caplog.text
    assert manager.get_log(failing) is None and manager.get_log(healthy) is not None
    assert os.listdir(os.path.join(dirs[0], str(failing)))  # closed, not deleted
    # A replica that existed before (is_new false) is not recreated empty in the good dir.
    with pytest.raises(KafkaStorageException, match="are offline"):
        manager.get_or_create_log(failing, is_new=False)
    created = manager.get_or_create_log(TopicPartition("u", 0))
    assert os.path.dirname(created.dir) == dirs[1]
    manager.shutdown()
    assert not os.path.exists(os.path.join(dirs[0], ".kafka_cleanshutdown"))
    assert os.path.exists(os.path.join(dirs[1], ".kafka_cleanshutdown"))


def test_when_every_log_dir_has_failed_the_broker_halts(
    dirs: list[str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    manager, _, _ = two_logs(dirs, FakeClock())
    halted: list[int] = []
    monkeypatch.setattr(log_manager_module, "halt", halted.append)
    for d in dirs:
        manager.failure_channel.maybe_add_offline_log_dir(d, "Disk error", None)
    with caplog.at_level(logging.CRITICAL):
        manager.handle_log_dir_failure(dirs[1])
    assert halted == [1]
    assert f"Shutdown broker because all log dirs in {', '.join(dirs)} have failed" in caplog.text


def test_a_dir_that_cannot_be_created_is_offline_from_the_start(dirs: list[str]) -> None:
    with open(dirs[0], "w"):
        pass  # a file where a log dir should be
    channel = LogDirFailureChannel()
    manager = LogManager(dirs, CONFIG, failure_channel=channel)
    manager.startup()
    assert manager.live_log_dirs == [dirs[1]]
    assert channel.take_next_offline_log_dir(timeout=1) == dirs[0]
    assert os.path.dirname(manager.get_or_create_log(TopicPartition("t", 0)).dir) == dirs[1]
    manager.shutdown()
    with pytest.raises(KafkaStorageException, match="can be created or validated"):
        LogManager([dirs[0]], CONFIG)
