from __future__ import annotations

import pytest
from log_helpers import FakeClock, records, small_config

from kafkapy.protocol.errors import InvalidProducerEpochException, OutOfOrderSequenceException
from kafkapy.server.log.log import Log


def idempotent(seq: int, n: int = 2, epoch: int = 0, pid: int = 42) -> bytearray:
    return records(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.fixture
def log(tmp_path, clock: FakeClock) -> Log:
    log = Log(str(tmp_path / "t-0"), small_config(), time_ms=clock)
    yield log
    log.close()


def test_retried_batch_gets_its_original_offsets_and_is_not_appended(log: Log) -> None:
    log.append_as_leader(idempotent(0))
    log.append_as_leader(idempotent(2))
    retry = log.append_as_leader(idempotent(0))
    assert (retry.first_offset, retry.last_offset, retry.duplicate) == (0, 1, True)
    assert log.log_end_offset == 4


def test_only_the_last_five_batches_are_remembered(log: Log) -> None:
    for i in range(6):
        log.append_as_leader(idempotent(2 * i))
    assert log.append_as_leader(idempotent(2)).duplicate
    with pytest.raises(OutOfOrderSequenceException):
        log.append_as_leader(idempotent(0))


def test_sequence_gap_is_out_of_order(log: Log) -> None:
    log.append_as_leader(idempotent(0))
    with pytest.raises(OutOfOrderSequenceException):
        log.append_as_leader(idempotent(5))
    assert log.log_end_offset == 2


def test_lower_epoch_is_fenced(log: Log) -> None:
    log.append_as_leader(idempotent(0, epoch=3))
    with pytest.raises(InvalidProducerEpochException):
        log.append_as_leader(idempotent(2, epoch=2))


def test_new_epoch_must_start_at_sequence_zero(log: Log) -> None:
    log.append_as_leader(idempotent(0, epoch=0))
    with pytest.raises(OutOfOrderSequenceException):
        log.append_as_leader(idempotent(7, epoch=1))
    assert log.append_as_leader(idempotent(0, epoch=1)).first_offset == 2


def test_unknown_producer_may_start_at_any_sequence(log: Log) -> None:
    assert log.append_as_leader(idempotent(1000, pid=9)).first_offset == 0
    assert log.append_as_leader(idempotent(1002, pid=9)).first_offset == 2


def test_producers_are_independent(log: Log) -> None:
    log.append_as_leader(idempotent(0, pid=1))
    log.append_as_leader(idempotent(0, pid=2))
    assert log.append_as_leader(idempotent(0, pid=1)).duplicate
    assert log.append_as_leader(idempotent(2, pid=2)).first_offset == 4


def test_producer_state_is_rebuilt_from_the_log_on_reopen(tmp_path, clock: FakeClock) -> None:
    log = Log(str(tmp_path / "t-0"), small_config(), time_ms=clock)
    log.append_as_leader(idempotent(0))
    log.close()
    again = Log(str(tmp_path / "t-0"), small_config(), time_ms=clock)
    assert again.append_as_leader(idempotent(0)).duplicate
    with pytest.raises(OutOfOrderSequenceException):
        again.append_as_leader(idempotent(9))
    again.close()


def test_producer_state_follows_truncation(log: Log) -> None:
    log.append_as_leader(idempotent(0))
    log.append_as_leader(idempotent(2))
    log.truncate_to(2)
    assert not log.append_as_leader(idempotent(2)).duplicate
