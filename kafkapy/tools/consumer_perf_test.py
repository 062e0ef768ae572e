"""kafkapy-consumer-perf-test: Kafka's kafka-consumer-perf-test.sh (ConsumerPerformance).

    kafkapy-consumer-perf-test --bootstrap-server 127.0.0.1:9092 --topic t --messages 100000

Reads --messages records from all partitions of the topic (from the beginning unless
--from-latest) and prints Kafka's header and summary line (MB = 1024*1024 bytes of keys and
values), or with --show-detailed-stats one line per --reporting-interval. With --group (or
group.id in --consumer.config) it subscribes as a member of that group, as Kafka's tool does:
rebalance.time.ms is the time until the group assigned it partitions, it starts from the
group's committed offsets and commits what it consumed. Without one, it assigns itself every
partition and rebalance.time.ms is the time to find the start positions.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click

from kafkapy.client.consumer import ConsumerRecord, SimpleConsumer
from kafkapy.client.consumer_coordinator import group_kwargs
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.properties_args import load_config

HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
NEW_CONSUMER_COLUMNS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
MB = 1024 * 1024


def java_date_format(pattern: str) -> str:
    """The SimpleDateFormat letters the tool's --date-format default uses, as strftime."""
    for java, py in (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S")):
        pattern = pattern.replace(java, py)
    return pattern


def format_time(epoch: float, pattern: str) -> str:
    text = datetime.fromtimestamp(epoch).strftime(java_date_format(pattern))
    return text.replace("SSS", f"{int(epoch * 1000) % 1000:03d}")


def _rate(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="The server(s) to connect to.")
@click.option("--broker-list", help="Deprecated spelling of --bootstrap-server.")
@click.option("--topic", required=True)
@click.option("--messages", required=True, type=int, help="The number of messages to consume.")
@click.option("--group", default=None, help="The group whose offsets to commit at the end (default: none).")
@click.option("--fetch-size", default=1024 * 1024, type=int, show_default=True)
@click.option("--from-latest", is_flag=True)
@click.option(
    "--timeout", default=10_000, type=int, show_default=True, help="ms without records before giving up."
)
@click.option("--show-detailed-stats", is_flag=True)
@click.option("--reporting-interval", default=5000, type=int, show_default=True)
@click.option("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", show_default=True)
@click.option("--hide-header", is_flag=True)
@click.option("--consumer.config", "consumer_config")
@click.option("--print-metrics", is_flag=True)
@click.option("--threads", type=int, help="Accepted for compatibility.")
@click.option("--num-fetch-threads", type=int, help="Accepted for compatibility.")
def consumer_perf_test(**params: Any) -> None:
    """A tool to measure the consumer's performance."""
    servers = params["bootstrap_server"] or params["broker_list"]
    if not servers:
        raise click.UsageError('Missing required argument "[bootstrap-server]"')
    props = load_config(params["consumer_config"])
    fmt = params["date_format"]
    if not params["hide_header"]:
        click.echo((DETAILED_HEADER if params["show_detailed_stats"] else HEADER) + NEW_CONSUMER_COLUMNS)
    group = params["group"] or props.get("group.id")
    consumer = SimpleConsumer(
        servers,
        client_id=props.get("client.id", "perf-consumer-client"),
        group_id=group,
        auto_offset_reset="latest" if params["from_latest"] else "earliest",
        max_partition_fetch_bytes=params["fetch_size"],
        **group_kwargs(props),
    )
    wanted, timeout = params["messages"], params["timeout"] / 1000
    interval = params["reporting_interval"] / 1000
    messages = nbytes = 0
    start = time.time()
    try:
        early: list[ConsumerRecord] = []  # what polls made while joining returned, if anything
        if group:
            rebalance_ms = _join(consumer, params["topic"], start, timeout, early, wanted)
        else:
            tps = [TopicPartition(params["topic"], p) for p in consumer.partitions_for(params["topic"])]
            consumer.assign(tps)
            for tp in tps:
                consumer.position(tp)
            rebalance_ms = int((time.time() - start) * 1000)
        last_consumed = fetch_start = window_start = time.time()
        window_messages = window_bytes = 0
        while messages < wanted and time.time() - last_consumed <= timeout:
            batch, early = early or consumer.poll(100, wanted - messages), []
            for r in batch:
                size = (len(r.key) if r.key else 0) + (len(r.value) if r.value else 0)
                messages += 1
                nbytes += size
                last_consumed = time.time()
            now = time.time()
            if params["show_detailed_stats"] and now - window_start >= interval:
                _print_window(fmt, now, window_start, nbytes - window_bytes, messages - window_messages,
                              nbytes, messages, rebalance_ms, fetch_start)  # fmt: skip
                window_start, window_bytes, window_messages = now, nbytes, messages
        if messages < wanted:
            print(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                  f"({params['timeout']} ms) exceeded. You can use the --timeout option to increase the timeout.",
                  file=sys.stderr)  # fmt: skip
    finally:
        consumer.close()  # a group member commits what it consumed here (enable.auto.commit)
    end = time.time()
    elapsed = end - start
    fetch_s = end - start - rebalance_ms / 1000
    if not params["show_detailed_stats"]:
        mb = nbytes / MB
        click.echo(
            f"{format_time(start, fmt)}, {format_time(end, fmt)}, {mb:.4f}, {_rate(mb, elapsed):.4f}, "
            f"{messages}, {_rate(messages, elapsed):.4f}, {rebalance_ms}, {int(fetch_s * 1000)}, "
            f"{_rate(mb, fetch_s):.4f}, {_rate(messages, fetch_s):.4f}"
        )


class _Joined:
    """A rebalance listener noting when the group first gave us partitions."""

    def __init__(self) -> None:
        self.at: float | None = None

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        if self.at is None and partitions:
            self.at = time.time()


def _join(consumer: SimpleConsumer, topic: str, start: float, timeout: float, early: list[ConsumerRecord],
          wanted: int) -> int:  # fmt: skip
    """Subscribe and poll until the group assigns us partitions (keeping in `early` the
    records those polls return, at most `wanted`). Returns rebalance.time.ms."""
    joined = _Joined()
    consumer.subscribe([topic], listener=joined)
    deadline = time.monotonic() + timeout
    while joined.at is None and time.monotonic() < deadline and len(early) < wanted:
        early.extend(consumer.poll(100, wanted - len(early)))
    return int(((joined.at or time.time()) - start) * 1000)


def _print_window(fmt: str, now: float, window_start: float, window_bytes: int, window_messages: int,
                  total_bytes: int, total_messages: int, rebalance_ms: int, fetch_start: float) -> None:  # fmt: skip
    """One --show-detailed-stats line: the window's totals (MB and messages are cumulative,
    as Kafka prints them) and rates."""
    elapsed = now - window_start
    mb = total_bytes / MB
    click.echo(
        f"{format_time(now, fmt)}, 0, {mb:.4f}, {_rate(window_bytes / MB, elapsed):.4f}, {total_messages}, "
        f"{_rate(window_messages, elapsed):.4f}, {rebalance_ms if fetch_start == window_start else 0}, "
        f"{int(elapsed * 1000)}, {_rate(window_bytes / MB, elapsed):.4f}, {_rate(window_messages, elapsed):.4f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    consumer_perf_test.main(args=argv, prog_name="kafkapy-consumer-perf-test")


if __name__ == "__main__":
    main()
