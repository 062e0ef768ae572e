"""OffsetCheckpointFile: Kafka's text checkpoint of one offset per partition.

Format (recovery-point-offset-checkpoint, replication-offset-checkpoint,
log-start-offset-checkpoint)::

    0                       version
    2                       number of entries
    my-topic 0 1234         topic, partition, offset; one line each
    other-topic 3 99

Written to `<file>.tmp`, fsynced, then renamed over the old file (and the directory fsynced),
so a crash leaves either the old or the new checkpoint, never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.server.log.durability import fsync_dir

CURRENT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


class CheckpointFormatError(OSError):
    pass


class OffsetCheckpointFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(CURRENT_VERSION), str(len(offsets))]
        lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(offsets.items())]
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fsync_dir(os.path.dirname(self.path))

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; empty if the file does not exist."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return {}
        if not lines:
            raise CheckpointFormatError(f"Malformed checkpoint file ({self.path}): it is empty")
        if lines[0].strip() != str(CURRENT_VERSION):
            raise CheckpointFormatError(
                f"Unrecognized version of the checkpoint file ({self.path}): {lines[0]}"
            )
        try:
            expected = int(lines[1])
        except (IndexError, ValueError):
            raise CheckpointFormatError(
                f"Malformed line in checkpoint file ({self.path}): '{lines[1:2]}'"
            ) from None
        offsets: dict[TopicPartition, int] = {}
        for line in lines[2:]:
            parts = line.split(" ")
            if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
                raise CheckpointFormatError(f"Malformed line in checkpoint file ({self.path}): '{line}'")
            offsets[TopicPartition(parts[0], int(parts[1]))] = int(parts[2])
        if len(offsets) != expected:
            raise CheckpointFormatError(
                f"Expected {expected} entries in checkpoint file ({self.path}), but found {len(offsets)}"
            )
        return offsets
