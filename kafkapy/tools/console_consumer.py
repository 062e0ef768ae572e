"""kafkapy-console-consumer: Kafka's kafka-console-consumer.sh (kafka.tools.ConsoleConsumer).

    kafkapy-console-consumer --bootstrap-server 127.0.0.1:9092 --topic t --from-beginning
    kafkapy-console-consumer --bootstrap-server h:9092 --topic t --partition 0 --offset 42 \
        --max-messages 10 --property print.key=true
    kafkapy-console-consumer --zookeeper 127.0.0.1:2181 --topic t --from-beginning

Writes each record as Kafka's DefaultMessageFormatter does (value, then line.separator; with
print.timestamp / print.partition / print.offset / print.key before it) and ends with
"Processed a total of N messages" on stderr. Values are written as raw bytes, so a file piped
through a topic comes back byte for byte. `--formatter
"kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter"` (with `--topic
__consumer_offsets`) prints the group coordinator's committed offsets as Kafka's does.

With --group (and --topic or --whitelist) the consumer subscribes as a member of the group,
as Kafka's does: the group's members split the partitions (range, then roundrobin, or
partition.assignment.strategy), rebalance as members come and go, resume from the group's
committed offsets and commit what they printed (enable.auto.commit: every
auto.commit.interval.ms, before each rebalance and on exit). Without a group it assigns
itself all partitions of the matching topics, or the one given with --partition (then a
group.id from --consumer-property only stores offsets, committed on exit). --zookeeper runs
the legacy ZooKeeper-based consumer.
"""

from __future__ import annotations

import re
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO

import click

from kafkapy.client.consumer import SimpleConsumer, TopicPartition
from kafkapy.client.consumer_coordinator import group_kwargs
from kafkapy.protocol.constants import NO_PARTITION_LEADER_EPOCH
from kafkapy.server.coordinator import offsets_codec
from kafkapy.tools.properties_args import merge, parse_kv, unescape


class Formatter:
    """Kafka's DefaultMessageFormatter."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str, default: str = "false") -> bool:
            return props.get(name, default).lower() == "true"

        self.print_timestamp = flag("print.timestamp")
        self.print_partition = flag("print.partition")
        self.print_offset = flag("print.offset")
        self.print_headers = flag("print.headers")
        self.print_key = flag("print.key")
        self.print_value = flag("print.value", "true")
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.line_separator = unescape(props.get("line.separator", "\n")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.null_literal = props.get("null.literal", "null").encode()

    def write(self, out: BinaryIO, topic: str, partition: int, offset: int, timestamp: int,
              timestamp_type: int, key: bytes | None, value: bytes | None,
              headers: Iterable[tuple[str, bytes | None]] = ()) -> None:  # fmt: skip
        parts: list[bytes] = []
        if self.print_timestamp:
            kind = "LogAppendTime" if timestamp_type == 1 else "CreateTime"
            parts.append(f"{kind}:{timestamp}".encode() if timestamp >= 0 else b"NO_TIMESTAMP")
        if self.print_partition:
            parts.append(f"Partition:{partition}".encode())
        if self.print_offset:
            parts.append(f"Offset:{offset}".encode())
        if self.print_headers:
            items = [k.encode() + b":" + (v if v is not None else self.null_literal) for k, v in headers]
            parts.append(self.headers_separator.join(items) if items else b"NO_HEADERS")
        if self.print_key:
            parts.append(self.null_literal if key is None else key)
        if self.print_value:
            parts.append(self.null_literal if value is None else value)
        out.write(self.key_separator.join(parts) + self.line_separator)


class OffsetsMessageFormatter:
    """Kafka 2.8's GroupMetadataManager$OffsetsMessageFormatter, for __consumer_offsets: one
    "[group,topic,partition]::OffsetAndMetadata(...)" line per committed offset ("::NULL" for a
    tombstone); group metadata records and records without a key print nothing."""

    def __init__(self, props: dict[str, str]) -> None:
        pass

    def write(self, out: BinaryIO, topic: str, partition: int, offset: int, timestamp: int,
              timestamp_type: int, key: bytes | None, value: bytes | None,
              headers: Iterable[tuple[str, bytes | None]] = ()) -> None:  # fmt: skip
        if key is None:
            return
        k = offsets_codec.read_key(key)
        if not isinstance(k, offsets_codec.OffsetKey):
            return
        text = "NULL" if value is None else offset_and_metadata_text(offsets_codec.read_offset_value(value))
        out.write(f"[{k.group},{k.topic},{k.partition}]::{text}\n".encode())


def offset_and_metadata_text(om: offsets_codec.OffsetAndMetadata) -> str:
    """kafka.common.OffsetAndMetadata's toString (a Java Optional epoch, a Scala Option expiry)."""
    epoch = (
        "Optional.empty" if om.leader_epoch == NO_PARTITION_LEADER_EPOCH else f"Optional[{om.leader_epoch}]"
    )
    expire = "None" if om.expire_timestamp is None else f"Some({om.expire_timestamp})"
    return (
        f"OffsetAndMetadata(offset={om.offset}, leaderEpoch={epoch}, metadata={om.metadata}, "
        f"commitTimestamp={om.commit_timestamp}, expireTimestamp={expire})"
    )


