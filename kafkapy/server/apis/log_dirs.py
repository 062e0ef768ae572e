"""DescribeLogDirs (35): which of this broker's `log.dirs` holds which replica, with its size and
lag, as Kafka's ReplicaManager.describeLogDirs answers it, and AlterReplicaLogDirs (34).

Each configured log dir is one result, even when it holds nothing. A partition's offset lag is
max(high watermark - log end offset, 0) for a current log (Kafka's getLogEndOffsetLag). Sizes
are summed off the loop: a broker with thousands of segments must not stall the network thread.

AlterReplicaLogDirs validates as Kafka's ReplicaManager.alterReplicaLogDirs does (a dir not in
log.dirs: LOG_DIR_NOT_FOUND; a configured dir that is gone: KAFKA_STORAGE_ERROR). For a replica
this broker does not host yet it records the dir, so the log is created there when the replica
arrives, and answers REPLICA_NOT_AVAILABLE (Kafka's answer, which reassignment tools retry on);
a replica already in that dir answers NONE. A replica in another dir starts moving (a future log
copied by a ReplicaAlterLogDirsThread and swapped in once caught up: server/log_dir_mover.py)
and answers NONE at once, as Kafka does; DescribeLogDirs shows the future log (is_future_key,
offset lag = current log end offset - future log end offset) until the swap.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import Any

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    KafkaStorageException,
    LogDirNotFoundException,
    ReplicaNotAvailableException,
)
from kafkapy.protocol.generated.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from kafkapy.protocol.generated.alter_replica_log_dirs_response import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)
from kafkapy.protocol.generated.describe_log_dirs_request import DescribeLogDirsRequest
from kafkapy.protocol.generated.describe_log_dirs_response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from kafkapy.server.apis.auth_helper import authorize_cluster
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.log.log import Log
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.acl import Operation

log = logging.getLogger("kafkapy.server.ReplicaManager")


def _wanted(body: DescribeLogDirsRequest) -> set[TopicPartition] | None:
    """The request's partitions, or None for every partition (a null topics array)."""
    if body.topics is None:
        return None
    return {TopicPartition(t.topic, p) for t in body.topics for p in t.partitions}


