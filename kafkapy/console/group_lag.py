"""Consumer group lag, measured as kafka-consumer-groups --describe measures it: the blocking
part of history.py.

For each group (every consumer group the brokers list, or the ones named), the rows of
`describe --offsets` (`offset_rows`: the partitions assigned to members and those with committed
offsets) give each partition's lag = log end offset - committed offset, unknown ("-") where the
group has no committed offset or the leader did not answer. A group's total lag is the sum of the
known ones. Dead groups (deleted, or never seen) are left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaError
from kafkapy.tools.consumer_groups_cmd.describe import offset_rows
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GroupLag:
    state: str
    total: int
    partitions: Mapping[TopicPartition, int | None]  # None: unknown, as the tool's "-"


def group_lag(admin: GroupAdmin, group: str) -> GroupLag | None:
    """One group's lag now; None for a Dead group."""
    description = admin.describe_group(group)
    if description.state == "Dead":
        return None
    partitions = {TopicPartition(r.topic, r.partition): r.lag for r in offset_rows(admin, description)}
    return GroupLag(description.state, sum(lag for lag in partitions.values() if lag is not None), partitions)


def lag_round(admin: GroupAdmin, groups: Sequence[str] | None) -> dict[str, GroupLag]:
    """Every group's lag now (`groups` None: all consumer groups). A group that fails to answer is
    skipped this round; the listing failing (no broker reachable) raises."""
    names = [g for g, _ in admin.list_groups()] if groups is None else list(groups)
    found = {}
    for group in names:
        try:
            lag = group_lag(admin, group)
        except (KafkaError, OSError) as e:
            log.debug("Lag of group %s not sampled: %s", group, e)
            continue
        if lag is not None:
            found[group] = lag
    return found
