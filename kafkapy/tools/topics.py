"""kafkapy-topics: Kafka 2.x's kafka-topics.sh (kafka.admin.TopicCommand) in click.

    kafkapy-topics --bootstrap-server 127.0.0.1:9092 --create --topic t --partitions 3
    kafkapy-topics --zookeeper 127.0.0.1:2181/kafka --describe --topic 't.*'

Exactly one action (--create, --list, --describe, --alter, --delete) and exactly one of
--bootstrap-server (the admin API over the wire protocol) or --zookeeper (Kafka's znodes, read
and written directly, as the ZooKeeper-era tool did). Output is Kafka 2.8's, line for line.
Failures print one line on stderr and exit 1: option misuse with Kafka's usage messages
(`Missing required argument "[partitions]"`), and failed actions as
`Error while executing topic command : <message>`. (Kafka printed the latter on stdout, with
a stack trace on stderr; one stderr line is easier for scripts and people alike.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import click
from click.core import ParameterSource

from kafkapy.client.admin import DEFAULT_TIMEOUT_MS, AdminClient
from kafkapy.common.properties import load_file
from kafkapy.tools.command_line import run_command
from kafkapy.tools.topic_command.admin_service import AdminClientTopicService
from kafkapy.tools.topic_command.options import (
    USAGE_MESSAGE,
    TopicCommandError,
    TopicCommandOptions,
    UsageError,
    check_args,
    parse_java_int,
)
from kafkapy.tools.topic_command.service import Printer, TopicService
from kafkapy.tools.topic_command.zk_service import ZookeeperTopicService

log = logging.getLogger(__name__)

ERROR_PREFIX = "Error while executing topic command : "
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_FLAGS = {
    "list": "List all available topics.",
    "create": "Create a new topic.",
    "delete": "Delete a topic",
    "alter": "Alter the number of partitions, replica assignment, and/or configuration for the topic.",
    "describe": "List details for the given topics.",
    "under-replicated-partitions": "if set when describing topics, only show under replicated partitions",
    "unavailable-partitions": "if set when describing topics, only show partitions whose leader is not available",
    "under-min-isr-partitions": "if set when describing topics, only show partitions whose isr count is less "
    "than the configured minimum. Not supported with the --zookeeper option.",
    "at-min-isr-partitions": "if set when describing topics, only show partitions whose isr count is equal to "
    "the configured minimum. Not supported with the --zookeeper option.",
    "topics-with-overrides": "if set when describing topics, only show topics that have overridden configs",
    "if-exists": "if set when altering or deleting or describing topics, the action will only execute if the "
    "topic exists.",
    "if-not-exists": "if set when creating topics, the action will only execute if the topic does not already "
    "exist.",
    "disable-rack-aware": "Disable rack aware replica assignment",
    "force": "Suppress console prompts (accepted for compatibility, unused)",
    "exclude-internal": "exclude internal topics when running list or describe command. The internal topics "
    "will be listed by default",
}
# Options taking a value: (name, metavar, help, repeatable).
_VALUED = (
    (
        "bootstrap-server",
        "SERVER",
        "REQUIRED: The Kafka server to connect to. In case of providing this, a "
        "direct Zookeeper connection won't be required.",
        False,
    ),
    (
        "zookeeper",
        "HOSTS",
        "DEPRECATED, The connection string for the zookeeper connection in the form "
        "host:port[/chroot]. Multiple hosts can be given to allow fail-over.",
        False,
    ),
    (
        "command-config",
        "FILE",
        "Property file containing configs to be passed to Admin Client "
        "(request.timeout.ms and default.api.timeout.ms are honoured).",
        False,
    ),
    (
        "topic",
        "TOPIC",
        "The topic to create, alter, describe or delete. It also accepts a regular expression, "
        "except for --create option. Put topic name in double quotes and use the '\\' prefix to escape regular "
        'expression symbols; e.g. "test\\.topic".',
        False,
    ),
    (
        "config",
        "NAME=VALUE",
        "A topic configuration override for the topic being created or altered. It is "
        "supported only in combination with --create if --bootstrap-server option is used.",
        True,
    ),
    (
        "delete-config",
        "NAME",
        "A topic configuration override to be removed for an existing topic. Not "
        "supported with the --bootstrap-server option.",
        True,
    ),
    (
        "partitions",
        "N",
        "The number of partitions for the topic being created or altered (WARNING: If "
        "partitions are increased for a topic that has a key, the partition logic or ordering of the messages "
        "will be affected). If not supplied for create, defaults to the cluster default.",
        False,
    ),
    (
        "replication-factor",
        "N",
        "The replication factor for each partition in the topic being created. If "
        "not supplied, defaults to the cluster default.",
        False,
    ),
    (
        "replica-assignment",
        "ASSIGNMENT",
        "A list of manual partition-to-broker assignments for the topic being "
        "created or altered: broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , "
        "broker_id_for_part2_replica1 : broker_id_for_part2_replica2 , ...",
        False,
    ),
)


def _param(option: str) -> str:
    return option.replace("-", "_")


def _with_options(fn: Any) -> Any:
    for name, metavar, help_text, multiple in reversed(_VALUED):
        fn = click.option(f"--{name}", _param(name), metavar=metavar, help=help_text, multiple=multiple)(fn)
    for name, help_text in reversed(_FLAGS.items()):
        fn = click.option(f"--{name}", _param(name), is_flag=True, help=help_text)(fn)
    return fn


def _java_integer(option: str, value: str | None) -> int | None:
    """joptsimple's Integer conversion, with its message for a bad value."""
    if value is None:
        return None
    try:
        return parse_java_int(value)
    except TopicCommandError:
        raise UsageError(f"Cannot parse argument '{value}' of option {option}") from None