def _volume_bytes(log_dir: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `log_dir` (v4's TotalBytes/UsableBytes)."""
    try:
        st = os.statvfs(log_dir)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def describe_log_dirs(
    log_dirs: Iterable[str],
    logs: dict[TopicPartition, Log],
    wanted: set[TopicPartition] | None,
    futures: dict[TopicPartition, Log] | None = None,
    offline_dirs: frozenset[str] = frozenset(),
) -> list[DescribeLogDirsResult]:
    """One result per log dir (blocking: sums segment sizes)."""
    by_dir: dict[str, dict[str, list[DescribeLogDirsPartition]]] = {d: {} for d in log_dirs}
    entries = [(tp, lg, False) for tp, lg in logs.items()] + [
        (tp, lg, True) for tp, lg in (futures or {}).items()
    ]
    for tp, lg, is_future in sorted(entries, key=lambda e: (e[0].topic, e[0].partition, e[2])):
        if wanted is not None and tp not in wanted:
            continue
        topics = by_dir.get(os.path.dirname(lg.dir))
        if topics is None:  # a log outside every configured dir cannot be described
            continue
        current = logs.get(tp)
        if not is_future:
            lag = max(lg.high_watermark - lg.log_end_offset, 0)
        else:  # Kafka's getLogEndOffsetLag for a future log
            lag = current.log_end_offset - lg.log_end_offset if current is not None else -1
        topics.setdefault(tp.topic, []).append(DescribeLogDirsPartition(
            partition_index=tp.partition,
            partition_size=lg.size,
            offset_lag=lag,
            is_future_key=is_future,
        ))  # fmt: skip
    results = []
    for log_dir, topics in by_dir.items():
        total, usable = _volume_bytes(log_dir)
        # A failed dir (or one that vanished under the broker) is reported as Kafka reports an
        # offline log dir: KAFKA_STORAGE_ERROR and no replicas.
        error = 0 if log_dir not in offline_dirs and os.path.isdir(log_dir) else KafkaStorageException.code
        results.append(DescribeLogDirsResult(
            error_code=error,
            log_dir=log_dir,
            topics=[] if error else [DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in topics.items()],
            total_bytes=total,
            usable_bytes=usable,
        ))  # fmt: skip
    return results


@handles(ApiKey.DESCRIBE_LOG_DIRS)
async def handle_describe_log_dirs(
    apis: KafkaApis, request: Request, body: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    if not authorize_cluster(apis, request, Operation.DESCRIBE):
        # Kafka 3.x: the top-level error (v3+); older versions just see no log dirs.
        return DescribeLogDirsResponse(
            throttle_time_ms=0, error_code=ClusterAuthorizationException.code, results=[]
        )
    log_manager = apis.log_manager
    logs = log_manager.logs_by_topic_partition()
    loop = asyncio.get_running_loop()
    futures = log_manager.moves.future_logs()
    results = await loop.run_in_executor(
        None,
        describe_log_dirs,
        log_manager.log_dirs,
        logs,
        _wanted(body),
        futures,
        log_manager.failure_channel.offline_dirs,
    )
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)


def alter_replica_log_dir(
    log_manager: Any,
    partitions: dict[TopicPartition, Any],
    tp: TopicPartition,
    path: str,
    offline: set[TopicPartition] | frozenset[TopicPartition] = frozenset(),
) -> int:
    """One partition's error code (blocking: only dictionary and stat calls)."""
    destination = os.path.abspath(path)
    if destination not in log_manager.log_dirs:
        log.warning(
            "Unable to alter log dirs for %s: Log dir %s is not found in the config.", tp, destination
        )
        return LogDirNotFoundException.code
    if not log_manager.is_log_dir_online(destination) or not os.path.isdir(destination):
        log.warning("Unable to alter log dirs for %s: Log directory %s is offline", tp, destination)
        return KafkaStorageException.code
    if tp in offline:
        log.warning("Unable to alter log dirs for %s: Partition %s is offline", tp, tp)
        return KafkaStorageException.code
    log_manager.maybe_update_preferred_log_dir(tp, destination)
    partition = partitions.get(tp)
    current = log_manager.get_log(tp)
    if partition is None or current is None:
        return ReplicaNotAvailableException.code
    if os.path.dirname(current.dir) != destination:
        log_manager.moves.start(tp, current, destination)
    return 0


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS)
async def handle_alter_replica_log_dirs(
    apis: KafkaApis, request: Request, body: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    log_manager = apis.log_manager
    partitions = apis.replica_manager.partitions
    offline = apis.replica_manager.offline_partitions
    if not authorize_cluster(apis, request, Operation.ALTER):
        refused: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
        for d in body.dirs:
            for t in d.topics:
                refused.setdefault(t.name, []).extend(
                    AlterReplicaLogDirPartitionResult(
                        partition_index=p, error_code=ClusterAuthorizationException.code
                    )
                    for p in t.partitions
                )
        return AlterReplicaLogDirsResponse(
            throttle_time_ms=0,
            results=[
                AlterReplicaLogDirTopicResult(topic_name=name, partitions=ps) for name, ps in refused.items()
            ],
        )

    def alter_all() -> dict[str, list[AlterReplicaLogDirPartitionResult]]:
        # Off the loop: starting a move creates the future log's files (and may wait for a
        # move to another dir to stop).
        results: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
        for d in body.dirs:
            for t in d.topics:
                for p in t.partitions:
                    code = alter_replica_log_dir(
                        log_manager, partitions, TopicPartition(t.name, p), d.path, offline
                    )
                    results.setdefault(t.name, []).append(
                        AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code)
                    )
        return results

    results = await asyncio.get_running_loop().run_in_executor(None, alter_all)
    return AlterReplicaLogDirsResponse(
        throttle_time_ms=0,
        results=[
            AlterReplicaLogDirTopicResult(topic_name=name, partitions=ps) for name, ps in results.items()
        ],
    )
