"""KIP-320 fencing and OffsetForLeaderEpoch on the leader, against a ReplicaManager with real Logs.

Every request that names the leader epoch it believes current (Fetch v9+, ListOffsets v4+,
OffsetForLeaderEpoch v2+) is refused with FENCED_LEADER_EPOCH when that epoch is older than
this broker's and UNKNOWN_LEADER_EPOCH when newer; naming none (-1) always passes.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from replication_helpers import TP, batch, leader_partition
from test_replica_manager_replication import leader_and_isr, replica_manager

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkapy.protocol.errors import (
    FencedLeaderEpochException,
    NotLeaderOrFollowerException,
    OffsetNotAvailableException,
    UnknownLeaderEpochException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.apis.list_offsets import handle_list_offsets, offset_for
from kafkapy.server.apis.offset_for_leader_epoch import handle_offset_for_leader_epoch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.replica_manager import EpochEndOffset, ReplicaManager

FENCED = FencedLeaderEpochException.code
UNKNOWN_EPOCH = UnknownLeaderEpochException.code
NOT_LEADER = NotLeaderOrFollowerException.code
CONFIGS = {TP.topic: LogConfig()}


def leader_in_epochs(tmp_path: Path, isr: list[int] | None = None) -> ReplicaManager:
    """Broker 0 leads t-0: offsets 0-2 written in epoch 1, offsets 3-4 in epoch 3. With
    followers in the ISR (that never fetch) the high watermark stays at 0."""
    rm, _ = replica_manager(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(0, 1, isr or [0]), CONFIGS)
    assert rm.append_records(1, [(TP, batch(3))])[TP].error_code == 0
    rm.become_leader_or_follower(leader_and_isr(0, 3, isr or [0]), CONFIGS)
    assert rm.append_records(1, [(TP, batch(2))])[TP].error_code == 0
    return rm


def fetch_code(rm: ReplicaManager, current_leader_epoch: int, replica_id: int = -1) -> int:
    return rm.read_from_local_log(replica_id, 0, 1 << 20, [(TP, 0, 1 << 20, current_leader_epoch)])[
        TP
    ].error_code


def request(version: int) -> Any:
    return SimpleNamespace(header=SimpleNamespace(api_version=version))


def decoded(api_key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    return messages.decode_request(api_key, version, messages.encode_request(api_key, version, body))


def offset_for_leader_epoch(
    rm: ReplicaManager,
    leader_epoch: int,
    current_leader_epoch: int = -1,
    version: int = 3,
    replica_id: int = -1,
) -> Any:
    body = decoded(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        version,
        {"replica_id": replica_id, "topics": [{"topic": TP.topic, "partitions": [
            {"partition": 0, "current_leader_epoch": current_leader_epoch, "leader_epoch": leader_epoch}]}]},
    )  # fmt: skip
    out = handle_offset_for_leader_epoch(
        SimpleNamespace(replica_manager=rm, authorizer=None), request(version), body
    )
    # The answer must encode in the version asked, as the broker sends it.
    messages.encode_response(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, out)
    p = out.topics[0].partitions[0]
    return EpochEndOffset(p.error_code, p.partition, p.leader_epoch, p.end_offset)


# -- the check itself ---------------------------------------------------------------------------


def test_partition_epoch_check_passes_none_and_the_current_epoch() -> None:
    p = leader_partition(epoch=5)
    p.check_current_leader_epoch(-1)
    p.check_current_leader_epoch(5)
    with pytest.raises(FencedLeaderEpochException):
        p.check_current_leader_epoch(4)
    with pytest.raises(UnknownLeaderEpochException):
        p.check_current_leader_epoch(6)


# -- Fetch --------------------------------------------------------------------------------------


def test_fetch_naming_a_stale_epoch_is_fenced_and_a_newer_one_unknown(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    assert fetch_code(rm, 1) == FENCED
    assert fetch_code(rm, 4) == UNKNOWN_EPOCH
    assert fetch_code(rm, 3) == 0
    assert fetch_code(rm, -1) == 0
    fenced = rm.read_from_local_log(-1, 0, 1 << 20, [(TP, 0, 1 << 20, 2)])[TP]
    assert fenced.records == [] and fenced.size == 0


def test_fenced_follower_fetch_leaves_the_follower_state_alone(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path, isr=[0, 1, 2])
    p = rm.partitions[TP]
    assert fetch_code(rm, 2, replica_id=1) == FENCED
    assert fetch_code(rm, 9, replica_id=1) == UNKNOWN_EPOCH
    assert p.remote_replicas[1].log_end_offset == -1 and p.log.high_watermark == 0
    assert fetch_code(rm, 3, replica_id=1) == 0
    assert p.remote_replicas[1].log_end_offset == 0


def test_the_epoch_is_checked_before_leadership(tmp_path: Path) -> None:
    # A consumer still fetching from the former leader with the old epoch hears that its epoch
    # is stale, as from Kafka's Partition.getLocalLog.
    rm = leader_in_epochs(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(1, 4, [0, 1]), CONFIGS)
    assert fetch_code(rm, 3) == FENCED
    assert fetch_code(rm, 4) == NOT_LEADER
    assert fetch_code(rm, 5) == UNKNOWN_EPOCH


def test_delayed_fetch_answers_at_once_when_the_epoch_it_named_moves_on(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    leo = rm.partitions[TP].log.log_end_offset
    assert rm.fetchable_bytes(TP, leo, -1, 100, 3) == 0  # nothing new yet: keep waiting
    rm.become_leader_or_follower(leader_and_isr(0, 4, [0]), CONFIGS)  # re-elected, new epoch
    assert rm.fetchable_bytes(TP, leo, -1, 100, 3) == -1
    assert rm.fetchable_bytes(TP, leo, -1, 100, -1) == 0


# -- ListOffsets --------------------------------------------------------------------------------


def list_offsets(
    rm: ReplicaManager, timestamp: int, current_leader_epoch: int, version: int = 4
) -> dict[str, Any]:
    body = decoded(
        ApiKey.LIST_OFFSETS,
        version,
        {"replica_id": -1, "topics": [{"name": TP.topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": current_leader_epoch, "timestamp": timestamp}]}]},
    )  # fmt: skip
    out = handle_list_offsets(SimpleNamespace(replica_manager=rm, authorizer=None), request(version), body)
    return out.topics[0].partitions[0].to_dict()


def test_list_offsets_fencing(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    assert list_offsets(rm, LATEST_TIMESTAMP, 2)["error_code"] == FENCED
    assert list_offsets(rm, LATEST_TIMESTAMP, 4)["error_code"] == UNKNOWN_EPOCH
    assert list_offsets(rm, LATEST_TIMESTAMP, -1)["error_code"] == 0
    assert list_offsets(rm, LATEST_TIMESTAMP, 3)["offset"] == 5
    # Before v4 the request carries no epoch: the codec's -1 never fences.
    assert list_offsets(rm, LATEST_TIMESTAMP, 2, version=3)["error_code"] == 0


def test_list_offsets_answers_the_epoch_of_the_offset_it_returns(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    apis = SimpleNamespace(replica_manager=rm, authorizer=None)
    assert offset_for(apis, TP, LATEST_TIMESTAMP) == (5, -1, 3)  # type: ignore[arg-type]
    assert offset_for(apis, TP, EARLIEST_TIMESTAMP) == (0, -1, 1)  # type: ignore[arg-type]
    assert offset_for(apis, TP, 1_000) == (0, 1_000, 1)  # type: ignore[arg-type]  # batch() stamps 1000
    rm.partitions[TP].log.maybe_increment_log_start_offset(3)  # DeleteRecords: the cache is cut too
    assert offset_for(apis, TP, EARLIEST_TIMESTAMP) == (3, -1, 3)  # type: ignore[arg-type]


def test_list_offsets_latest_is_not_available_while_the_new_leaders_high_watermark_lags(
    tmp_path: Path,
) -> None:
    # Followers in the ISR have not fetched in epoch 3 yet: the high watermark (0) trails the
    # epoch's start (3), and answering it could move a consumer backwards.
    rm = leader_in_epochs(tmp_path, isr=[0, 1, 2])
    apis = SimpleNamespace(replica_manager=rm, authorizer=None)
    with pytest.raises(OffsetNotAvailableException):
        offset_for(apis, TP, LATEST_TIMESTAMP)  # type: ignore[arg-type]
    assert offset_for(apis, TP, LATEST_TIMESTAMP, from_consumer=False) == (5, -1, 3)  # replicas: the LEO  # type: ignore[arg-type]
    for replica in (1, 2):
        rm.read_from_local_log(replica, 0, 1 << 20, [(TP, 5, 1 << 20, 3)])
    assert offset_for(apis, TP, LATEST_TIMESTAMP) == (5, -1, 3)  # type: ignore[arg-type]


# -- OffsetForLeaderEpoch -----------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3, 4])
def test_latest_epoch_ends_at_the_log_end_offset(tmp_path: Path, version: int) -> None:
    rm = leader_in_epochs(tmp_path)
    assert offset_for_leader_epoch(rm, 3, 3, version) == EpochEndOffset(0, 0, 3, 5)


def test_older_epoch_ends_where_the_next_one_starts(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    assert offset_for_leader_epoch(rm, 1) == EpochEndOffset(0, 0, 1, 3)
    # Epoch 2 never wrote here: the answer is the largest epoch below it and where 3 began.
    assert offset_for_leader_epoch(rm, 2) == EpochEndOffset(0, 0, 1, 3)


def test_unknown_epoch_answers_undefined(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    assert offset_for_leader_epoch(rm, 7) == EpochEndOffset(0, 0, -1, -1)
    assert offset_for_leader_epoch(rm, -1) == EpochEndOffset(0, 0, -1, -1)


def test_offset_for_leader_epoch_fencing(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    assert offset_for_leader_epoch(rm, 1, current_leader_epoch=2) == EpochEndOffset(FENCED, 0)
    assert offset_for_leader_epoch(rm, 1, current_leader_epoch=4) == EpochEndOffset(UNKNOWN_EPOCH, 0)


def test_offset_for_leader_epoch_needs_the_leader_unless_asked_for_debugging(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    rm.become_leader_or_follower(leader_and_isr(1, 4, [0, 1]), CONFIGS)
    assert offset_for_leader_epoch(rm, 3, 4, replica_id=-1) == EpochEndOffset(NOT_LEADER, 0)
    assert offset_for_leader_epoch(rm, 3, 4, replica_id=1) == EpochEndOffset(NOT_LEADER, 0)
    # v2 has no replica_id: the spec's default (-2) must not pass for the debugging replica.
    assert offset_for_leader_epoch(rm, 3, 4, version=2) == EpochEndOffset(NOT_LEADER, 0)
    assert offset_for_leader_epoch(rm, 3, 4, replica_id=-2) == EpochEndOffset(0, 0, 3, 5)


def test_offset_for_leader_epoch_of_a_partition_not_hosted_here(tmp_path: Path) -> None:
    rm = leader_in_epochs(tmp_path)
    out = rm.last_offset_for_leader_epoch(TopicPartition("other", 0), -1, 1, True)
    assert out == EpochEndOffset(UnknownTopicOrPartitionException.code, 0)
