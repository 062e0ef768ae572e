"""kafkapy-console-producer: Kafka's kafka-console-producer.sh (kafka.tools.ConsoleProducer).

    kafkapy-console-producer --bootstrap-server 127.0.0.1:9092 --topic t < lines.txt
    kafkapy-console-producer --broker-list h:9092 --topic t --property parse.key=true \
        --property key.separator=:

One record per input line (the line without its terminator), read as bytes so any encoding
goes through unchanged. Producer settings: --producer.config, then --producer-property, then
the tool's own options where given (Kafka's precedence); the tool's defaults (linger 1000 ms,
acks 1, 3 retries, request timeout 1500 ms) apply where nothing else set a value.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import click

from kafkapy.producer import KafkaProducer
from kafkapy.tools.properties_args import merge, parse_kv, unescape

# ConsoleProducer's option -> (producer config, tool default).
_TOOL_OPTIONS = {
    "compression_codec": "compression.type",
    "batch_size": "batch.num.messages",
    "timeout": "linger.ms",
    "request_required_acks": "acks",
    "message_send_max_retries": "retries",
    "retry_backoff_ms": "retry.backoff.ms",
    "request_timeout_ms": "request.timeout.ms",
    "max_memory_bytes": "buffer.memory",
    "max_partition_memory_bytes": "batch.size",
    "metadata_expiry_ms": "metadata.max.age.ms",
    "max_block_ms": "max.block.ms",
}
_TOOL_DEFAULTS = {"linger.ms": "1000", "acks": "1", "retries": "3", "request.timeout.ms": "1500"}


class LineReader:
    """Kafka's LineMessageReader: parse.key, key.separator, ignore.error."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = props.get("parse.key", "false").lower() == "true"
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.ignore_error = props.get("ignore.error", "false").lower() == "true"

    def records(self, stream: BinaryIO) -> Iterator[tuple[bytes | None, bytes]]:
        for number, raw in enumerate(stream, 1):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            if line.endswith(b"\r"):
                line = line[:-1]  # readLine's \r\n terminator
            if not self.parse_key:
                yield None, line
                continue
            key, sep, value = line.partition(self.key_separator)
            if sep:
                yield key, value
            elif self.ignore_error:
                yield None, line
            else:
                raise click.ClickException(f"No key found on line {number}: {line.decode(errors='replace')}")


def producer_config(params: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = merge(
        params["producer_config"], params["producer_property"], "--producer-property"
    )
    servers = params["bootstrap_server"] or params["broker_list"]
    if not servers:
        raise click.UsageError('Missing required argument "[bootstrap-server]"')
    props["bootstrap.servers"] = servers
    for option, name in _TOOL_OPTIONS.items():
        if params.get(option) is not None:
            props[name] = params[option]
    for name, value in _TOOL_DEFAULTS.items():
        props.setdefault(name, value)
    if params["sync"]:
        props["producer.type"] = "sync"
    return props


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="The server(s) to connect to (host:port,...).")
@click.option("--broker-list", help="Deprecated spelling of --bootstrap-server.")
@click.option("--topic", required=True, help="The topic to produce messages to.")
@click.option("--sync", is_flag=True, help="Send each message synchronously, one at a time.")
@click.option(
    "--compression-codec",
    is_flag=False,
    flag_value="gzip",
    default=None,
    help="none, gzip, snappy, lz4 or zstd (gzip when given without a value).",
)
@click.option("--batch-size", type=int, help="Messages to send in one batch.")
@click.option("--timeout", type=int, help="linger.ms: how long to wait for a batch to fill (default 1000).")
@click.option("--request-required-acks", help="acks (default 1).")
@click.option("--request-timeout-ms", type=int)
@click.option("--message-send-max-retries", type=int)
@click.option("--retry-backoff-ms", type=int)
@click.option("--max-memory-bytes", type=int)
@click.option("--max-partition-memory-bytes", type=int)
@click.option("--metadata-expiry-ms", type=int)
@click.option("--max-block-ms", type=int)
@click.option(
    "--property", "prop", multiple=True, help="Line reader property k=v (parse.key, key.separator)."
)
@click.option("--producer-property", multiple=True, help="Producer config k=v.")
@click.option("--producer.config", "producer_config", help="Producer config properties file.")
def console_producer(**params: Any) -> None:
    """Read data from standard input and publish it to Kafka."""
    reader = LineReader(parse_kv(params["prop"], "--property"))
    try:
        producer = KafkaProducer(producer_config(params))
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    failures: list[BaseException] = []

    def on_done(metadata: Any, exc: BaseException | None) -> None:
        if exc is not None and not failures:
            failures.append(exc)
            click.echo(f"Error when sending message to topic {params['topic']}: {exc}", err=True)

    try:
        for key, value in reader.records(sys.stdin.buffer):
            producer.send(params["topic"], value, key=key, callback=on_done)
    finally:
        producer.close()
    if failures:
        sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    console_producer.main(args=argv, prog_name="kafkapy-console-producer")


if __name__ == "__main__":
    main()
