"""Kafka's rack-aware replica placement (AdminUtils.assignReplicasToBrokersRackAware), a pure
function beside the rack-unaware one in replica_assignment.py.

Goals, as Kafka states them: the rack-unaware goals (even spread, rotating leaders), plus each
partition's replicas on as many racks as possible. Brokers are first arranged so that racks
alternate (rack a's first broker, rack b's first, ..., rack a's second, ...); placement then walks
that list like the rack-unaware algorithm, skipping a broker whose rack (or itself) already holds
a replica of the partition while some rack (or broker) still holds none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from kafkapy.protocol.errors import InvalidPartitionsException, InvalidReplicationFactorException
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.replica_assignment import assign_replicas_to_brokers


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: racks in name order, brokers by id within a rack."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(broker_racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    racks = sorted(by_rack)
    iterators = {rack: iter(brokers) for rack, brokers in by_rack.items()}
    result: list[int] = []
    rack_index = 0
    while len(result) < len(broker_racks):
        picked = next(iterators[racks[rack_index]], None)
        if picked is not None:
            result.append(picked)
        rack_index = (rack_index + 1) % len(racks)
    return result


def assign_replicas_rack_aware(
    broker_racks: Mapping[int, str],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    if n_partitions <= 0:
        raise InvalidPartitionsException("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorException("Replication factor must be larger than 0.")
    if replication_factor > len(broker_racks):
        raise InvalidReplicationFactorException(
            f"Replication factor: {replication_factor} larger than available brokers: {len(broker_racks)}."
        )
    rng = rng or random.Random()
    arranged = rack_alternated_broker_list(broker_racks)
    n_brokers = len(arranged)
    n_racks = len(set(broker_racks.values()))
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n_brokers)
    partition_id = max(0, start_partition_id)
    result: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if partition_id > 0 and partition_id % n_brokers == 0:
            next_replica_shift += 1
        first = (partition_id + start_index) % n_brokers
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {broker_racks[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                shift = 1 + (next_replica_shift * n_racks + k) % (n_brokers - 1)
                broker = arranged[(first + shift) % n_brokers]
                rack = broker_racks[broker]
                k += 1
                # Skip a broker whose rack already has a replica while a rack has none, or that
                # already has one while a broker has none.
                if (rack not in racks_with_replicas or len(racks_with_replicas) == n_racks) and (
                    broker not in brokers_with_replicas or len(brokers_with_replicas) == n_brokers
                ):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        result[partition_id] = replicas
        partition_id += 1
    return result


def assign_replicas(
    broker_racks: Mapping[int, str | None],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's assignReplicasToBrokers: rack-aware when every broker has a rack, rack-unaware
    when none has (pass racks as None to disable rack awareness)."""
    with_rack = {b: r for b, r in broker_racks.items() if r is not None}
    if not with_rack:
        return assign_replicas_to_brokers(
            sorted(broker_racks), n_partitions, replication_factor, fixed_start_index, start_partition_id, rng
        )
    if len(with_rack) != len(broker_racks):
        raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
    return assign_replicas_rack_aware(
        with_rack, n_partitions, replication_factor, fixed_start_index, start_partition_id, rng
    )
