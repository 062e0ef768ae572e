"""kafkapy-preferred-replica-election: the ZooKeeper-era kafka-preferred-replica-election.sh
(kafka.admin.PreferredReplicaLeaderElectionCommand, Kafka 2.x) in click.

    kafkapy-preferred-replica-election --zookeeper 127.0.0.1:2181
    kafkapy-preferred-replica-election --zookeeper 127.0.0.1:2181 --path-to-json-file election.json

The tool only records the request: it writes /admin/preferred_replica_election as
{"version":1,"partitions":[{"topic":...,"partition":...}]} for the partitions named in the JSON
file (every partition of every topic without one). The controller then moves each one's
leadership to its preferred replica (the first in its assignment) where that replica is alive
and in the ISR, and deletes the znode. While the znode exists, a second request is refused.
Output is Kafka's, line for line; a failure prints "Failed to start preferred replica
election" and its reason on stderr and exits 1 (Kafka printed both on stdout and exited 0).
"""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Sequence

import click
from kazoo.exceptions import NodeExistsError

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.command_line import run_command
from kafkapy.zk.errors import AdminOperationError
from kafkapy.zk.kafka_zk_client import KafkaZkClient
from kafkapy.zk.zk_auth import tool_zk_security

# Kafka's command opens its ZooKeeper session with 30 s session and connection timeouts.
ZK_TIMEOUT_MS = 30_000
FAILED = "Failed to start preferred replica election"
_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = (
    "This tool moves the leadership of each partition back to its preferred replica (the first "
    "replica of its assignment), to balance leadership across the brokers."
)
_JSON_HELP = (
    'A JSON file naming the partitions to elect preferred leaders for, as {"partitions": '
    '[{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]}. '
    "Without it, every partition of every topic."
)

Printer = Callable[[str], None]


def parse_election_data(text: str) -> set[TopicPartition]:
    """The partitions of a --path-to-json-file document; AdminOperationError names what is wrong."""
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if entries is None:
        raise AdminOperationError("Preferred replica election data is empty")
    try:
        partitions = [TopicPartition(str(e["topic"]), int(e["partition"])) for e in entries]
    except (KeyError, TypeError, ValueError) as e:
        raise AdminOperationError(f"Preferred replica election data is malformed: {e!r}") from e
    duplicates = sorted(tp for tp, n in Counter(partitions).items() if n > 1)
    if duplicates:
        raise AdminOperationError(
            "Preferred replica election data contains duplicate partitions: " + ",".join(map(str, duplicates))
        )
    return set(partitions)


def _scala_set(partitions: Sequence[TopicPartition]) -> str:
    return f"Set({', '.join(map(str, partitions))})"


def elect_preferred_leaders(zk: KafkaZkClient, wanted: set[TopicPartition] | None, out: Printer) -> None:
    """Record the request for `wanted` (None: every partition); partitions that do not exist are skipped."""
    topics = {tp.topic for tp in wanted} if wanted is not None else zk.get_all_topics_in_cluster()
    existing = {
        TopicPartition(topic, p)
        for topic, parts in zk.get_partitions_for_topics(topics).items()
        for p in parts
    }
    valid = sorted(existing if wanted is None else wanted & existing)
    missing = sorted(set() if wanted is None else wanted - existing)
    try:
        zk.create_preferred_replica_election(valid)
    except NodeExistsError:
        in_progress = ",".join(map(str, sorted(zk.get_preferred_replica_election())))
        raise AdminOperationError(
            f"Preferred replica leader election currently in progress for {in_progress}. Aborting operation"
        ) from None
    out(f"Created preferred replica election path with {','.join(map(str, valid))}")
    out(f"Successfully started preferred replica election for partitions {_scala_set(valid)}")
    for tp in missing:
        out(f"Skipping preferred replica leader election for partition {tp} since it doesn't exist.")


def _err(line: str) -> None:
    click.echo(line, err=True)


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--zookeeper",
    metavar="urls",
    help="REQUIRED: The ZooKeeper connection string, host:port[,host:port...][/chroot].",
)
@click.option("--path-to-json-file", "json_file", metavar="file", help=_JSON_HELP)
def command(zookeeper: str | None, json_file: str | None) -> None:
    if not zookeeper:
        _err('Missing required argument "[zookeeper]"')
        sys.exit(1)
    if not logging.getLogger().handlers:
        # kazoo logs connection trouble; without a handler Python would print it to stderr.
        logging.getLogger().addHandler(logging.NullHandler())
    zk: KafkaZkClient | None = None
    try:
        wanted = None
        if json_file is not None:
            with open(json_file, encoding="utf-8") as f:
                wanted = parse_election_data(f.read())
        zk = KafkaZkClient(
            zookeeper,
            session_timeout_ms=ZK_TIMEOUT_MS,
            connection_timeout_ms=ZK_TIMEOUT_MS,
            **tool_zk_security(),
        )
        zk.start()
        elect_preferred_leaders(zk, wanted, click.echo)
    except Exception as e:
        _err(FAILED)
        _err(str(e) or type(e).__name__)
        sys.exit(1)
    finally:
        if zk is not None:
            zk.close()


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-preferred-replica-election", argv, usage_if_no_args=True)


if __name__ == "__main__":
    main()
