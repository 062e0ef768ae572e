"""The operator actions of the kafkapy-* tools, as async calls for the console.

    ops = Operations("127.0.0.1:9092")
    await ops.create_topic("orders", partitions=6, replication_factor=3, configs={"retention.ms": "3600000"})
    await ops.add_partitions("orders", 12)
    await ops.alter_topic_configs("orders", set_configs={"cleanup.policy": "compact"}, delete=["retention.ms"])
    started = await ops.start_reassignment({"orders": {0: [2, 3], 1: [3, 1]}})  # or the tool's JSON
    await ops.ongoing_reassignments()            # [OngoingReassignment(topic, partition, replicas, adding, removing)]
    await ops.verify_reassignment(plan)          # [ReassignmentProgress(..., status="in progress"|"completed"|...)]
    async for report in ops.watch_reassignment(plan, clear_throttles_when_done=True): ...  # until done
    await ops.cancel_reassignments([TopicPartition("orders", 0)])   # start_reassignment(plan, throttle=B/s)
    await ops.elect_preferred_leaders()          # every partition, or elect_preferred_leaders([tp, ...])
    await ops.delete_records({TopicPartition("orders", 0): 100})   # -1: up to the high watermark
    await ops.reset_offsets("billing", {"orders": None}, "to-earliest", execute=False)  # dry run: the plan
    await ops.close()

Every refusal raises `OperationError(error_name, message)` (errors.py: Kafka's error name, and
the message as the broker returned it); per-partition outcomes (elections, record deletion) are
values in the result, as in Kafka's responses. The work is the tools' own code
(kafkapy/client's admin calls, kafkapy/tools' plan parsing, checks and offset planning), run
on one worker thread per Operations: the blocking clients never run on the console's event
loop, and their one-request-at-a-time connections are used by one thread only (calls queue).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TypeVar

from kafkapy.client.admin import DEFAULT_TIMEOUT_MS, AdminClient, NewTopic
from kafkapy.client.configs import TOPIC, incremental_alter_configs
from kafkapy.client.elections import elect_leaders
from kafkapy.client.records_deletion import delete_records
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console import offset_reset_ops, reassignment_ops
from kafkapy.console.errors import OperationError, from_kafka, operation_error
from kafkapy.console.offset_reset_ops import ResetScope, ResetStrategy
from kafkapy.console.reassignment_ops import (
    COMPLETED,
    IN_PROGRESS,
    NOT_AS_PLANNED,
    OngoingReassignment,
    ReassignmentPlan,
    ReassignmentProgress,
    ReassignmentStarted,
)
from kafkapy.protocol.errors import InvalidConfigurationException
from kafkapy.server.controller.events import ElectionType
from kafkapy.tools.configs_cmd.admin_actions import resource_configs
from kafkapy.tools.configs_cmd.options import CommandError, check_deletable
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin
from kafkapy.tools.topic_command.admin_service import check_create_counts
from kafkapy.tools.topic_command.options import check_partition_replicas, validate_topic_configs

__all__ = [
    "COMPLETED",
    "IN_PROGRESS",
    "NOT_AS_PLANNED",
    "OngoingReassignment",
    "OperationError",
    "Operations",
    "ReassignmentPlan",
    "ReassignmentProgress",
    "ReassignmentStarted",
    "ResetScope",
    "ResetStrategy",
]

T = TypeVar("T")


class Operations:
    """The console's operator actions over one cluster (bootstrap servers as the tools take them)."""

    def __init__(
        self,
        bootstrap_servers: str,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        admin_factory: Callable[[], AdminClient] | None = None,
        group_admin_factory: Callable[[], GroupAdmin] | None = None,
    ) -> None:
        """The factories make the blocking clients (on the worker thread, when first needed):
        by default plain ones over `bootstrap_servers`; pass them for TLS/SASL connections."""
        self.bootstrap_servers = bootstrap_servers
        self.timeout_ms = timeout_ms
        self._admin_factory = admin_factory
        self._group_admin_factory = group_admin_factory
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkapy-console-ops")
        self._admin: AdminClient | None = None
        self._groups: GroupAdmin | None = None

    # -- plumbing -------------------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            self._admin = (
                self._admin_factory()
                if self._admin_factory is not None
                else AdminClient(self.bootstrap_servers, timeout_ms=self.timeout_ms)
            )
        return self._admin

    def _group_admin(self) -> GroupAdmin:
        if self._groups is None:
            self._groups = (
                self._group_admin_factory()
                if self._group_admin_factory is not None
                else GroupAdmin(self.bootstrap_servers, timeout_ms=self.timeout_ms)
            )
        return self._groups

    async def _run(self, call: Callable[[], T]) -> T:
        """`call` on the worker thread; a refusal comes back as OperationError."""

        def guarded() -> T:
            try:
                return call()
            except Exception as e:
                refusal = operation_error(e)
                if refusal is None:
                    raise
                raise refusal from e

        return await asyncio.get_running_loop().run_in_executor(self._executor, guarded)

    async def close(self) -> None:
        def close_clients() -> None:
            for client in (self._admin, self._groups):
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
            self._admin = self._groups = None

        with contextlib.suppress(RuntimeError):  # already shut down
            await asyncio.get_running_loop().run_in_executor(self._executor, close_clients)
        self._executor.shutdown(wait=False)

    # -- topics ---------------------------------------------------------------------------------

    async def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """CreateTopics: counts (None: the broker's num.partitions / default.replication.factor)
        or an explicit {partition: replicas} assignment, plus topic configs. kafka-topics' checks
        first (counts, the assignment's lists, LogConfig validation); the rest is the broker's."""

        def create() -> None:
            check_create_counts(partitions, replication_factor)
            if assignment is not None:
                ordered = [assignment[p] for p in sorted(assignment)]
                for partition, replicas in enumerate(ordered):
                    check_partition_replicas(partition, replicas, len(ordered[0]))
            validate_topic_configs(configs or {})
            self._admin_client().create_topic(
                NewTopic(
                    name,
                    -1 if partitions is None else partitions,
                    -1 if replication_factor is None else replication_factor,
                    assignment,
                    dict(configs or {}),
                )
            )

        await self._run(create)

    async def add_partitions(
        self, topic: str, total: int, new_assignment: Sequence[Sequence[int]] | None = None
    ) -> None:
        """CreatePartitions: `total` is the new partition count; `new_assignment` optionally the
        replicas of each new partition (the broker refuses a smaller count: INVALID_PARTITIONS)."""
        await self._run(lambda: self._admin_client().create_partitions({topic: (total, new_assignment)}))

    async def alter_topic_configs(
        self, topic: str, set_configs: Mapping[str, str] | None = None, delete: Sequence[str] = ()
    ) -> None:
        """IncrementalAlterConfigs on the topic: SET the given keys, DELETE the others (which,
        as kafka-configs checks, must be set on the topic: INVALID_CONFIG otherwise)."""

        def alter() -> None:
            admin = self._admin_client()
            if delete:
                dynamic = {c.name for c in resource_configs(admin, TOPIC, topic, describe_all=False)}
                try:
                    check_deletable(dynamic, delete)
                except CommandError as e:
                    raise OperationError(InvalidConfigurationException.name, str(e)) from None
            incremental_alter_configs(admin, TOPIC, topic, dict(set_configs or {}), list(delete))

        await self._run(alter)

    # -- reassignments ----------------------------------------------------------------------------

    async def start_reassignment(
        self, plan: ReassignmentPlan | str, additional: bool = False, throttle: int = -1
    ) -> ReassignmentStarted:
        """AlterPartitionReassignments for `plan` ({topic: {partition: replicas}} or the JSON of
        kafkapy-reassign-partitions) after --execute's checks; with another reassignment in
        flight only when `additional` (--additional), else REASSIGNMENT_IN_PROGRESS. A
        `throttle` >= 0 (B/s) sets --throttle's replication throttles on the moving replicas
        (verify_reassignment(..., clear_throttles_when_done=True) removes them)."""
        return await self._run(
            lambda: reassignment_ops.start(self._admin_client(), plan, additional, throttle)
        )

    async def ongoing_reassignments(self) -> list[OngoingReassignment]:
        """Every reassignment the controller has in flight (kafkapy-reassign-partitions --list)."""
        return await self._run(lambda: reassignment_ops.ongoing(self._admin_client()))

    async def verify_reassignment(
        self, plan: ReassignmentPlan | str, clear_throttles_when_done: bool = False
    ) -> list[ReassignmentProgress]:
        """Each partition of `plan`: in progress, completed, or not as planned (--verify's lines).
        Throttles are left alone unless `clear_throttles_when_done` (--verify's clearing, once
        nothing of the plan is in progress; --preserve-throttles is the default here)."""
        return await self._run(
            lambda: reassignment_ops.verify(self._admin_client(), plan, clear_throttles_when_done)
        )

    async def watch_reassignment(
        self, plan: ReassignmentPlan | str, interval_s: float = 1.0, clear_throttles_when_done: bool = False
    ) -> AsyncIterator[list[ReassignmentProgress]]:
        """verify_reassignment every `interval_s` until no partition is in progress (the last
        report included)."""
        while True:
            progress = await self.verify_reassignment(plan, clear_throttles_when_done)
            yield progress
            if all(p.status != IN_PROGRESS for p in progress):
                return
            await asyncio.sleep(interval_s)

    async def cancel_reassignments(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, OperationError | None]:
        """Cancel the in-flight reassignments of `partitions` (NO_REASSIGNMENT_IN_PROGRESS per
        partition that has none)."""
        return await self._run(lambda: reassignment_ops.cancel(self._admin_client(), partitions))

    # -- leaders and records ----------------------------------------------------------------------

    async def elect_preferred_leaders(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OperationError | None]:
        """ElectLeaders (PREFERRED) for `partitions`, or every partition when None. Each partition's
        outcome: None where the preferred replica became leader, ELECTION_NOT_NEEDED where it
        already was, or the broker's error (PREFERRED_LEADER_NOT_AVAILABLE, ...)."""
        wanted = None if partitions is None else set(partitions)

        def elect() -> dict[TopicPartition, OperationError | None]:
            results = elect_leaders(self._admin_client(), ElectionType.PREFERRED, wanted)
            return {tp: None if e is None else from_kafka(e) for tp, e in sorted(results.items())}

        return await self._run(elect)

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | OperationError]:
        """DeleteRecords: every partition's records before its offset (-1: the high watermark) go;
        each partition's new low watermark, or its error."""

        def delete() -> dict[TopicPartition, int | OperationError]:
            results = delete_records(self._admin_client(), dict(offsets))
            return {tp: r if isinstance(r, int) else from_kafka(r) for tp, r in sorted(results.items())}

        return await self._run(delete)

    # -- consumer groups ------------------------------------------------------------------------

    async def reset_offsets(
        self,
        group: str,
        scope: ResetScope,
        strategy: ResetStrategy,
        value: int | str | datetime | None = None,
        execute: bool = False,
    ) -> dict[TopicPartition, int]:
        """kafka-consumer-groups --reset-offsets for one group: `scope` {topic: partitions or None
        for all} or None for the group's committed partitions (--all-topics); `strategy` one of
        to-earliest, to-latest, to-current, to-offset N, shift-by N, to-datetime (the tool's
        'YYYY-MM-DDTHH:mm:SS.sss[zone]' or a datetime), by-duration ('PnDTnHnMnS'). The new offset
        of each partition; committed only with `execute` (else a dry run). A group that is not
        inactive: NON_EMPTY_GROUP, "Assignments can only be reset if the group '<g>' is inactive,
        but the current state is <State>."."""
        return await self._run(
            lambda: offset_reset_ops.reset_offsets(
                self._group_admin(), group, scope, strategy, value, execute
            )
        )
