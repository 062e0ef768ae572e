"""kafkapy-log-dirs: kafka-log-dirs.sh (kafka.admin.LogDirsCommand, Kafka 2.8) in click.

    kafkapy-log-dirs --bootstrap-server 127.0.0.1:9092 --describe [--broker-list 0,1] [--topic-list t1,t2]

prints Kafka's lines and its JSON (compact, as Jackson writes it):

    Querying brokers for log directories information
    Received log directory information from brokers 0,1
    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data","error":null,"partitions":[
        {"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}

A --broker-list naming brokers the cluster does not have prints Kafka's ERROR line and queries
nothing (exit 1; Kafka 3.0 exits 0). --topic-list filters the answer on the client, as Kafka does.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient
from kafkapy.client.log_dirs import LogDirDescription, describe_log_dirs
from kafkapy.tools.command_line import run_command

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to query log directory usage on the specified brokers."

Printer = Callable[[str], None]


class BadBrokerList(ValueError):
    """A --broker-list entry that is not a number: Java's NumberFormatException message."""


def parse_int_list(raw: str) -> list[int]:
    entries = [b for b in raw.split(",") if b]
    for b in entries:
        if not re.fullmatch(r"[+-]?\d+", b):
            raise BadBrokerList(f'For input string: "{b}"')
    return [int(b) for b in entries]


def format_as_json(infos: Mapping[int, Mapping[str, LogDirDescription]], topics: set[str]) -> str:
    """Kafka's formatAsJson: errors as the Java exception's class name, partitions as t-p."""
    document: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": log_dir,
                        "error": None
                        if d.error is None
                        else f"org.apache.kafka.common.errors.{type(d.error).__name__}",
                        "partitions": [
                            {
                                "partition": str(tp),
                                "size": r.size,
                                "offsetLag": r.offset_lag,
                                "isFuture": r.is_future,
                            }
                            for tp, r in sorted(d.replicas.items())
                            if not topics or tp.topic in topics
                        ],
                    }
                    for log_dir, d in dirs.items()
                ],
            }
            for broker, dirs in sorted(infos.items())
        ],
    }
    return json.dumps(document, separators=(",", ":"))


def describe(admin: AdminClient, broker_list: str | None, topic_list: str, out: Printer) -> bool:
    """Kafka 3.0's describe; False when --broker-list names brokers the cluster does not have
    (Kafka's ERROR line, nothing queried; kafkapy then exits 1 where Kafka exits 0)."""
    topics = {t for t in topic_list.split(",") if t}
    cluster = sorted(admin.live_brokers())
    if broker_list is None:
        existing, missing = cluster, []
    else:
        wanted = sorted(set(parse_int_list(broker_list)))
        existing = [b for b in wanted if b in cluster]
        missing = [b for b in wanted if b not in cluster]
    if missing:
        out(
            f"ERROR: The given brokers do not exist from --broker-list: {','.join(map(str, missing))}. "
            f"Current existent brokers: {','.join(map(str, cluster))}"
        )
        return False
    out("Querying brokers for log directories information")
    infos = describe_log_dirs(admin, existing)
    out(f"Received log directory information from brokers {','.join(map(str, existing))}")
    out(format_as_json(infos, topics))
    return True


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server",
    metavar="The server(s) to use for bootstrapping",
    help="REQUIRED: the server(s) to use for bootstrapping",
)
@click.option(
    "--command-config",
    metavar="Admin client property file",
    help="Property file containing configs to be passed to Admin Client (not used by kafkapy: "
    "PLAINTEXT only).",
)
@click.option(
    "--describe",
    "describe_opt",
    is_flag=True,
    help="Describe the specified log directories on the specified brokers.",
)
@click.option(
    "--topic-list",
    metavar="Topic list",
    default="",
    help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics will be '
    "queried if no topic list is specified",
)
@click.option(
    "--broker-list",
    metavar="Broker list",
    help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster will be '
    "queried if no broker list is specified",
)
def command(
    bootstrap_server: str | None,
    command_config: str | None,
    describe_opt: bool,
    topic_list: str,
    broker_list: str | None,
) -> None:
    # Kafka's checkRequiredArgs, in its order.
    for name, given in (("bootstrap-server", bootstrap_server is not None), ("describe", describe_opt)):
        if not given:
            click.echo(f'Missing required argument "[{name}]"', err=True)
            sys.exit(1)
    assert bootstrap_server is not None
    admin = AdminClient(bootstrap_server)
    try:
        if not describe(admin, broker_list, topic_list, click.echo):
            sys.exit(1)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with an "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)
    finally:
        admin.close()


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-log-dirs", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
