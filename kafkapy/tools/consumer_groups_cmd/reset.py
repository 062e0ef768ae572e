"""--reset-offsets: plan new offsets per group, print or export the plan, commit it with --execute.

Kafka 2.8's rules: only an inactive group (Empty, or Dead: one that does not exist yet) is
reset; the scope is --all-topics (the group's committed partitions), --topic t[:p,...] or the
plan of --from-file; requested offsets are clamped into [log start, log end] with a warning
(--to-offset, --shift-by, --from-file); a time with no later record resets to the log end.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from kafkapy.tools.consumer_groups_cmd.describe import print_error
from kafkapy.tools.consumer_groups_cmd.group_admin import EARLIEST, LATEST, TP, GroupAdmin

log = logging.getLogger(__name__)
Printer = Callable[[str], None]


class UsageError(Exception):
    """Kafka's printUsageAndDie: a message for the user, exit code 1."""


@dataclass(frozen=True, slots=True)
class ResetSpec:
    scenario: (
        str  # to-earliest, to-latest, to-current, to-offset, shift-by, to-datetime, by-duration, from-file
    )
    value: str | None
    topics: tuple[str, ...]
    all_topics: bool
    single_group: bool


_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse for the PnDTnHnMnS form the tool documents."""
    m = _DURATION.match(text.strip())
    if not m or text.strip().upper() in ("P", "PT"):
        raise UsageError(f"Text cannot be parsed to a Duration: {text}")
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return int(timedelta(days=d, hours=h, minutes=mi, seconds=s).total_seconds() * 1000)


def parse_datetime_ms(text: str) -> int:
    """Kafka's Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone (local if none)."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    elif re.search(r"[+-]\d{4}$", value):
        value = value[:-2] + ":" + value[-2:]
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"Error parsing timestamp '{text}': expected format 'YYYY-MM-DDTHH:mm:SS.sss'"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # the local zone, as Java's default TimeZone
    return int(dt.timestamp() * 1000)


def parse_plan_csv(text: str, group: str | None) -> dict[str, dict[TP, int]]:
    """The --from-file plan: 'topic,partition,offset' (one group) or 'group,topic,partition,offset'."""
    plan: dict[str, dict[TP, int]] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if len(row) == 3 and group is not None:
            g, (t, p, o) = group, row
        elif len(row) == 4:
            g, t, p, o = row
        else:
            raise UsageError(f"Cannot parse reset plan line: {','.join(row)}")
        plan.setdefault(g, {})[(t, int(p))] = int(o)
    return plan


def _partitions(admin: GroupAdmin, group: str, spec: ResetSpec) -> list[TP]:
    if spec.all_topics:
        return sorted(admin.committed_offsets(group))
    out: list[TP] = []
    for arg in spec.topics:
        topic, sep, parts = arg.partition(":")
        if sep:
            out.extend((topic, int(p)) for p in parts.split(","))
        else:
            out.extend((topic, p) for p in admin.partitions_of(topic))
    return out


def _clamp(admin: GroupAdmin, requested: dict[TP, int]) -> dict[TP, int]:
    starts = admin.list_offsets(list(requested), EARLIEST)
    ends = admin.list_offsets(list(requested), LATEST)
    out = {}
    for tp, offset in requested.items():
        end, start = ends.get(tp), starts.get(tp)
        if end is not None and offset > end:
            log.warning(
                "New offset (%d) is higher than latest offset for %s. Value will be set to %d",
                offset,
                tp,
                end,
            )
            offset = end
        elif start is not None and offset < start:
            log.warning(
                "New offset (%d) is lower than earliest offset for %s. Value will be set to %d",
                offset,
                tp,
                start,
            )
            offset = start
        out[tp] = offset
    return out


def _by_time(admin: GroupAdmin, partitions: list[TP], timestamp: int) -> dict[TP, int]:
    found = admin.list_offsets(partitions, timestamp)
    missing = [tp for tp in partitions if found.get(tp, -1) < 0]
    return {**{tp: o for tp, o in found.items() if o >= 0}, **admin.list_offsets(missing, LATEST)}


def _log_offsets(admin: GroupAdmin, partitions: list[TP], which: int, what: str) -> dict[TP, int]:
    found = admin.list_offsets(partitions, which)
    for tp in partitions:
        if tp not in found:
            raise UsageError(f"Error getting {what} offset of topic partition: {tp[0]}-{tp[1]}")
    return found


def plan_group(
    admin: GroupAdmin, group: str, spec: ResetSpec, plan: dict[str, dict[TP, int]] | None, out: Printer
) -> dict[TP, int]:
    if spec.scenario == "from-file":
        group_plan = (plan or {}).get(group)
        if group_plan is None:
            print_error(out, f"No reset plan for group {group} found")
            return {}
        return _clamp(admin, group_plan)
    partitions = _partitions(admin, group, spec)
    s, v = spec.scenario, spec.value
    if s == "to-offset":
        return _clamp(admin, dict.fromkeys(partitions, int(v or 0)))
    if s == "to-earliest":
        return _log_offsets(admin, partitions, EARLIEST, "starting")
    if s == "to-latest":
        return _log_offsets(admin, partitions, LATEST, "ending")
    committed = admin.committed_offsets(group) if s in ("shift-by", "to-current") else {}
    if s == "shift-by":
        for tp in partitions:
            if tp not in committed:
                raise UsageError(
                    f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current committed offset"
                )
        return _clamp(admin, {tp: committed[tp] + int(v or 0) for tp in partitions})
    if s == "to-current":
        without = [tp for tp in partitions if tp not in committed]
        return {
            **{tp: committed[tp] for tp in partitions if tp in committed},
            **_log_offsets(admin, without, LATEST, "ending"),
        }
    if s == "to-datetime":
        return _by_time(admin, partitions, parse_datetime_ms(v or ""))
    if s == "by-duration":
        from time import time_ns

        return _by_time(admin, partitions, time_ns() // 1_000_000 - parse_duration_ms(v or ""))
    raise UsageError(f"Unknown reset scenario {s}")


def not_inactive_message(group: str, state: str) -> str | None:
    """Why the group's offsets cannot be reset now (None: inactive, Empty or Dead)."""
    if state in ("Empty", "Dead"):
        return None
    return (
        f"Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
    )


def reset_offsets(
    admin: GroupAdmin, groups: list[str], spec: ResetSpec, plan: dict[str, dict[TP, int]] | None,
    execute: bool, out: Printer,
) -> dict[str, dict[TP, int]]:  # fmt: skip
    result: dict[str, dict[TP, int]] = {}
    for group in groups:
        refusal = not_inactive_message(group, admin.describe_group(group).state)
        if refusal is not None:
            print_error(out, refusal)
            result[group] = {}
            continue
        offsets = plan_group(admin, group, spec, plan, out)
        if execute and offsets:
            admin.commit_offsets(group, offsets)
        result[group] = offsets
    return result


def print_plan(out: Printer, result: dict[str, dict[TP, int]]) -> None:
    if result:
        out(f"\n{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}")
    for group, offsets in result.items():
        for (t, p), o in sorted(offsets.items()):
            out(f"{group:<30} {t:<30} {p!s:<10} {o!s:<15}")


def export_csv(result: dict[str, dict[TP, int]], single_group: bool) -> str:
    lines = []
    for group, offsets in result.items():
        for (t, p), o in sorted(offsets.items()):
            lines.append(f"{t},{p},{o}\n" if single_group else f"{group},{t},{p},{o}\n")
    return "".join(lines)
