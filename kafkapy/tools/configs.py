"""kafkapy-configs: Kafka 2.8's kafka-configs.sh (kafka.admin.ConfigCommand) in click.

    kafkapy-configs --bootstrap-server 127.0.0.1:9092 --entity-type topics --entity-name t --describe
    kafkapy-configs --bootstrap-server 127.0.0.1:9092 --alter --entity-type topics --entity-name t \\
        --add-config retention.ms=1000,cleanup.policy=[compact,delete] --delete-config segment.ms
    kafkapy-configs --bootstrap-server 127.0.0.1:9092 --alter --entity-type brokers --entity-default \\
        --add-config log.retention.ms=60000
    kafkapy-configs --bootstrap-server 127.0.0.1:9092 --describe --broker 0 --all
    kafkapy-configs --zookeeper 127.0.0.1:2181 --alter --entity-type clients --entity-name c \\
        --add-config producer_byte_rate=1024

Through --bootstrap-server the tool uses DescribeConfigs, IncrementalAlterConfigs (topics) and
AlterConfigs (brokers); through --zookeeper it writes /config/<entity-type>/<name> and a
/config/changes notification. Output lines are Kafka's. A bad command line or config prints
Kafka's message on stderr and exits 1 with nothing changed; a failure the broker reports prints
"Error while executing config command with args '...'" and the error, as Kafka does.
Client quotas (users, clients, or a user's client id: `--entity-type users --entity-name u
--entity-type clients --entity-name c`) go through DescribeClientQuotas / AlterClientQuotas with
--bootstrap-server, as Kafka 2.6+ does, and through /config/users and /config/clients with
--zookeeper. A user's SCRAM credentials (`--add-config 'SCRAM-SHA-256=[iterations=8192,password=p]'`,
`--delete-config SCRAM-SHA-256`) go through AlterUserScramCredentials (salted by the tool) or
straight into /config/users/<user>. Not in kafkapy: broker-loggers, ips.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import click

from kafkapy.client.admin import AdminClient
from kafkapy.protocol.errors import InvalidConfigurationException, KafkaError
from kafkapy.tools.command_line import run_command
from kafkapy.tools.configs_cmd import admin_actions, quota_options, zk_actions
from kafkapy.tools.configs_cmd.options import CommandError, Options, check_args, resolve_entity
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.zk_auth import tool_zk_security

PROG = "kafkapy-configs"
# Kafka's command opens its ZooKeeper session with 30 s session and connection timeouts.
ZK_TIMEOUT_MS = 30_000
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "Add/Remove entity config for a topic, client, user or broker"
_ADD_HELP = (
    "Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: "
    "'k1=v1,k2=[v1,v2,v2],k3=v3'."
)


def _run(options: Options, bootstrap_server: str | None, zookeeper: str | None) -> None:
    out = click.echo
    if options.use_zookeeper:
        zk = KafkaZkClient(
            str(zookeeper),
            session_timeout_ms=ZK_TIMEOUT_MS,
            connection_timeout_ms=ZK_TIMEOUT_MS,
            **tool_zk_security(),
        )
        zk.start()
        try:
            (zk_actions.alter if options.action == "alter" else zk_actions.describe)(zk, options, out)
        finally:
            zk.close()
    else:
        admin = AdminClient(str(bootstrap_server))
        try:
            (admin_actions.alter if options.action == "alter" else admin_actions.describe)(
                admin, options, out
            )
        except KafkaError as e:
            raise AdminCallFailed(e) from e
        finally:
            admin.close()


class AdminCallFailed(Exception):
    """An error a broker answered: Kafka's admin client hands it over wrapped in an
    ExecutionException, which ConfigCommand prints with "Error while executing..."."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(error.message or type(error).__name__)
        self.error = error


