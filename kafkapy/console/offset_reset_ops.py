"""Resetting a consumer group's offsets, as kafkapy-consumer-groups --reset-offsets does it.

The planning is the tool's (`plan_group`: scope, scenario, clamping into [log start, log end]
with its warnings); so is the refusal of a group that is not inactive (Empty, or Dead: unknown),
raised as NON_EMPTY_GROUP with the tool's message. Dry run returns the plan; execute commits it
(OffsetCommit as a "simple" consumer, which Kafka's coordinator accepts only for an empty group).
Blocking functions: `operations.py` runs them off the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal, get_args

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.errors import INVALID_REQUEST, NON_EMPTY_GROUP, OperationError
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin
from kafkapy.tools.consumer_groups_cmd.reset import ResetSpec, not_inactive_message, plan_group

ResetStrategy = Literal[
    "to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration"
]
STRATEGIES: tuple[str, ...] = get_args(ResetStrategy)
# The scenarios whose option takes a value, and what it is.
_VALUED = {"to-offset": int, "shift-by": int, "to-datetime": str, "by-duration": str}
# {topic: partitions, or None for all of them}; None as a whole: the group's committed partitions
# (--all-topics).
ResetScope = Mapping[str, Sequence[int] | None] | None


def _value(strategy: str, value: int | str | datetime | None) -> str | None:
    """The option's value as the tool's parser would hold it."""
    if strategy not in STRATEGIES:
        raise OperationError(INVALID_REQUEST, f"Unknown reset scenario {strategy}")
    if strategy not in _VALUED:
        return None
    if value is None:
        raise OperationError(INVALID_REQUEST, f"Option {strategy} requires an argument")
    if isinstance(value, datetime):
        if strategy != "to-datetime":
            raise OperationError(INVALID_REQUEST, f"Option {strategy} takes a number, not a date")
        # The tool's format; a naive datetime is local time there too.
        return value.isoformat(timespec="milliseconds")
    if _VALUED[strategy] is int:
        try:
            return str(int(value))
        except ValueError:
            raise OperationError(INVALID_REQUEST, f'For input string: "{value}"') from None
    return str(value)


def _topics(scope: Mapping[str, Sequence[int] | None]) -> tuple[str, ...]:
    """The scope as --topic arguments: 't' (all partitions) or 't:0,1'."""
    return tuple(
        topic if partitions is None else f"{topic}:{','.join(str(p) for p in partitions)}"
        for topic, partitions in scope.items()
    )


def reset_offsets(
    admin: GroupAdmin,
    group: str,
    scope: ResetScope,
    strategy: ResetStrategy,
    value: int | str | datetime | None,
    execute: bool,
) -> dict[TopicPartition, int]:
    spec = ResetSpec(
        scenario=strategy,
        value=_value(strategy, value),
        topics=() if scope is None else _topics(scope),
        all_topics=scope is None,
        single_group=True,
    )
    refusal = not_inactive_message(group, admin.describe_group(group).state)
    if refusal is not None:
        raise OperationError(NON_EMPTY_GROUP, refusal)
    offsets = plan_group(admin, group, spec, None, lambda _line: None)
    if execute and offsets:
        admin.commit_offsets(group, offsets)
    return {TopicPartition(t, p): offset for (t, p), offset in sorted(offsets.items())}
