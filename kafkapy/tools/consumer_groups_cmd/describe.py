"""--list and --describe (--offsets, --members [--verbose], --state), printed as Kafka 2.8 prints them.

Column widths, the `-` for missing values, the leading blank lines and which messages go to
stderr follow ConsumerGroupCommand.scala line for line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkapy.tools.consumer_groups_cmd.group_admin import LATEST, TP, GroupAdmin, GroupDescription

MISSING = "-"
Printer = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Row:
    topic: str
    partition: int
    offset: int | None
    log_end: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end is None:
            return None
        return self.log_end - self.offset


def _s(v: object) -> str:
    return MISSING if v is None else str(v)


def print_error(out: Printer, message: str) -> None:
    out(f"\nError: {message}")


def should_print(out: Printer, err: Printer, group: str, state: str, rows: int) -> bool:
    """Kafka's shouldPrintMemberState: the state's message, and whether there are rows to print."""
    if state == "Dead":
        print_error(out, f"Consumer group '{group}' does not exist.")
    elif state == "Empty":
        err(f"\nConsumer group '{group}' has no active members.")
    elif state in ("PreparingRebalance", "CompletingRebalance"):
        err(f"\nWarning: Consumer group '{group}' is rebalancing.")
    return state != "Dead" and rows > 0


def list_groups(admin: GroupAdmin, out: Printer, states: set[str] | None) -> None:
    if states is None:
        for group, _ in admin.list_groups():
            out(group)
        return
    groups = admin.list_groups(states)
    width = max([15, *(len(g) for g, _ in groups)])
    out(f"{'GROUP':<{width}} STATE")
    for group, state in groups:
        out(f"{group:<{width}} {state}")


def offset_rows(admin: GroupAdmin, desc: GroupDescription) -> list[Row]:
    committed = admin.committed_offsets(desc.group_id)
    members = sorted((m for m in desc.members if m.assignment), key=lambda m: -len(m.assignment))
    assigned = {tp for m in members for tp in m.assignment}
    unassigned = sorted(tp for tp in committed if tp not in assigned)
    log_end = admin.list_offsets([*assigned, *unassigned], LATEST)
    rows = []
    for m in members:
        for tp in sorted(m.assignment, key=lambda tp: tp[1]):
            rows.append(
                Row(tp[0], tp[1], committed.get(tp), log_end.get(tp), m.member_id, m.host, m.client_id)
            )
    for tp in unassigned:
        rows.append(Row(tp[0], tp[1], committed[tp], log_end.get(tp), MISSING, MISSING, MISSING))
    return rows


def print_offsets(out: Printer, err: Printer, group: str, state: str, rows: list[Row]) -> None:
    if not should_print(out, err, group, state, len(rows)):
        return
    g = max([15, len(group)])
    t = max([15, *(len(r.topic) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])

    def line(*v: object) -> str:
        return f"{v[0]!s:<{g}} {v[1]!s:<{t}} {v[2]!s:<10} {v[3]!s:<15} {v[4]!s:<15} {v[5]!s:<15} {v[6]!s:<{c}} {v[7]!s:<{h}} {v[8]!s}"

    out(
        "\n"
        + line(
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        )
    )
    for r in rows:
        out(
            line(
                group,
                r.topic,
                r.partition,
                _s(r.offset),
                _s(r.log_end),
                _s(r.lag),
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )


def print_members(out: Printer, err: Printer, desc: GroupDescription, verbose: bool) -> None:
    members = desc.members
    if not should_print(out, err, desc.group_id, desc.state, len(members)):
        return
    g = max([15, len(desc.group_id)])
    c = max([15, *(len(m.member_id) for m in members)])
    i = max([17, *(len(m.group_instance_id or "") for m in members)])
    h = max([15, *(len(m.host) for m in members)])
    k = max([15, *(len(m.client_id) for m in members)])
    with_instance = any(m.group_instance_id for m in members)

    def line(group: str, member: str, instance: str, host: str, client: str, n: object) -> str:
        cols = f"{group:<{g}} {member:<{c}} "
        if with_instance:
            cols += f"{instance:<{i}} "
        return cols + f"{host:<{h}} {client:<{k}} {n!s:<15} "

    out(
        "\n"
        + line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        + ("ASSIGNMENT" if verbose else "")
    )
    for m in members:
        text = line(
            desc.group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id, len(m.assignment)
        )
        if verbose:
            text += _assignment_text(m.assignment)
        out(text)


def _assignment_text(assignment: tuple[TP, ...]) -> str:
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for t, p in assignment:
        by_topic.setdefault(t, []).append(p)
    return ", ".join(sorted(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in by_topic.items()))


def print_state(out: Printer, err: Printer, desc: GroupDescription) -> None:
    if not should_print(out, err, desc.group_id, desc.state, 1):
        return
    node = desc.coordinator
    coordinator = f"{node.host}:{node.port} ({node.id})"
    w = max(25, len(coordinator))  # Kafka sizes the GROUP column by the coordinator's width
    out(f"\n{'GROUP':<{w}} {'COORDINATOR (ID)':<25} {'ASSIGNMENT-STRATEGY':<20} {'STATE':<15} #MEMBERS")
    out(f"{desc.group_id:<{w}} {coordinator:<25} {desc.assignor:<20} {desc.state:<15} {len(desc.members)}")


def describe(
    admin: GroupAdmin, out: Printer, err: Printer, groups: list[str], what: str, verbose: bool
) -> None:
    """`what` is "offsets", "members" or "state"; groups are described in sorted order, as Kafka's TreeMap."""
    for group in sorted(groups):
        desc = admin.describe_group(group)
        if what == "members":
            print_members(out, err, desc, verbose)
        elif what == "state":
            print_state(out, err, desc)
        else:
            rows = offset_rows(admin, desc) if desc.state != "Dead" else []
            print_offsets(out, err, group, desc.state, rows)
