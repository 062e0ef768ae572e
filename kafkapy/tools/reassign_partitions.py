"""kafkapy-reassign-partitions: Kafka 2.8's kafka-reassign-partitions.sh
(kafka.admin.ReassignPartitionsCommand) in click.

    kafkapy-reassign-partitions --bootstrap-server 127.0.0.1:9092 --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2
    kafkapy-reassign-partitions --bootstrap-server 127.0.0.1:9092 --execute --reassignment-json-file plan.json
    kafkapy-reassign-partitions --bootstrap-server 127.0.0.1:9092 --verify --reassignment-json-file plan.json
    kafkapy-reassign-partitions --bootstrap-server 127.0.0.1:9092 --cancel --reassignment-json-file plan.json
    kafkapy-reassign-partitions --zookeeper 127.0.0.1:2181 --execute --reassignment-json-file plan.json

Through --bootstrap-server the tool uses AlterPartitionReassignments / ListPartitionReassignments
(KIP-455); through the deprecated --zookeeper it writes /admin/reassign_partitions. Either way
the controller moves the replicas. Output lines are Kafka's; a failure prints Kafka's message on
stderr ("Error: ..." where Kafka prints that) and exits 1, having changed nothing.
--execute --throttle N sets Kafka's replication throttles on the moving replicas and the brokers
involved; --verify clears them once the reassignment is complete (unless --preserve-throttles).
log_dirs other than "any" (--bootstrap-server only) are sent as AlterReplicaLogDirs after the
reassignment starts, retried every 100 ms until each replica is on its broker (--timeout), with
--replica-alter-log-dirs-throttle setting replica.alter.log.dirs.io.max.bytes.per.second.
--verify reports each replica's log-dir move (DescribeLogDirs) in Kafka's words and clears the
throttles only once the moves are done too.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient
from kafkapy.tools.command_line import run_command
from kafkapy.tools.reassign_cmd import admin_actions, zk_actions
from kafkapy.tools.reassign_cmd.reassignment_json import TerseReassignmentFailure
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.zk_auth import tool_zk_security

PROG = "kafkapy-reassign-partitions"
# Kafka's command opens its ZooKeeper session with 30 s session and connection timeouts.
ZK_TIMEOUT_MS = 30_000
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
# Kafka's validateAndParseArgs tables: what each action needs, and what it may also take.
REQUIRED = {
    "verify": ("reassignment_json_file",),
    "generate": ("topics_to_move_json_file", "broker_list"),
    "execute": ("reassignment_json_file",),
    "cancel": ("reassignment_json_file",),
    "list": (),
}
PERMITTED = {
    "verify": {"bootstrap_server", "preserve_throttles", "zookeeper"},
    "generate": {"bootstrap_server", "broker_list", "disable_rack_aware", "zookeeper"},
    "execute": {
        "additional",
        "bootstrap_server",
        "throttle",
        "replica_alter_log_dirs_throttle",
        "timeout",
        "zookeeper",
    },
    "cancel": {"bootstrap_server", "preserve_throttles", "timeout"},
    "list": {"bootstrap_server"},
}
BOOTSTRAP_ONLY = ("additional", "cancel", "replica_alter_log_dirs_throttle", "list", "timeout")
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to move topic partitions between replicas."


class UsageError(Exception):
    """A misuse of the options: Kafka prints the message and the usage, and exits 1."""


def _opt(name: str) -> str:
    return f"[{name.replace('_', '-')}]"


def check_options(given: dict[str, object]) -> str:
    """The one action to run, as Kafka's validateAndParseArgs decides it."""
    actions = [a for a in ACTIONS if given.get(a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    action = actions[0]
    if not given.get("zookeeper") and not given.get("bootstrap_server"):
        raise UsageError("Please specify --bootstrap-server")
    for required in REQUIRED[action]:
        if not given.get(required):
            raise UsageError(f'Missing required argument "{_opt(required)}"')
    for name, value in given.items():
        if value in (None, False) or name == action or name in REQUIRED[action] or name in PERMITTED[action]:
            continue
        raise UsageError(f'Option "{_opt(name)}" can\'t be used with action "{_opt(action)}"')
    if not given.get("bootstrap_server"):
        for name in BOOTSTRAP_ONLY:
            if given.get(name) not in (None, False):
                raise UsageError(f'You must specify --bootstrap-server when using "{_opt(name)}"')
    return action


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_admin(action: str, opts: dict[str, Any], admin: AdminClient) -> None:
    out = click.echo
    if action == "generate":
        admin_actions.generate(
            admin,
            _read(str(opts["topics_to_move_json_file"])),
            str(opts["broker_list"]),
            not opts["disable_rack_aware"],
            out,
        )
    elif action == "execute":
        log_dir_throttle = opts["replica_alter_log_dirs_throttle"]
        timeout = opts["timeout"]
        admin_actions.execute(
            admin,
            _read(str(opts["reassignment_json_file"])),
            bool(opts["additional"]),
            int(opts["throttle"]),
            out,
            -1 if log_dir_throttle is None else int(log_dir_throttle),
            admin_actions.DEFAULT_MOVE_TIMEOUT_MS if timeout is None else int(timeout),
        )
    elif action == "verify":
        admin_actions.verify(
            admin, _read(str(opts["reassignment_json_file"])), out, bool(opts["preserve_throttles"])
        )
    elif action == "cancel":
        admin_actions.cancel(admin, _read(str(opts["reassignment_json_file"])), out)
    else:
        admin_actions.list_reassignments(admin, out)


def run_zk(action: str, opts: dict[str, Any], zk: KafkaZkClient) -> None:
    out = click.echo
    if action == "generate":
        zk_actions.generate(
            zk,
            _read(str(opts["topics_to_move_json_file"])),
            str(opts["broker_list"]),
            not opts["disable_rack_aware"],
            out,
        )
    elif action == "execute":
        zk_actions.execute(zk, _read(str(opts["reassignment_json_file"])), int(opts["throttle"]), out)
    else:
        zk_actions.verify(
            zk, _read(str(opts["reassignment_json_file"])), out, bool(opts["preserve_throttles"])
        )


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--generate",
    is_flag=True,
    help="Generate a candidate partition reassignment configuration. "
    "Note that this only generates a candidate assignment, it does not execute it.",
)
@click.option(
    "--execute",
    is_flag=True,
    help="Kick off the reassignment as specified by the --reassignment-json-file option.",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Verify if the reassignment completed as specified by the --reassignment-json-file option.",
)
@click.option("--cancel", is_flag=True, help="Cancel an active reassignment.")
@click.option("--list", "list_", is_flag=True, help="List all active partition reassignments.")
@click.option(
    "--bootstrap-server",
    metavar="Server(s) to use for bootstrapping",
    help="the server(s) to use for bootstrapping. REQUIRED if --zookeeper is not given.",
)
@click.option(
    "--zookeeper",
    metavar="urls",
    help="DEPRECATED: The connection string for the zookeeper "
    "connection in the form host:port. Please use --bootstrap-server instead.",
)
@click.option(
    "--reassignment-json-file",
    metavar="manual assignment json file path",
    help="The JSON file with the partition reassignment configuration.",
)
@click.option(
    "--topics-to-move-json-file",
    metavar="topics to reassign json file path",
    help="Generate a reassignment configuration to move the partitions of the specified topics "
    'to the list of brokers specified by the --broker-list option: {"topics": [{"topic": "foo"}, '
    '{"topic": "foo1"}], "version": 1}',
)
@click.option(
    "--broker-list",
    metavar="brokerlist",
    help="The list of brokers to which the partitions need "
    'to be reassigned in the form "0,1,2". Required with --topics-to-move-json-file.',
)
@click.option("--disable-rack-aware", is_flag=True, help="Disable rack aware replica assignment")
@click.option(
    "--throttle",
    type=int,
    default=None,
    metavar="throttle",
    help="The movement of partitions between brokers will be throttled to this value (bytes/sec). "
    "Run --verify until the reassignment completes, to remove the throttle.",
)
@click.option(
    "--replica-alter-log-dirs-throttle",
    type=int,
    default=None,
    metavar="replicaAlterLogDirsThrottle",
    help="The movement of replicas between log directories on the same broker will be throttled to "
    "this value (bytes/sec). Rerunning with this option, whilst a rebalance is in progress, will alter "
    "the throttle value. The throttle rate should be at least 1 KB/s.",
)
@click.option(
    "--timeout",
    type=int,
    default=None,
    metavar="timeout",
    help="The maximum time in ms to wait for log directory replica assignment to begin.",
)
@click.option(
    "--additional", is_flag=True, help="Execute this reassignment in addition to any other ongoing ones."
)
@click.option("--preserve-throttles", is_flag=True, help="Do not modify broker or topic throttles.")
def command(**given: object) -> None:
    given["list"] = given.pop("list_")
    try:
        action = check_options(given)
    except UsageError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    opts: dict[str, Any] = dict(given)
    opts["throttle"] = -1 if given["throttle"] is None else given["throttle"]
    if not logging.getLogger().handlers:
        # kazoo logs connection trouble; without a handler Python would print it to stderr.
        logging.getLogger().addHandler(logging.NullHandler())
    sys.exit(_run(action, opts))


def _run(action: str, opts: dict[str, Any]) -> int:
    admin: AdminClient | None = None
    zk: KafkaZkClient | None = None
    try:
        if opts["bootstrap_server"]:
            if opts["zookeeper"]:
                click.echo(
                    "Warning: ignoring deprecated --zookeeper option because --bootstrap-server was "
                    "specified.  The --zookeeper option will be removed in a future version of Kafka."
                )
            admin = AdminClient(str(opts["bootstrap_server"]))
            run_admin(action, opts, admin)
        else:
            click.echo(
                "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
            )
            zk = KafkaZkClient(
                str(opts["zookeeper"]),
                session_timeout_ms=ZK_TIMEOUT_MS,
                connection_timeout_ms=ZK_TIMEOUT_MS,
                **tool_zk_security(),
            )
            zk.start()
            run_zk(action, opts, zk)
        return 0
    except TerseReassignmentFailure as e:
        click.echo(str(e), err=True)
    except (AdminOperationError, OSError) as e:
        click.echo(f"Error: {e}", err=True)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with Kafka's "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
    finally:
        if admin is not None:
            admin.close()
        if zk is not None:
            zk.close()
    return 1


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, PROG, argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