def options_from_click(ctx: click.Context, params: dict[str, Any]) -> TopicCommandOptions:
    """The typed options plus the set of option names present, as joptsimple's `has` sees them."""
    given = set()
    for name in [*_FLAGS, *(v[0] for v in _VALUED)]:
        value = params[_param(name)]
        if ctx.get_parameter_source(_param(name)) == ParameterSource.COMMANDLINE and value not in (False, ()):
            given.add(name)
    return TopicCommandOptions(
        given=frozenset(given),
        bootstrap_server=params["bootstrap_server"],
        zookeeper=params["zookeeper"],
        command_config=params["command_config"],
        topic=params["topic"],
        partitions=_java_integer("partitions", params["partitions"]),
        replication_factor=_java_integer("replication-factor", params["replication_factor"]),
        replica_assignment=params["replica_assignment"],
        configs=tuple(params["config"]),
        delete_configs=tuple(params["delete_config"]),
    )


def _admin_timeout_ms(command_config: str | None) -> int:
    if not command_config:
        return DEFAULT_TIMEOUT_MS
    props = load_file(command_config)
    return int(props.get("default.api.timeout.ms", props.get("request.timeout.ms", DEFAULT_TIMEOUT_MS)))


def open_service(opts: TopicCommandOptions, out: Printer) -> TopicService:
    if opts.zookeeper is not None:
        return ZookeeperTopicService.connect(opts.zookeeper, out)
    admin = AdminClient(opts.bootstrap_server or "", _admin_timeout_ms(opts.command_config))
    return AdminClientTopicService(admin, out)


def run_action(service: TopicService, opts: TopicCommandOptions) -> None:
    """The one action check_args let through."""
    if opts.has("create"):
        service.create_topic(opts)
    elif opts.has("alter"):
        service.alter_topic(opts)
    elif opts.has("list"):
        service.list_topics(opts)
    elif opts.has("describe"):
        service.describe_topic(opts)
    elif opts.has("delete"):
        service.delete_topic(opts)


def error_message(e: BaseException) -> str:
    """Java's getMessage, near enough: the exception's text, or its class name when it has none."""
    return str(e) or type(e).__name__


def execute(
    opts: TopicCommandOptions,
    out: Printer,
    err: Printer,
    opener: Callable[[TopicCommandOptions, Printer], TopicService] = open_service,
) -> int:
    """Check the options, run the action, report failure in one line: the exit code."""
    try:
        check_args(opts)
    except UsageError as e:
        err(str(e))
        return 1
    service: TopicService | None = None
    try:
        service = opener(opts, out)
        run_action(service, opts)
        return 0
    except Exception as e:
        log.debug("topic command failed", exc_info=True)
        err(ERROR_PREFIX + error_message(e))
        return 1
    finally:
        if service is not None:
            service.close()


@click.command(context_settings=_CONTEXT, help=USAGE_MESSAGE)
@_with_options
@click.pass_context
def kafka_topics(ctx: click.Context, **params: Any) -> None:
    if not logging.getLogger().handlers:
        # kazoo logs connection trouble; without a handler Python would print it to stderr.
        logging.getLogger().addHandler(logging.NullHandler())
    try:
        opts = options_from_click(ctx, params)
    except UsageError as e:
        click.echo(str(e), err=True)
        ctx.exit(1)
    ctx.exit(execute(opts, click.echo, lambda line: click.echo(line, err=True)))


def main(argv: Sequence[str] | None = None) -> None:
    run_command(kafka_topics, "kafkapy-topics", argv, usage_if_no_args=True, purpose=USAGE_MESSAGE)


if __name__ == "__main__":
    main()