def _kafka_name(e: BaseException) -> str:
    """How Kafka's stack trace names the error: org.apache.kafka.common.errors.<Name> for broker
    errors (wrapped in an ExecutionException by its admin client)."""
    if isinstance(e, AdminCallFailed):
        return f"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.{type(e.error).__name__}"
    return type(e).__name__


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option(
    "--all",
    "describe_all",
    is_flag=True,
    help="List all configs for the given topic or broker entity (includes static configuration "
    "when the entity type is brokers)",
)
@click.option(
    "--bootstrap-server",
    metavar="server to connect to",
    help="The Kafka server to connect to. This is required for describing and altering broker configs.",
)
@click.option(
    "--zookeeper",
    metavar="urls",
    help="DEPRECATED. The connection string for the zookeeper "
    "connection in the form host:port. Multiple URLS can be given to allow fail-over.",
)
@click.option(
    "--command-config",
    metavar="command config property file",
    help="Property file containing configs to be passed to Admin Client (ignored by kafkapy).",
)
@click.option(
    "--entity-type",
    multiple=True,
    metavar="type",
    help="Type of entity (topics/clients/users/brokers/broker-loggers)",
)
@click.option(
    "--entity-name",
    multiple=True,
    metavar="name",
    help="Name of entity (topic name/client id/user principal name/broker id)",
)
@click.option(
    "--entity-default",
    is_flag=True,
    help="Default entity name for clients/users/brokers (applies to corresponding entity type in "
    "command line)",
)
@click.option("--add-config", metavar="config", help=_ADD_HELP)
@click.option("--delete-config", multiple=True, metavar="config", help="config keys to remove 'k1,k2'")
@click.option("--force", is_flag=True, help="Suppress console prompts")
@click.option("--topic", metavar="topic", help="The topic's name.")
@click.option("--client", metavar="client", help="The client's ID.")
@click.option("--user", metavar="user", help="The user's principal name.")
@click.option("--broker", metavar="broker", help="The broker's ID.")
@click.option("--broker-defaults", is_flag=True, help="The config defaults for all brokers.")
def command(
    alter: bool,
    describe: bool,
    describe_all: bool,
    bootstrap_server: str | None,
    zookeeper: str | None,
    command_config: str | None,
    entity_type: tuple[str, ...],
    entity_name: tuple[str, ...],
    entity_default: bool,
    add_config: str | None,
    delete_config: tuple[str, ...],
    force: bool,
    topic: str | None,
    client: str | None,
    user: str | None,
    broker: str | None,
    broker_defaults: bool,
) -> None:
    try:
        types, names, default = resolve_entity(
            entity_type,
            entity_name,
            entity_default,
            topic=topic,
            broker=broker,
            broker_defaults=broker_defaults,
            client=client,
            user=user,
        )
        options = check_args(
            alter,
            describe,
            bootstrap_server,
            zookeeper,
            types,
            names,
            default,
            add_config,
            delete_config,
            describe_all,
            entity_options=bool(entity_type or entity_name or entity_default),
            entity_flags=any(f is not None for f in (topic, client, user, broker)) or broker_defaults,
        )
        if not logging.getLogger().handlers:
            # kazoo logs connection trouble; without a handler Python would print it to stderr.
            logging.getLogger().addHandler(logging.NullHandler())
        _run(options, bootstrap_server, zookeeper)
    except (CommandError, InvalidConfigurationException) as e:
        click.echo(getattr(e, "message", None) or str(e), err=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - Kafka prints this line and the exception for any other failure
        click.echo(f"Error while executing config command with args '{' '.join(_ARGS)}'", err=True)
        click.echo(f"{_kafka_name(e)}: {getattr(e, 'message', None) or e}", err=True)
        sys.exit(1)


_ARGS: list[str] = []  # the command line, for Kafka's "Error while executing" line


def main(argv: Sequence[str] | None = None) -> None:
    _ARGS[:] = list(sys.argv[1:] if argv is None else argv)
    quota_options.COMMAND_LINE[:] = _ARGS
    run_command(command, PROG, argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
