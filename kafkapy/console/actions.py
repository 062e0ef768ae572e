"""The operator actions the console offers, each behind a confirmation page.

POST /actions/<name> with the action's form: the first POST only reads the form and shows what
would be done (the offset reset shows its dry-run plan); the confirm page re-posts the same
fields with `confirmed=yes`, and only that POST acts, through `kafkapy.console.operations` (the
tools' own checks and admin calls). A refusal is shown as Kafka's error name and message. In
read-only mode (the default) every action is refused with 403 before its form is read, and every
POST must carry the session's form token.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from kafkapy.client.admin import DEFAULT_TIMEOUT_MS
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.console.clients import ClusterAccess, Credentials
from kafkapy.console.errors import INVALID_REQUEST, OperationError
from kafkapy.console.offset_reset_ops import STRATEGIES
from kafkapy.console.operations import (
    IN_PROGRESS,
    OngoingReassignment,
    Operations,
    ReassignmentProgress,
)

if TYPE_CHECKING:
    from kafkapy.console.app import Console

Fields = Mapping[str, str]
__all__ = ["ACTIONS", "STRATEGIES", "action_endpoint", "plan_json", "reassignments_page"]


@dataclass(frozen=True)
class Outcome:
    """What an action did: lines to show, per-item refusals, and where to go next."""

    lines: tuple[str, ...] = ()
    refusals: tuple[tuple[str, OperationError], ...] = ()
    next_url: str | None = None
    next_label: str = ""


@dataclass(frozen=True)
class Action:
    name: str
    title: str
    # The form's fields as the confirm page lists them: (field, label).
    fields: tuple[tuple[str, str], ...]
    run: Callable[[Operations, Fields], Awaitable[Outcome]]
    # Shown on the confirm page before acting (the reset's plan); may refuse early.
    preview: Callable[[Operations, Fields], Awaitable[tuple[str, ...]]] | None = None
    back: Callable[[Fields], str] = field(default=lambda f: "/")


def operations(access: ClusterAccess, credentials: Credentials | None) -> Operations:
    """Operations whose clients connect as the logged-in user (SASL) or with --command-config."""
    return Operations(
        access.bootstrap_servers,
        admin_factory=lambda: access.new_admin(credentials, DEFAULT_TIMEOUT_MS),
        group_admin_factory=lambda: access.new_groups(credentials, DEFAULT_TIMEOUT_MS),
    )


# -- form parsing -----------------------------------------------------------------------------------


def _invalid(message: str) -> OperationError:
    return OperationError(INVALID_REQUEST, message)


def _required(fields: Fields, name: str, label: str) -> str:
    value = fields.get(name, "").strip()
    if not value:
        raise _invalid(f"{label} is required")
    return value


def _int(fields: Fields, name: str, label: str, optional: bool = False) -> int | None:
    text = fields.get(name, "").strip()
    if not text and optional:
        return None
    try:
        return int(text)
    except ValueError:
        raise _invalid(f"{label} must be an integer, not {text!r}") from None


def _config_lines(text: str) -> dict[str, str]:
    """`key=value` per line (kafka-configs' --add-config, one per line)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise _invalid(f"Invalid config {line.strip()!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def _topic_url(topic: str) -> str:
    return "/topics/" + quote(topic, safe="")


# -- the actions ------------------------------------------------------------------------------------


async def _create_topic(ops: Operations, f: Fields) -> Outcome:
    name = _required(f, "topic", "Topic")
    await ops.create_topic(
        name,
        _int(f, "partitions", "Partitions", optional=True),
        _int(f, "replication_factor", "Replication factor", optional=True),
        configs=_config_lines(f.get("configs", "")),
    )
    return Outcome((f"Created topic {name}.",), next_url=_topic_url(name), next_label=f"Topic {name}")


async def _add_partitions(ops: Operations, f: Fields) -> Outcome:
    topic = _required(f, "topic", "Topic")
    total = _int(f, "partitions", "Partition count") or 0
    await ops.add_partitions(topic, total)
    return Outcome(
        (f"Topic {topic} now has {total} partitions.",),
        next_url=_topic_url(topic),
        next_label=f"Topic {topic}",
    )


async def _alter_configs(ops: Operations, f: Fields) -> Outcome:
    topic = _required(f, "topic", "Topic")
    to_set = _config_lines(f.get("set", ""))
    to_delete = [k.strip() for k in f.get("delete", "").split(",") if k.strip()]
    if not to_set and not to_delete:
        raise _invalid("Nothing to set or delete")
    await ops.alter_topic_configs(topic, to_set, to_delete)
    return Outcome(
        (f"Completed updating config for topic {topic}.",),
        next_url=_topic_url(topic),
        next_label=f"Topic {topic}",
    )


async def _reassign(ops: Operations, f: Fields) -> Outcome:
    plan = _required(f, "plan", "Reassignment plan")
    started = await ops.start_reassignment(plan, additional=f.get("additional") == "yes")
    moved = ", ".join(str(tp) for tp in started.partitions)
    return Outcome(
        (
            f"Successfully started partition reassignment{'s' if len(started.partitions) != 1 else ''} for {moved}",
            "Current partition replica assignment (save it to roll back):",
            started.rollback_json,
        ),
        next_url="/reassignments?" + urlencode({"plan": plan}),
        next_label="Watch the reassignment",
    )


def _partitions(f: Fields) -> list[TopicPartition] | None:
    topic = f.get("topic", "").strip()
    if not topic:
        return None  # every partition of the cluster
    partition = _int(f, "partition", "Partition", optional=True)
    return [TopicPartition(topic, partition)] if partition is not None else None


async def _elect(ops: Operations, f: Fields) -> Outcome:
    topic = f.get("topic", "").strip()
    wanted = _partitions(f)
    if topic and wanted is None:
        # Every partition of one topic: the topic page's form says how many it has.
        count = _int(f, "partition_count", "Partition count")
        wanted = [TopicPartition(topic, p) for p in range(count or 0)]
    results = await ops.elect_preferred_leaders(wanted)
    lines = tuple(
        f"Successfully completed leader election (PREFERRED) for partition {tp}"
        for tp, e in results.items()
        if e is None
    )
    refusals = tuple((str(tp), e) for tp, e in results.items() if e is not None)
    return Outcome(
        lines, refusals, _topic_url(topic) if topic else "/topics", f"Topic {topic}" if topic else "Topics"
    )


async def _delete_records(ops: Operations, f: Fields) -> Outcome:
    topic = _required(f, "topic", "Topic")
    partition = _int(f, "partition", "Partition") or 0
    offset = _int(f, "offset", "Offset")
    results = await ops.delete_records({TopicPartition(topic, partition): -1 if offset is None else offset})
    lines = tuple(
        f"partition: {tp}\tlow_watermark: {r}"
        for tp, r in results.items()
        if not isinstance(r, OperationError)
    )
    refusals = tuple((str(tp), r) for tp, r in results.items() if isinstance(r, OperationError))
    return Outcome(lines, refusals, _topic_url(topic), f"Topic {topic}")


def _reset_args(f: Fields) -> tuple[str, dict[str, list[int] | None] | None, str, str | None]:
    group = _required(f, "group", "Group")
    topic = f.get("topic", "").strip()
    strategy = _required(f, "strategy", "Strategy")
    if strategy not in STRATEGIES:
        raise _invalid(f"Unknown reset strategy {strategy!r}")
    value = f.get("value", "").strip() or None
    return group, ({topic: None} if topic else None), strategy, value


async def _reset_preview(ops: Operations, f: Fields) -> tuple[str, ...]:
    group, scope, strategy, value = _reset_args(f)
    plan = await ops.reset_offsets(group, scope, strategy, value, execute=False)  # type: ignore[arg-type]
    return tuple(f"{tp}: new offset {offset}" for tp, offset in plan.items()) or ("No partitions to reset.",)


async def _reset(ops: Operations, f: Fields) -> Outcome:
    group, scope, strategy, value = _reset_args(f)
    done = await ops.reset_offsets(group, scope, strategy, value, execute=True)  # type: ignore[arg-type]
    return Outcome(
        tuple(f"{tp}: committed offset {offset}" for tp, offset in done.items()),
        next_url="/groups/" + quote(group, safe=""),
        next_label=f"Group {group}",
    )


def _topic_back(f: Fields) -> str:
    topic = f.get("topic", "").strip()
    return _topic_url(topic) if topic else "/topics"


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action(
            "create-topic",
            "Create topic",
            (
                ("topic", "Topic"),
                ("partitions", "Partitions"),
                ("replication_factor", "Replication factor"),
                ("configs", "Configs"),
            ),  # fmt: skip
            _create_topic,
            back=lambda f: "/topics",
        ),
        Action(
            "add-partitions",
            "Add partitions",
            (("topic", "Topic"), ("partitions", "New partition count")),
            _add_partitions,
            back=_topic_back,
        ),  # fmt: skip
        Action(
            "alter-configs",
            "Alter topic configs",
            (("topic", "Topic"), ("set", "Set"), ("delete", "Delete")),
            _alter_configs,
            back=_topic_back,
        ),
        Action(
            "reassign",
            "Start a partition reassignment",
            (("plan", "Reassignment JSON"), ("additional", "Additional")),
            _reassign,
            back=lambda f: "/reassignments",
        ),
        Action(
            "elect-preferred",
            "Preferred leader election",
            (("topic", "Topic"), ("partition", "Partition")),
            _elect,
            back=_topic_back,
        ),
        Action(
            "delete-records",
            "Delete records",
            (
                ("topic", "Topic"),
                ("partition", "Partition"),
                ("offset", "Before offset (-1: high watermark)"),
            ),
            _delete_records,
            back=_topic_back,
        ),
        Action(
            "reset-offsets",
            "Reset consumer group offsets",
            (
                ("group", "Group"),
                ("topic", "Topic (empty: all topics)"),
                ("strategy", "Strategy"),
                ("value", "Value"),
            ),  # fmt: skip
            _reset,
            preview=_reset_preview,
            back=lambda f: "/groups/" + quote(f.get("group", ""), safe=""),
        ),
    )
}


