"""Sentinel values the protocol and the broker share, each defined once.

Names and values are Kafka's; the comment on each group says which Kafka class holds them, so
a reader can check them there. Error codes are not here: they live in `errors.py`.
"""

from __future__ import annotations

import uuid
from typing import Final

# org.apache.kafka.common.Uuid.ZERO_UUID: "no topic id" in Metadata, Fetch and LeaderAndIsr.
ZERO_UUID: Final = uuid.UUID(int=0)

# ListOffsetsRequest: the timestamps that ask for the log start or the log end (the last
# stable offset for read_committed), and the offset answered when there is none.
EARLIEST_TIMESTAMP: Final = -2
LATEST_TIMESTAMP: Final = -1
UNKNOWN_OFFSET: Final = -1  # ListOffsetsResponse.UNKNOWN_OFFSET
# OffsetFetchResponse.INVALID_OFFSET: a group has no committed offset for the partition.
INVALID_OFFSET: Final = -1

# FetchRequest (and ListOffsets): the replica id of an ordinary consumer, and of a debugging
# consumer allowed to read from a follower.
CONSUMER_REPLICA_ID: Final = -1
DEBUGGING_REPLICA_ID: Final = -2

# RecordBatch: a batch's fields when nobody set them.
NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
# Also a request's current_leader_epoch (KIP-320) when the client knows none: never fenced.
NO_PARTITION_LEADER_EPOCH: Final = -1

# EpochEndOffset (OffsetsForLeaderEpoch, the leader epoch cache): no such epoch / offset.
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1

# kafka.api.LeaderAndIsr: the leader and leader epoch sentinels the controller writes and
# brokers read on the wire, and where a new partition's epochs start.
NO_LEADER: Final = -1
LEADER_DURING_DELETE: Final = -2
NO_EPOCH: Final = -1
EPOCH_DURING_DELETE: Final = -2
INITIAL_LEADER_EPOCH: Final = 0
# LeaderAndIsr.initialZKVersion: the partition epoch is the zk version of the /state znode.
INITIAL_PARTITION_EPOCH: Final = 0

# KafkaController: /controller_epoch starts at 0 (the first controller makes it 1).
INITIAL_CONTROLLER_EPOCH: Final = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION: Final = 0

# A broker epoch that was never registered (controlled shutdown, KIP-380).
UNKNOWN_BROKER_EPOCH: Final = -1
