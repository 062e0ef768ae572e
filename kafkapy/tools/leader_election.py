"""kafkapy-leader-election: kafka-leader-election.sh (kafka.admin.LeaderElectionCommand, Kafka 2.8)
in click.

    kafkapy-leader-election --bootstrap-server 127.0.0.1:9092 --election-type preferred --all-topic-partitions
    kafkapy-leader-election --bootstrap-server 127.0.0.1:9092 --election-type unclean --topic t --partition 0
    kafkapy-leader-election --bootstrap-server 127.0.0.1:9092 --election-type preferred --path-to-json-file f.json

The controller runs the election (ElectLeaders, API 43). Output is Kafka's, line for line:
"Successfully completed leader election (PREFERRED) for partitions t-0, t-1", "Valid replica
already elected for partitions ...", and one "Error completing leader election ..." line per
failed partition. Bad options and files, and any failed partition, end with "Error: <reason>" on
stderr and exit 1 (Kafka lets its AdminCommandFailedException escape to the JVM) with nothing
changed by the options check.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient
from kafkapy.client.elections import elect_leaders
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import ElectionNotNeededException, KafkaError, TimeoutException
from kafkapy.server.controller.events import ElectionType
from kafkapy.tools import kafka_json as kj
from kafkapy.tools.command_line import run_command

# Kafka's command gives the admin client 30 s for the whole call.
TIMEOUT_MS = 30_000
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = (
    "This tool attempts to elect a new leader for a set of topic partitions. The type of elections "
    "supported are preferred replicas and unclean replicas."
)
_JSON_HELP = (
    "The JSON file with the list  of partition for which leader elections should be performed. This is an "
    'example format. {"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]} '
    "Not allowed if --all-topic-partitions or --topic flags are specified."
)

Printer = Callable[[str], None]


class AdminCommandFailedError(Exception):
    """kafka.common.AdminCommandFailedException: the command fails with this message."""


def check_options(
    bootstrap_server: str | None,
    election_type: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    json_file: str | None,
) -> None:
    """Kafka's LeaderElectionCommand.validate, message for message."""
    missing = [
        name
        for name, value in (("election-type", election_type), ("bootstrap-server", bootstrap_server))
        if value is None
    ]
    if missing:
        raise AdminCommandFailedError(f"Missing required option(s): {', '.join(missing)}")
    if sum((topic is not None, all_topic_partitions, json_file is not None)) != 1:
        raise AdminCommandFailedError(
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"
        )
    if topic is not None and partition is None:
        raise AdminCommandFailedError("Missing required option(s): partition")
    if topic is None and partition is not None:
        raise AdminCommandFailedError("Option partition is only allowed if topic is used")


def parse_election_data(text: str) -> set[TopicPartition]:
    """The partitions of a --path-to-json-file document (Kafka's parseReplicaElectionData)."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        raise AdminCommandFailedError("Replica election data is empty") from None
    if not isinstance(document, dict):
        raise AdminCommandFailedError("Replica election data is empty")
    if "partitions" not in document:
        raise AdminCommandFailedError('Replica election data is missing "partitions" field')
    # Kafka's DecodeJson messages, e.g. "No such field exists: `partition`".
    partitions = [
        TopicPartition(kj.as_string(kj.field(e, "topic")), kj.as_int(kj.field(e, "partition")))
        for e in kj.as_array(document["partitions"])
    ]
    duplicates = sorted(tp for tp, n in Counter(partitions).items() if n > 1)
    if duplicates:
        raise AdminCommandFailedError(
            "Replica election data contains duplicate partitions: " + ",".join(map(str, duplicates))
        )
    return set(partitions)


def java_exception(e: KafkaError) -> str:
    """How Kafka's tool prints a partition's failure: the Java exception's toString."""
    return f"org.apache.kafka.common.errors.{type(e).__name__}: {e.message}"


def report(
    election_type: ElectionType, results: dict[TopicPartition, KafkaError | None], out: Printer
) -> None:
    """Kafka's output lines for the results; raises when any partition could not be elected."""
    succeeded = sorted(tp for tp, e in results.items() if e is None)
    noop = sorted(tp for tp, e in results.items() if isinstance(e, ElectionNotNeededException))
    failed = {tp: e for tp, e in sorted(results.items()) if e is not None and tp not in noop}
    if succeeded:
        out(
            f"Successfully completed leader election ({election_type.name}) for partitions "
            f"{', '.join(map(str, succeeded))}"
        )
    if noop:
        out(f"Valid replica already elected for partitions {', '.join(map(str, noop))}")
    for tp, e in failed.items():
        out(
            f"Error completing leader election ({election_type.name}) for partition: {tp}: {java_exception(e)}"
        )
    if failed:
        raise AdminCommandFailedError(f"{len(failed)} replica(s) could not be elected")


def run(
    bootstrap_server: str, election_type: ElectionType, partitions: set[TopicPartition] | None, out: Printer
) -> None:
    admin = AdminClient(bootstrap_server, timeout_ms=TIMEOUT_MS)
    try:
        try:
            results = elect_leaders(admin, election_type, partitions)
        except TimeoutException as e:
            out("Timeout waiting for election results")
            raise AdminCommandFailedError("Timeout waiting for election results") from e
        report(election_type, results, out)
    finally:
        admin.close()


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server",
    metavar="host:port",
    help="A hostname and port for the broker to connect to, in the form host:port. Multiple comma "
    "separated URLs can be given. REQUIRED.",
)
@click.option(
    "--admin.config",
    "admin_config",
    metavar="config file",
    help="Configuration properties files to pass to the admin client (not used by kafkapy: PLAINTEXT only).",
)
@click.option("--path-to-json-file", "json_file", metavar="Path to JSON file", help=_JSON_HELP)
@click.option(
    "--topic",
    metavar="topic name",
    help="Name of topic for which to perform an election. Not allowed if --path-to-json-file or "
    "--all-topic-partitions is specified.",
)
@click.option(
    "--partition",
    type=int,
    metavar="partition id",
    help="Partition id for which to perform an election. REQUIRED if --topic is specified.",
)
@click.option(
    "--all-topic-partitions",
    is_flag=True,
    help="Perform election on all of the eligible topic partitions based on the type of election (see "
    "the --election-type flag). Not allowed if --topic or --path-to-json-file is specified.",
)
@click.option(
    "--election-type",
    type=click.Choice(["preferred", "unclean"], case_sensitive=False),
    metavar="election type",
    help='Type of election to attempt. Possible values are "preferred" for preferred leader election or '
    '"unclean" for unclean leader election. REQUIRED.',
)
def command(
    bootstrap_server: str | None,
    admin_config: str | None,
    json_file: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    election_type: str | None,
) -> None:
    try:
        check_options(bootstrap_server, election_type, topic, partition, all_topic_partitions, json_file)
        assert bootstrap_server is not None and election_type is not None  # checked above
        partitions: set[TopicPartition] | None = None
        if json_file is not None:
            with open(json_file, encoding="utf-8") as f:
                partitions = parse_election_data(f.read())
        elif topic is not None and partition is not None:
            partitions = {TopicPartition(topic, partition)}
        run(bootstrap_server, ElectionType[election_type.upper()], partitions, click.echo)
    except AdminCommandFailedError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with an "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-leader-election", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