# -- the endpoint -----------------------------------------------------------------------------------


async def action_endpoint(console: Console, request: Request) -> Response:
    if not console.config.read_write:
        return PlainTextResponse("The console is read-only (start it with --read-write)", status_code=403)
    action = ACTIONS.get(request.path_params["action"])
    if action is None:
        return PlainTextResponse("No such action", status_code=404)
    session = console.sessions.get(request)
    form = await request.form()
    if session is None or not secrets.compare_digest(str(form.get("csrf_token", "")), session.csrf_token):
        return PlainTextResponse("Invalid form token: reload the page and try again", status_code=403)
    if console.needs_login(request):
        return PlainTextResponse("Log in first", status_code=401)
    fields = {
        k: str(v) for k, v in form.items() if k not in ("csrf_token", "confirmed") and isinstance(v, str)
    }
    ops = operations(console.access, session.credentials)
    context: dict[str, object] = {"action": action, "fields": fields, "back": action.back(fields)}
    try:
        if form.get("confirmed") != "yes":
            preview = await action.preview(ops, fields) if action.preview else ()
            return console.render(request, "confirm.html", {**context, "preview": preview})
        outcome = await action.run(ops, fields)
    except OperationError as e:
        return console.render(request, "action_result.html", {**context, "outcome": None, "error": e}, 400)
    finally:
        await ops.close()
    return console.render(request, "action_result.html", {**context, "outcome": outcome, "error": None})


