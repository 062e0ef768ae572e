"""Kafka's rack-unaware replica placement (AdminUtils.assignReplicasToBrokers), a pure function.

Goals, as Kafka states them: spread replicas evenly over brokers, and for each partition put its
replicas on distinct brokers with the first replica (the preferred leader) rotating round the
brokers. The first replica of partition p goes to broker (p + start_index) % n; the other
replicas follow at a shift that grows by one every n partitions, so followers spread too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kafkapy.protocol.errors import InvalidPartitionsException, InvalidReplicationFactorException


def assign_replicas_to_brokers(
    broker_list: Sequence[int],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """{partition id: replicas}; starting points are random unless `fixed_start_index` >= 0.

    `start_partition_id` >= 0 numbers the new partitions from there (adding partitions)."""
    if n_partitions <= 0:
        raise InvalidPartitionsException("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorException("Replication factor must be larger than 0.")
    n_brokers = len(broker_list)
    if replication_factor > n_brokers:
        raise InvalidReplicationFactorException(
            f"Replication factor: {replication_factor} larger than available brokers: {n_brokers}."
        )
    rng = rng or random.Random()
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    partition_id = max(0, start_partition_id)
    result: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if partition_id > 0 and partition_id % n_brokers == 0:
            next_replica_shift += 1
        first = (partition_id + start_index) % n_brokers
        replicas = [broker_list[first]]
        for j in range(replication_factor - 1):
            replicas.append(broker_list[_replica_index(first, next_replica_shift, j, n_brokers)])
        result[partition_id] = replicas
        partition_id += 1
    return result


def _replica_index(
    first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int
) -> int:
    # The shift is in 1..n-1, so a follower never lands on the first replica's broker.
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers
