"""kafkapy-consumer-groups: Kafka 2.x's kafka-consumer-groups.sh (kafka.admin.ConsumerGroupCommand).

    kafkapy-consumer-groups --bootstrap-server 127.0.0.1:9092 --list [--state [stable,empty]]
    kafkapy-consumer-groups --bootstrap-server ... --describe --group g [--offsets|--members [--verbose]|--state]
    kafkapy-consumer-groups --bootstrap-server ... --reset-offsets --group g --all-topics --to-earliest --execute
    kafkapy-consumer-groups --bootstrap-server ... --delete --group g
    kafkapy-consumer-groups --bootstrap-server ... --delete-offsets --group g --topic t

Exactly one action; option checks, output and messages are Kafka 2.8's (see consumer_groups_cmd/).
Failures print Kafka's "Error: ..." line and exit 1 (Kafka exits 0 after printing it; a non-zero
code is what scripts need). --zookeeper (groups of the old ZooKeeper-based consumer) is reserved
for the legacy-consumer work and refused with a clear message until then.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import click

from kafkapy.protocol.errors import KafkaError, error_name
from kafkapy.tools.command_line import run_command
from kafkapy.tools.consumer_groups_cmd import reset, zk_mode
from kafkapy.tools.consumer_groups_cmd.describe import Printer, describe, list_groups, print_error
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin
from kafkapy.tools.consumer_groups_cmd.reset import UsageError

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = (
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
    "to-earliest",
    "to-latest",
    "to-current",
    "from-file",
)
_VALUED = {
    "bootstrap-server": "REQUIRED: The server(s) to connect to.",
    "zookeeper": "REQUIRED for groups of the old ZooKeeper-based consumer: the ZooKeeper connection string "
    "(host:port[/chroot]). Supports --list, --describe and --delete.",
    "timeout": "Milliseconds to wait for a group to answer (default 5000).",
    "command-config": "Property file containing configs to be passed to Admin Client and Consumer.",
    "to-offset": "Reset offsets to a specific offset.",
    "from-file": "Reset offsets to values defined in CSV file.",
    "to-datetime": "Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'",
    "by-duration": "Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'",
    "shift-by": "Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.",
}
_FLAGS = {
    "list": "List all consumer groups.",
    "describe": "Describe consumer group and list offset lag (number of messages not yet processed) related to given group.",
    "delete": "Pass in groups to delete topic partition offsets and ownership information over the entire consumer group.",
    "reset-offsets": "Reset offsets of consumer group (inactive groups only); --dry-run (default) or --execute.",
    "delete-offsets": "Delete offsets of consumer group. Supports one consumer group at the time, and multiple topics.",
    "all-groups": "Apply to all consumer groups.",
    "all-topics": "Consider all topics assigned to a group in the `reset-offsets` process.",
    "dry-run": "Only show results without executing changes on Consumer Groups.",
    "execute": "Execute operation. Supported operations: reset-offsets.",
    "export": "Export operation execution to a CSV file. Supported operations: reset-offsets.",
    "to-earliest": "Reset offsets to earliest offset.",
    "to-latest": "Reset offsets to latest offset.",
    "to-current": "Reset offsets to current offset.",
    "members": "Describe members of the group.",
    "verbose": "Provide additional information, if any, when describing the group.",
    "offsets": "Describe the group and list all topic partitions in the group along with their offset lag.",
}


def _p(name: str) -> str:
    return name.replace("-", "_")


def check_args(has: set[str], o: dict[str, Any]) -> None:
    """ConsumerGroupCommandOptions.checkArgs, in its order and with its messages."""
    if sum(a in has for a in ACTIONS) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"
        )
    if "zookeeper" in has:
        problem = zk_mode.check_zk_args(has)
        if problem:
            raise UsageError(problem)
        return
    if "bootstrap-server" not in has:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    scope = "--group, --all-groups"
    if "describe" in has:
        if "group" not in has and "all-groups" not in has:
            raise UsageError(f"Option [describe] takes one of these options: {scope}")
        if sum(x in has for x in ("members", "offsets", "state")) > 1:
            raise UsageError(
                "Option [describe] takes at most one of these options: [members], [offsets], [state]"
            )
        if "state" in has and o["state"]:
            raise UsageError("Option [describe] does not take a value for [state]")
    if "delete" in has:
        if "group" not in has and "all-groups" not in has:
            raise UsageError(f"Option [delete] takes one of these options: {scope}")
        if "topic" in has:
            raise UsageError(
                "The consumer does not support topic-specific offset deletion from a consumer group."
            )
    if "delete-offsets" in has and ("group" not in has or "topic" not in has):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if "reset-offsets" in has:
        if "dry-run" in has and "execute" in has:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if "group" not in has and "all-groups" not in has:
            raise UsageError(f"Option [reset-offsets] takes one of these options: {scope}")
        given = [s for s in SCENARIOS if s in has]
        if len(given) > 1:
            raise UsageError(f"Option [{given[0]}] can't be used with option [{given[1]}]")
        if not given:
            raise UsageError(f"Option [reset-offsets] requires one of the following scenarios: {SCENARIOS}")
        if "all-topics" not in has and "topic" not in has and "from-file" not in has:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if "group" in has and "all-groups" in has:
        raise UsageError("Option [group] can't be used with option [all-groups]")
    for opt, allowed in (("group", ("describe", "delete", "reset-offsets", "delete-offsets")),
                         ("topic", ("delete", "reset-offsets", "delete-offsets"))):  # fmt: skip
        if opt in has and not any(a in has for a in allowed):
            action = next(a for a in ACTIONS if a in has)
            raise UsageError(f"Option [{opt}] can't be used with option [{action}]")
    if "state" in has and not ("list" in has or "describe" in has):
        raise UsageError("Option [state] can be used only with [describe] or [list]")


def _reset_spec(has: set[str], o: dict[str, Any]) -> reset.ResetSpec:
    scenario = next(s for s in SCENARIOS if s in has)
    value = o.get(_p(scenario)) if scenario in _VALUED else None
    return reset.ResetSpec(scenario, value, tuple(o["topic"]), "all-topics" in has, len(o["group"]) == 1)


def run(admin: GroupAdmin, has: set[str], o: dict[str, Any], out: Printer, err: Printer) -> None:
    groups = list(o["group"])
    if "all-groups" in has and "list" not in has:
        groups = [g for g, _ in admin.list_groups()]
    if "list" in has:
        states = None
        if "state" in has:
            states = {s.strip().lower() for s in (o["state"] or "").split(",") if s.strip()}
        list_groups(admin, out, states)
    elif "describe" in has:
        what = next((w for w in ("members", "state") if w in has), "offsets")
        describe(admin, out, err, groups, what, "verbose" in has)
    elif "delete" in has:
        _delete(admin, groups, out)
    elif "delete-offsets" in has:
        _delete_offsets(admin, groups[0], list(o["topic"]), out)
    else:
        if "dry-run" not in has and "execute" not in has:
            err(
                "WARN: No action will be performed as the --execute option is missing.In a future major release, "
                "the default behavior of this command will be to prompt the user before executing the reset rather "
                "than doing a dry run. You should add the --dry-run option explicitly if you are scripting this "
                "command and want to keep the current default behavior without prompting."
            )
        spec = _reset_spec(has, o)
        plan = None
        if spec.scenario == "from-file":
            with open(o["from_file"]) as f:
                plan = reset.parse_plan_csv(f.read(), groups[0] if len(groups) == 1 else None)
        result = reset.reset_offsets(admin, groups, spec, plan, "execute" in has, out)
        if "export" in has:
            out(reset.export_csv(result, spec.single_group))
        else:
            reset.print_plan(out, result)


def _java_error(e: KafkaError) -> str:
    """How Kafka's tool shows a failed group: the exception's class and message."""
    names = {68: ("GroupNotEmptyException", "The group is not empty."),
             69: ("GroupIdNotFoundException", "The group id does not exist.")}  # fmt: skip
    cls, msg = names.get(e.code, (type(e).__name__, e.message))
    return f"org.apache.kafka.common.errors.{cls}: {msg}"


def _delete(admin: GroupAdmin, groups: list[str], out: Printer) -> None:
    result = admin.delete_groups(groups)
    ok = [g for g, e in result.items() if e is None]
    failed = {g: e for g, e in result.items() if e is not None}
    if not failed:
        out(f"Deletion of requested consumer groups ({', '.join(repr(g) for g in ok)}) was successful.")
        return
    print_error(out, "Deletion of some consumer groups failed:")
    for g, e in failed.items():
        out(f"* Group '{g}' could not be deleted due to: {_java_error(e)}")
    if ok:
        out(f"\nThese consumer groups were deleted successfully: {', '.join(repr(g) for g in ok)}")


def _delete_offsets(admin: GroupAdmin, group: str, topics: list[str], out: Printer) -> None:
    partitions: list[tuple[str, int]] = []
    results: dict[tuple[str, int], str] = {}
    for arg in topics:
        topic, sep, parts = arg.partition(":")
        try:
            partitions.extend((topic, int(p)) for p in parts.split(",")) if sep else partitions.extend(
                (topic, p) for p in admin.partitions_of(topic)
            )
        except KafkaError as e:
            results[(topic, -1)] = f"Error: {e.message}"
    top, per = admin.delete_offsets(group, partitions)
    if top == 0 and any(per.values()):
        top = next(c for c in per.values() if c)
    messages = {
        0: f"Request succeed for deleting offsets with topic {', '.join(topics)} group {group}",
        24: f"'{group}' is not valid.", 69: f"'{group}' does not exist.", 30: f"Access to '{group}' is not authorized.",
        68: f"Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.",
    }  # fmt: skip
    if top == 0:
        out(messages[0])
    elif top in messages:
        print_error(out, messages[top])
    elif top in (86, 29, 3):
        print_error(out, "Encounter some partition level error, see the follow-up details:")
    else:
        print_error(out, f"Encounter some unknown error: {top}")
    for tp, code in per.items():
        results[tp] = "Successful" if code == 0 else f"Error: {_PARTITION_ERRORS.get(code, error_name(code))}"
    out(f"\n{'TOPIC':<30} {'PARTITION':<15} {'STATUS':<15}")
    for (t, p), status in sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):
        out(f"{t:<30} {(p if p >= 0 else 'Not Provided')!s:<15} {status:<15}")


_PARTITION_ERRORS = {
    86: "The consumer group is actively subscribed to the topic",
    3: "This server does not host this topic-partition.",
    29: "Topic authorization failed.",
}


def _with_options(fn: Any) -> Any:
    fn = click.option("--state", "state", is_flag=False, flag_value="", default=None, help="Group states.")(
        fn
    )
    fn = click.option("--group", "group", multiple=True, help="The consumer group we wish to act on.")(fn)
    fn = click.option("--topic", "topic", multiple=True, help="A topic, or topic:p1,p2 for some partitions.")(
        fn
    )
    for name, text in reversed(_VALUED.items()):
        fn = click.option(f"--{name}", _p(name), help=text)(fn)
    for name, text in reversed(_FLAGS.items()):
        fn = click.option(f"--{name}", _p(name), is_flag=True, help=text)(fn)
    return fn


def execute(params: dict[str, Any], given: set[str], out: Printer, err: Printer) -> int:
    try:
        check_args(given, params)
    except UsageError as e:
        err(str(e))
        return 1
    if "zookeeper" in given:
        try:
            return zk_mode.run_zk(params["zookeeper"], given, params, out)
        except Exception as e:
            print_error(
                out, f"Executing consumer group command failed due to {getattr(e, 'message', None) or e}"
            )
            return 1
    timeout = int(params["timeout"] or 5000)
    admin = GroupAdmin(params["bootstrap_server"], timeout)
    try:
        run(admin, given, params, out, err)
        return 0
    except UsageError as e:
        err(str(e))
        return 1
    except Exception as e:
        logging.getLogger(__name__).debug("consumer group command failed", exc_info=True)
        print_error(out, f"Executing consumer group command failed due to {getattr(e, 'message', None) or e}")
        return 1
    finally:
        admin.close()


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@_with_options
@click.pass_context
def consumer_groups(ctx: click.Context, **params: Any) -> None:
    """This tool helps to list all consumer groups, describe a consumer group, delete consumer group info,
    or reset consumer group offsets."""
    from click.core import ParameterSource

    given = {
        name.replace("_", "-")
        for name in params
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    }
    ctx.exit(execute(params, given, click.echo, lambda line: click.echo(line, err=True)))


def main(argv: Sequence[str] | None = None) -> None:
    run_command(consumer_groups, "kafkapy-consumer-groups", argv)


if __name__ == "__main__":
    main()
