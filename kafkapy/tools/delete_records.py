"""kafkapy-delete-records: kafka-delete-records.sh (kafka.admin.DeleteRecordsCommand, Kafka 2.8)
in click.

    kafkapy-delete-records --bootstrap-server 127.0.0.1:9092 --offset-json-file offsets.json

with offsets.json as Kafka writes it:
{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}
(offset -1: up to the high watermark). Each partition's leader moves its log start offset and
answers once every live replica has followed. Output is Kafka's:

    Executing records delete operation
    Records delete operation completed:
    partition: t-0	low_watermark: 10

or "partition: t-0\terror: <the Java exception>" for a partition that failed (then the exit code
is 1; Kafka exits 0). A bad file ends with "Error: <Kafka's message>" on stderr, exit 1, before
any request is sent.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient
from kafkapy.client.records_deletion import delete_records
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import KafkaError
from kafkapy.tools import kafka_json as kj
from kafkapy.tools.command_line import run_command

EARLIEST_VERSION = 1
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to delete records of the given partitions down to the specified offset."
_JSON_HELP = (
    "REQUIRED: The JSON file with offset per partition. The format to use is: "
    '{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}'
)

Printer = Callable[[str], None]


class AdminCommandFailedError(Exception):
    """kafka.common.AdminCommandFailedException / AdminOperationException: the command fails."""


def parse_offset_json(text: str) -> list[tuple[TopicPartition, int]]:
    """Kafka's parseOffsetJsonStringWithoutDedup, then its duplicate check."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        raise AdminCommandFailedError("The input string is not a valid JSON") from None
    if not isinstance(document, dict):
        raise AdminCommandFailedError("The input string is not a valid JSON")
    version = kj.as_int(document["version"]) if "version" in document else EARLIEST_VERSION
    if version != EARLIEST_VERSION:
        raise AdminCommandFailedError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise AdminCommandFailedError("Missing partitions field")
    # Kafka's DecodeJson messages, e.g. "No such field exists: `offset`".
    offsets = [
        (
            TopicPartition(kj.as_string(kj.field(e, "topic")), kj.as_int(kj.field(e, "partition"))),
            kj.as_long(kj.field(e, "offset")),
        )
        for e in kj.as_array(document["partitions"])
    ]
    duplicates = sorted(tp for tp, n in Counter(tp for tp, _ in offsets).items() if n > 1)
    if duplicates:
        raise AdminCommandFailedError(
            "Offset json file contains duplicate topic partitions: " + ",".join(map(str, duplicates))
        )
    return offsets


def result_line(tp: TopicPartition, result: int | KafkaError) -> str:
    if isinstance(result, KafkaError):
        return f"partition: {tp}\terror: org.apache.kafka.common.errors.{type(result).__name__}: {result.message}"
    return f"partition: {tp}\tlow_watermark: {result}"


def execute(admin: AdminClient, offsets: list[tuple[TopicPartition, int]], out: Printer) -> int:
    """Kafka's lines; the number of partitions that failed (the exit code is 1 if any did,
    where Kafka exits 0, so that scripts notice)."""
    out("Executing records delete operation")
    results = delete_records(admin, dict(offsets))
    out("Records delete operation completed:")
    for tp, result in sorted(results.items()):
        out(result_line(tp, result))
    return sum(isinstance(r, KafkaError) for r in results.values())


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server",
    metavar="server(s) to use for bootstrapping",
    help="REQUIRED: The server to connect to.",
)
@click.option("--offset-json-file", metavar="Offset json file path", help=_JSON_HELP)
@click.option(
    "--command-config",
    metavar="command config property file path",
    help="A property file containing configs to be passed to Admin Client (not used by kafkapy: "
    "PLAINTEXT only).",
)
def command(bootstrap_server: str | None, offset_json_file: str | None, command_config: str | None) -> None:
    for name, value in (("bootstrap-server", bootstrap_server), ("offset-json-file", offset_json_file)):
        if value is None:
            click.echo(f'Missing required argument "[{name}]"', err=True)
            sys.exit(1)
    assert bootstrap_server is not None and offset_json_file is not None  # checked above
    admin: AdminClient | None = None
    try:
        with open(offset_json_file, encoding="utf-8") as f:
            offsets = parse_offset_json(f.read())
        admin = AdminClient(bootstrap_server)
        failed = execute(admin, offsets, click.echo)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with an "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)
    finally:
        if admin is not None:
            admin.close()
    sys.exit(1 if failed else 0)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-delete-records", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
