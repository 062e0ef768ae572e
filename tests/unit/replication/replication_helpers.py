"""Fakes for the replication unit tests: a log that only has offsets, partition states."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.partition import Partition

TP = TopicPartition("t", 0)
NOW = 1_700_000_000_000
LAG = 10_000


@dataclass
class OffsetsLog:
    """The Log surface Partition uses: offsets, a clamped high watermark, min.insync.replicas."""

    log_end_offset: int = 0
    _high_watermark: int = 0
    log_start_offset: int = 0
    config: LogConfig = field(default_factory=LogConfig)

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = min(max(value, self.log_start_offset), self.log_end_offset)

    epochs: dict[int, int] = field(default_factory=dict)  # leader epoch -> start offset

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        self.epochs.setdefault(leader_epoch, start_offset)


@dataclass
class State:
    """A LeaderAndIsr partition state."""

    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int] = field(default_factory=lambda: [0, 1, 2])
    partition_epoch: int = 0


def leader_partition(
    leo: int = 0, isr: tuple[int, ...] = (0, 1, 2), epoch: int = 1, at: int = NOW
) -> Partition:
    """Broker 0 leading t-0 with replicas 0,1,2, its log ending at `leo`."""
    import uuid

    p = Partition(TP, 0, OffsetsLog(leo), LAG)
    p.make_leader(State(0, epoch, list(isr)), 1, uuid.UUID(int=0), at)
    return p


def batch(n: int = 1, base_offset: int = 0, size: int = 10) -> bytearray:
    return build_batch([(b"k", b"v" * size, [], 1_000) for _ in range(n)], base_offset=base_offset)
