"""kafkapy-get-offsets: kafka-run-class.sh kafka.tools.GetOffsetShell (Kafka 2.8) in click.

    kafkapy-get-offsets --broker-list 127.0.0.1:9092 --topic t [--partitions 0,2] [--time -1|-2|<ts>]

prints one line per partition, `t:0:42`: the latest offset (-1, the default), the earliest (-2),
or the first offset whose timestamp is at or after <ts> (ms; empty after the colon when there is
none). `--bootstrap-server` is accepted as well (Kafka 3.0's name for `--broker-list`). A missing
topic, or requested partitions that do not exist or have no leader, get Kafka's lines on stderr.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.constants import LATEST_TIMESTAMP
from kafkapy.tools.command_line import run_command

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "An interactive shell for getting topic offsets."
_HOST_PORT = re.compile(r"^[^:,\s]+:\d+$")

Printer = Callable[[str], None]


class ToolExit(Exception):
    """The command ends with exit code 1 after Kafka's message has been printed on stderr."""


class BadPartitions(ValueError):
    """--partitions is not a list of partition ids: Kafka prints the message on stderr, exit 1."""


_JAVA_INT = re.compile(r"^[+-]?\d+$")


def parse_partitions(text: str | None) -> list[int]:
    """Kafka's parsing: each comma-separated entry as Java's Integer.parseInt reads it (no spaces,
    no empty entries); anything else is Kafka's message and exit 1."""
    if not text:
        return []
    entries = text.split(",")
    if not all(_JAVA_INT.match(p) and -(2**31) <= int(p) < 2**31 for p in entries):
        raise BadPartitions(
            f"--partitions expects a comma separated list of numeric partition ids, but received: {text}"
        )
    return sorted({int(p) for p in entries})


def valid_broker_list(text: str) -> bool:
    """Kafka's ToolsUtils.validatePortOrDie: every comma-separated entry is host:port."""
    return all(_HOST_PORT.match(entry.strip()) for entry in text.split(","))


def partition_lines(topic: str, offsets: dict[int, int | None]) -> list[str]:
    return [f"{topic}:{p}:{'' if offsets[p] is None else offsets[p]}" for p in sorted(offsets)]


def get_offsets(
    admin: AdminClient, topic: str, requested: list[int], timestamp: int, err: Printer
) -> dict[int, int | None]:
    md = admin.metadata([topic], "listOffsets")
    info = next((t for t in md.topics if t.name == topic), None)
    if info is None or info.error_code:
        err(f"Topic {topic} does not exist")
        raise ToolExit
    partitions = {
        p.partition_index: p.leader_id
        for p in info.partitions
        if not requested or p.partition_index in requested
    }
    if not partitions:
        err(
            f"Topic {topic} has 0 partitions"
            if not requested
            else f"Topic {topic} does not have any of the requested partitions {','.join(map(str, requested))}"
        )
        raise ToolExit
    for p in requested:
        if p not in partitions:
            err(f"Error: partition {p} does not exist")
    by_leader: dict[int, list[int]] = defaultdict(list)
    for p, leader in sorted(partitions.items()):
        if leader < 0:
            err(f"Error: partition {p} does not have a leader. Skip getting offsets")
        else:
            by_leader[leader].append(p)
    offsets: dict[int, int | None] = {}
    for leader, ps in by_leader.items():
        _, answer = admin.send_to_broker(
            leader,
            ApiKey.LIST_OFFSETS,
            lambda v, ps=ps: _body(topic, ps, timestamp),  # type: ignore[misc]  # a lambda's default binds the loop variable; mypy cannot infer it
        )
        for t in answer.topics:
            for p in t.partitions:
                raise_for_error(p.error_code)
                offsets[p.partition_index] = None if p.offset < 0 else p.offset
    return offsets


def _body(topic: str, partitions: list[int], timestamp: int) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": 0,  # a consumer's default, read_uncommitted
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "timestamp": timestamp,
                        "current_leader_epoch": -1,
                        "max_num_offsets": 1,
                    }
                    for p in partitions
                ],
            }
        ],
    }


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--broker-list",
    metavar="hostname:port,...,hostname:port",
    help="REQUIRED: The list of hostname and port of the server to connect to.",
)
@click.option(
    "--bootstrap-server",
    metavar="hostname:port,...,hostname:port",
    help="The same as --broker-list (Kafka 3.0's name).",
)
@click.option("--topic", metavar="topic", help="REQUIRED: The topic to get offset from.")
@click.option(
    "--partitions",
    metavar="partition ids",
    help="comma separated list of partition ids. If not specified, it will find offsets for all partitions",
)
@click.option(
    "--time",
    "timestamp",
    type=int,
    default=LATEST_TIMESTAMP,
    show_default=True,
    metavar="timestamp/-1(latest)/-2(earliest)",
    help="timestamp of the offsets before that. [Note: No offset is returned, if the timestamp greater "
    "than recently commited record timestamp is given.]",
)
@click.option(
    "--offsets",
    type=int,
    default=1,
    metavar="count",
    help="DEPRECATED AND IGNORED: number of offsets returned",
)
@click.option(
    "--max-wait-ms",
    type=int,
    default=1000,
    metavar="ms",
    help="DEPRECATED AND IGNORED: The max amount of time each fetch request waits.",
)
def command(
    broker_list: str | None,
    bootstrap_server: str | None,
    topic: str | None,
    partitions: str | None,
    timestamp: int,
    offsets: int,
    max_wait_ms: int,
) -> None:
    servers = broker_list or bootstrap_server
    for name, value in (("broker-list", servers), ("topic", topic)):
        if value is None:
            click.echo(f'Missing required argument "[{name}]"', err=True)
            sys.exit(1)
    assert servers is not None and topic is not None  # checked above
    if not valid_broker_list(servers):
        click.echo("Please provide valid host:port like host1:9091,host2:9092", err=True)
        sys.exit(1)
    try:
        requested = parse_partitions(partitions)
    except BadPartitions as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    admin = AdminClient(servers)
    try:
        found = get_offsets(admin, topic, requested, timestamp, lambda line: click.echo(line, err=True))
        for line in partition_lines(topic, found):
            click.echo(line)
    except ToolExit:
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with an "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)
    finally:
        admin.close()


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-get-offsets", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
