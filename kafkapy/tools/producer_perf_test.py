"""kafkapy-producer-perf-test: Kafka's kafka-producer-perf-test.sh (ProducerPerformance).

    kafkapy-producer-perf-test --topic t --num-records 100000 --record-size 100 \
        --throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092 acks=1

Sends --num-records records (random uppercase payloads of --record-size bytes, or lines of
--payload-file chosen at random) at up to --throughput records/s (-1: no limit), printing
Kafka's line every 5 s and the final line with latency percentiles. Latency is measured per
record from `send` to its acknowledgement callback.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from kafkapy.producer import KafkaProducer
from kafkapy.tools.properties_args import merge

REPORTING_INTERVAL_S = 5.0
MAX_LATENCY_SAMPLES = 500_000


class Stats:
    """ProducerPerformance.Stats: windowed and total counts, bytes and latencies (ms)."""

    def __init__(self, num_records: int, out: Any = sys.stdout) -> None:
        self.out = out
        self.start = self.window_start = time.monotonic()
        self.sampling = max(1, num_records // min(num_records, MAX_LATENCY_SAMPLES) if num_records else 1)
        self.latencies: list[int] = []
        self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0
        self.iteration = 0

    def record(self, latency_ms: int, size: int, now: float) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency_ms
        self.window_max_latency = max(self.window_max_latency, latency_ms)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency_ms)
        self.iteration += 1
        if now - self.window_start >= REPORTING_INTERVAL_S:
            self.print_window(now)
            self.window_start = now
            self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0

    def print_window(self, now: float) -> None:
        elapsed = max(now - self.window_start, 1e-9)
        rate = self.window_count / elapsed
        mb = self.window_bytes / elapsed / (1024 * 1024)
        avg = self.window_total_latency / max(self.window_count, 1)
        print(f"{self.window_count} records sent, {rate:.1f} records/sec ({mb:.2f} MB/sec), "
              f"{avg:.1f} ms avg latency, {float(self.window_max_latency):.1f} ms max latency.",
              file=self.out, flush=True)  # fmt: skip

    def print_total(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.count / elapsed
        mb = self.bytes / elapsed / (1024 * 1024)
        avg = self.total_latency / max(self.count, 1)
        p50, p95, p99, p999 = percentiles(self.latencies, (0.5, 0.95, 0.99, 0.999))
        print(f"{self.count} records sent, {rate:f} records/sec ({mb:.2f} MB/sec), {avg:.2f} ms avg latency, "
              f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, {p99} ms 99th, "
              f"{p999} ms 99.9th.", file=self.out, flush=True)  # fmt: skip


def percentiles(latencies: list[int], points: Sequence[float]) -> list[int]:
    """Kafka's: the sorted sample at index int(p * size)."""
    if not latencies:
        return [0 for _ in points]
    ordered = sorted(latencies)
    return [ordered[min(int(p * len(ordered)), len(ordered) - 1)] for p in points]


class Throttler:
    """ThroughputThrottler: sleep just enough to hold `target` records/s (<= 0: no limit)."""

    def __init__(self, target: float, start: float) -> None:
        self.target = target
        self.start = start

    def throttle(self, sent: int, now: float) -> None:
        if self.target <= 0:
            return
        ahead = sent / self.target - (now - self.start)
        if ahead > 0.001:
            time.sleep(ahead)


def payloads(params: dict[str, Any]) -> tuple[list[bytes] | None, bytes | None]:
    if params["payload_file"]:
        delimiter = params["payload_delimiter"].encode().decode("unicode_escape").encode()
        with open(params["payload_file"], "rb") as f:
            items = [p for p in f.read().split(delimiter) if p]
        if not items:
            raise click.UsageError("File does not contain any payload")
        print(f"Number of messages read: {len(items)}", flush=True)
        return items, None
    size = params["record_size"]
    return None, bytes(random.randrange(65, 91) for _ in range(size))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--topic", required=True, help="Produce messages to this topic.")
@click.option("--num-records", required=True, type=int, help="Number of messages to produce.")
@click.option("--record-size", type=int, help="Message size in bytes.")
@click.option("--payload-file", help="File of payloads to send, chosen at random.")
@click.option("--payload-delimiter", default="\\n", show_default=True)
@click.option("--throughput", required=True, type=float, help="Maximum records/s; -1 for no limit.")
@click.option("--producer-props", multiple=True, help="Producer config k=v (repeat, or list after one flag).")
@click.option("--producer.config", "producer_config", help="Producer config properties file.")
@click.option("--print-metrics", is_flag=True, help="Accepted for compatibility.")
def producer_perf_test(**params: Any) -> None:
    """A tool to verify the producer performance."""
    if (params["record_size"] is None) == (params["payload_file"] is None):
        raise click.UsageError("Either --record-size or --payload-file must be specified but not both.")
    props = merge(params["producer_config"], params["producer_props"], "--producer-props")
    if not props and not params["producer_config"]:
        raise click.UsageError("Either --producer-props or --producer.config must be specified.")
    items, payload = payloads(params)
    producer = KafkaProducer(props)
    num, topic = params["num_records"], params["topic"]
    stats = Stats(num)
    throttler = Throttler(params["throughput"], time.monotonic())
    monotonic, send = time.monotonic, producer.send
    try:
        for i in range(num):
            value = payload if items is None else random.choice(items)
            started = monotonic()
            send(topic, value, callback=_callback(stats, started, len(value or b"")))
            throttler.throttle(i + 1, monotonic())
        producer.flush()
    finally:
        producer.close()
    stats.print_total()


def _callback(stats: Stats, started: float, size: int) -> Any:
    def done(metadata: Any, exc: BaseException | None) -> None:
        now = time.monotonic()
        if exc is not None:
            print(f"Error: {exc}", file=sys.stderr)
            return
        stats.record(int((now - started) * 1000), size, now)

    return done


def _expand_props(argv: list[str]) -> list[str]:
    """Kafka's --producer-props takes several k=v words after one flag; click takes one per flag."""
    out: list[str] = []
    in_props = False
    for word in argv:
        if word == "--producer-props":
            in_props = True
            continue
        if word.startswith("--"):
            in_props = False
        out.extend(["--producer-props", word] if in_props else [word])
    return out


def main(argv: Sequence[str] | None = None) -> None:
    args = _expand_props(list(sys.argv[1:] if argv is None else argv))
    producer_perf_test.main(args=args, prog_name="kafkapy-producer-perf-test")


if __name__ == "__main__":
    main()