class NoOpMessageFormatter:
    """Kafka's NoOpMessageFormatter: prints nothing (the count on stderr still comes)."""

    def __init__(self, props: dict[str, str]) -> None:
        pass

    def write(self, out: BinaryIO, topic: str, partition: int, offset: int, timestamp: int,
              timestamp_type: int, key: bytes | None, value: bytes | None,
              headers: Iterable[tuple[str, bytes | None]] = ()) -> None:  # fmt: skip
        return


MessageFormatter = Formatter | OffsetsMessageFormatter | NoOpMessageFormatter
DEFAULT_FORMATTER = "kafka.tools.DefaultMessageFormatter"
# --formatter's class names, Kafka 2.8's (the short names are accepted too).
FORMATTERS: dict[str, type[MessageFormatter]] = {
    DEFAULT_FORMATTER: Formatter,
    "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter": OffsetsMessageFormatter,
    "kafka.tools.NoOpMessageFormatter": NoOpMessageFormatter,
}


def make_formatter(name: str, props: dict[str, str]) -> MessageFormatter:
    cls = FORMATTERS.get(name) or next(
        (c for full, c in FORMATTERS.items() if full.rsplit(".", 1)[-1].rsplit("$", 1)[-1] == name), None
    )
    if cls is None:
        raise click.UsageError(f"Unknown formatter {name}: one of {', '.join(FORMATTERS)}")
    return cls(props)


def _partitions(consumer: SimpleConsumer, params: dict[str, Any]) -> list[TopicPartition]:
    if params["topic"]:
        topics = [params["topic"]]
    else:
        pattern = re.compile(params["whitelist"])
        topics = [t for t in consumer.topics() if pattern.fullmatch(t) and not t.startswith("__")]
    if params["partition"] is not None:
        return [TopicPartition(topics[0], params["partition"])]
    return [TopicPartition(t, p) for t in topics for p in consumer.partitions_for(t)]


def _start_positions(consumer: SimpleConsumer, tps: list[TopicPartition], params: dict[str, Any]) -> None:
    offset = params["offset"]
    if offset is None:
        if params["from_beginning"] and not params["group"]:
            consumer.seek_to_beginning(*tps)
        return  # the group's committed offsets, else auto.offset.reset
    if offset == "earliest":
        consumer.seek_to_beginning(*tps)
    elif offset == "latest":
        consumer.seek_to_end(*tps)
    else:
        consumer.seek(tps[0], int(offset))


def _check(params: dict[str, Any]) -> None:
    if bool(params["topic"]) == bool(params["whitelist"]):
        raise click.UsageError("Exactly one of whitelist/topic is required.")
    if params["offset"] is not None:
        if params["partition"] is None:
            raise click.UsageError("The partition is required when offset is specified.")
        if params["from_beginning"]:
            raise click.UsageError("Options from-beginning and offset cannot be specified together.")
        if params["offset"] not in ("earliest", "latest") and not params["offset"].lstrip("-").isdigit():
            raise click.UsageError(f"The provided offset value '{params['offset']}' is incorrect. "
                                   "Valid values are 'earliest', 'latest', or a non-negative long.")  # fmt: skip
    if params["partition"] is not None and params["group"]:
        raise click.UsageError("Options group and partition cannot be specified together.")
    if params["partition"] is not None and not params["topic"]:
        raise click.UsageError("The topic is required when partition is specified.")


def run_bootstrap(params: dict[str, Any], formatter: MessageFormatter, out: BinaryIO) -> int:
    props = merge(params["consumer_config"], params["consumer_property"], "--consumer-property")
    group = params["group"] or props.get("group.id")
    reset = "earliest" if params["from_beginning"] else props.get("auto.offset.reset", "latest")
    subscribed = bool(group) and params["partition"] is None
    consumer = SimpleConsumer(
        params["bootstrap_server"],
        client_id=props.get("client.id", "console-consumer"),
        group_id=group,
        auto_offset_reset=reset,
        isolation_level=params["isolation_level"],
        max_partition_fetch_bytes=int(props.get("max.partition.fetch.bytes", 1_048_576)),
        **group_kwargs(props),
    )
    count = 0
    try:
        if subscribed and params["topic"]:
            consumer.subscribe([params["topic"]])
        elif subscribed:
            consumer.subscribe(pattern=params["whitelist"])
        else:
            tps = _partitions(consumer, params)
            consumer.assign(tps)
            _start_positions(consumer, tps, params)
        max_messages = params["max_messages"]
        timeout_ms = params["timeout_ms"]
        last = time.monotonic()
        while max_messages is None or count < max_messages:
            wait = (
                1000
                if timeout_ms is None
                else max(0, min(1000, timeout_ms - int((time.monotonic() - last) * 1000)))
            )
            records = consumer.poll(wait, None if max_messages is None else max_messages - count)
            if records:
                last = time.monotonic()
            elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                break
            for r in records:
                formatter.write(out, r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type,
                                r.key, r.value, r.headers)  # fmt: skip
            count += len(records)
            out.flush()
        if group and not subscribed:
            consumer.commit()
    except KeyboardInterrupt:
        if group and not subscribed:
            consumer.commit()
    finally:
        consumer.close()  # a member commits (enable.auto.commit) and leaves the group here
    return count


def run_zookeeper(params: dict[str, Any], formatter: MessageFormatter, out: BinaryIO) -> int:
    from kafkapy.consumer_legacy import (
        ConsumerConfig,
        ConsumerTimeoutException,
        Whitelist,
        ZookeeperConsumerConnector,
    )

    props = merge(params["consumer_config"], params["consumer_property"], "--consumer-property")
    props["zookeeper.connect"] = params["zookeeper"]
    props.setdefault("group.id", params["group"] or f"console-consumer-{uuid.uuid4().int % 100000}")
    props["auto.offset.reset"] = (
        "smallest" if params["from_beginning"] else props.get("auto.offset.reset", "largest")
    )
    if params["timeout_ms"] is not None:
        props["consumer.timeout.ms"] = str(params["timeout_ms"])
    connector = ZookeeperConsumerConnector(ConsumerConfig.from_props(props))
    count = 0
    try:
        topic_filter = Whitelist(re.escape(params["topic"]) if params["topic"] else params["whitelist"])
        stream = connector.create_message_streams_by_filter(topic_filter, 1)[0]
        for m in stream:
            formatter.write(out, m.topic, m.partition, m.offset, m.timestamp, 0, m.key, m.message)
            out.flush()
            count += 1
            if params["max_messages"] is not None and count >= params["max_messages"]:
                break
    except (ConsumerTimeoutException, KeyboardInterrupt):
        pass
    finally:
        connector.shutdown()
    return count


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="The server(s) to connect to (host:port,...).")
@click.option("--zookeeper", help="Use the legacy ZooKeeper-based consumer with this ZooKeeper.")
@click.option("--topic", help="The topic to consume.")
@click.option("--whitelist", help="Regular expression of the topics to consume.")
@click.option("--partition", type=int, help="The partition to consume (from the end unless --offset).")
@click.option("--offset", help="earliest, latest or an offset (needs --partition).")
@click.option(
    "--from-beginning", is_flag=True, help="Start at the earliest offset when there is no committed one."
)
@click.option("--group", help="The consumer group id.")
@click.option("--max-messages", type=int, help="Exit after this many messages.")
@click.option("--timeout-ms", type=int, help="Exit when no message arrives for this long.")
@click.option(
    "--formatter",
    default=DEFAULT_FORMATTER,
    show_default=True,
    help="The name of a class to use for formatting kafka messages for display: "
    "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter prints "
    "__consumer_offsets' committed offsets.",
)
@click.option(
    "--property", "prop", multiple=True, help="Formatter property k=v (print.key, key.separator, ...)."
)
@click.option("--consumer-property", multiple=True, help="Consumer config k=v.")
@click.option("--consumer.config", "consumer_config", help="Consumer config properties file.")
@click.option(
    "--isolation-level", default="read_uncommitted", type=click.Choice(["read_uncommitted", "read_committed"])
)
@click.option("--skip-message-on-error", is_flag=True, help="Accepted for compatibility.")
def console_consumer(**params: Any) -> None:
    """Read data from Kafka topics and write it to standard output."""
    _check(params)
    formatter = make_formatter(params["formatter"], parse_kv(params["prop"], "--property"))
    out = sys.stdout.buffer
    if params["zookeeper"]:
        count = run_zookeeper(params, formatter, out)
    elif params["bootstrap_server"]:
        count = run_bootstrap(params, formatter, out)
    else:
        raise click.UsageError('Missing required argument "[bootstrap-server]"')
    click.echo(f"Processed a total of {count} messages", err=True)


def main(argv: Sequence[str] | None = None) -> None:
    console_consumer.main(args=argv, prog_name="kafkapy-console-consumer")


if __name__ == "__main__":
    main()