async def reassignments_page(console: Console, request: Request) -> Response:
    """The controller's reassignments in flight and, given the plan just started, each of its
    partitions' progress (kafkapy-reassign-partitions --list and --verify); the page reloads
    itself while any partition is still moving."""
    if console.needs_login(request):
        return RedirectResponse("/login?next=/reassignments", status_code=303)
    plan = request.query_params.get("plan", "")
    session = console.sessions.get(request)
    ops = operations(console.access, session.credentials if session else None)
    error: OperationError | None = None
    ongoing: list[OngoingReassignment] = []
    progress: list[ReassignmentProgress] = []
    try:
        ongoing = await ops.ongoing_reassignments()
        if plan:
            progress = await ops.verify_reassignment(plan)
    except OperationError as e:
        error = e
    finally:
        await ops.close()
    moving = bool(ongoing) or any(p.status == IN_PROGRESS for p in progress)
    return console.render(
        request,
        "reassignments.html",
        {"ongoing": ongoing, "progress": progress, "plan": plan, "error": error, "refresh": moving},
        400 if error else 200,
    )


def plan_json(assignment: Mapping[int, tuple[int, ...]], topic: str) -> str:
    """The tool's reassignment JSON for a topic's current assignment: the form's starting point."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": p, "replicas": list(r)} for p, r in sorted(assignment.items())
            ],
        }
    )
