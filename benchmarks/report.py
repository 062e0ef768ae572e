"""Medians, spreads and kafkapy/Tansu ratios from the raw samples; JSON, Markdown and a PNG.

Every figure is the median of its samples (one per round, or more where a workload repeats
within a round) with the min-max spread beside it. A ratio is the median of kafkapy / Tansu
over the pairs of back-to-back runs (run.py runs every sample on both brokers within seconds),
so the machine's drift in speed cancels out of each pair; the ratio of the two medians is kept
beside it in the JSON. Whether a higher ratio is better depends on the metric (throughput:
higher; CPU per GB and latency: lower); the targets table says which way each target points.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

BROKERS = ("kafkapy", "tansu")
# (workload key prefix, metrics reported for it)
METRICS: dict[str, tuple[str, ...]] = {
    "produce": ("records_per_s", "mb_per_s", "broker_cpu_s_per_gb"),
    "consume": ("records_per_s", "mb_per_s", "broker_cpu_s_per_gb"),
    "latency": ("p50_ms", "p99_ms", "p999_ms"),
    "small_requests": ("requests_per_s", "broker_cpu_us_per_request", "client_cpu_util"),
}


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarize(samples: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """{workload key: {metric: {kafkapy: stats, tansu: stats, ratio}}}."""
    keys = sorted({k for per_broker in samples.values() for k in per_broker}, key=_order)
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        metrics = METRICS[key.split("/")[0]]
        out[key] = {}
        for metric in metrics:
            entry: dict[str, Any] = {}
            for broker in BROKERS:
                values = [s[metric] for s in samples.get(broker, {}).get(key, []) if metric in s]
                if values:
                    entry[broker] = _stats(values)
            if all(b in entry for b in BROKERS) and entry["tansu"]["median"]:
                entry["ratio_of_medians"] = entry["kafkapy"]["median"] / entry["tansu"]["median"]
                paired = _paired_ratio(samples, key, metric)
                entry["ratio"] = entry["ratio_of_medians"] if paired is None else paired
            out[key][metric] = entry
    return out


def _paired_ratio(samples: dict[str, dict[str, list[dict[str, Any]]]], key: str, metric: str) -> float | None:
    """Median of kafkapy / Tansu over the i-th runs of `key`; None unless the runs pair up."""
    k, t = ([s.get(metric) for s in samples.get(b, {}).get(key, [])] for b in BROKERS)
    if not k or len(k) != len(t) or None in k or None in t or 0 in t:
        return None
    return statistics.median(a / b for a, b in zip(k, t, strict=True))


def _order(key: str) -> tuple[int, str]:
    return (list(METRICS).index(key.split("/")[0]), key)


def _median(summary: dict[str, Any], key: str, metric: str, broker: str) -> float | None:
    return summary.get(key, {}).get(metric, {}).get(broker, {}).get("median")


def _ratio(summary: dict[str, Any], key: str, metric: str) -> float | None:
    return summary.get(key, {}).get(metric, {}).get("ratio")


def targets(summary: dict[str, Any], latency_key: str, small_key: str) -> list[dict[str, Any]]:
    """The issue's targets, each with the measured value and whether it is met."""
    rows: list[dict[str, Any]] = []

    def add(name: str, value: float | None, goal: str, met: bool | None) -> None:
        rows.append({"target": name, "value": value, "goal": goal, "met": met})

    def ratio_at_least(name: str, key: str, metric: str, goal: float) -> None:
        r = _ratio(summary, key, metric)
        add(name, r, f">= {goal}x", None if r is None else r >= goal)

    def ratio_at_most(name: str, key: str, metric: str, goal: float) -> None:
        r = _ratio(summary, key, metric)
        add(name, r, f"<= {goal}x", None if r is None else r <= goal)

    def reported(name: str, key: str, metric: str) -> None:
        add(name, _ratio(summary, key, metric), "reported: librdkafka's queue back-off (consume.py)", None)

    for p in (1, 6):
        ratio_at_least(f"produce 1 KiB acks=1 p={p} (MB/s)", f"produce/1024B/acks=1/p={p}", "mb_per_s", 1.5)
    for p in (1, 6):
        ratio_at_least(f"consume 1 KiB p={p} (MB/s)", f"consume/1024B/p={p}/no-backoff", "mb_per_s", 1.5)
    for p in (1, 6):
        ratio_at_least(
            f"produce 100 B acks=1 p={p} (records/s)", f"produce/100B/acks=1/p={p}", "records_per_s", 1.0
        )
        ratio_at_least(
            f"consume 100 B p={p} (records/s)", f"consume/100B/p={p}/no-backoff", "records_per_s", 1.0
        )
    ratio_at_most(
        "broker CPU/GB, produce 1 KiB acks=1 p=1", "produce/1024B/acks=1/p=1", "broker_cpu_s_per_gb", 0.35
    )
    ratio_at_most(
        "broker CPU/GB, consume 1 KiB p=1", "consume/1024B/p=1/no-backoff", "broker_cpu_s_per_gb", 0.35
    )
    for size, label, metric in ((1024, "1 KiB", "mb_per_s"), (100, "100 B", "records_per_s")):
        for p in (1, 6):
            reported(f"consume {label} p={p}, librdkafka defaults", f"consume/{size}B/p={p}", metric)
    rps = _median(summary, small_key, "requests_per_s", "kafkapy")
    add("small requests, kafkapy (requests/s)", rps, ">= 50,000", None if rps is None else rps >= 50_000)
    ratio_at_least("small requests vs Tansu", small_key, "requests_per_s", 5.0)
    p99, tansu_p99 = (_median(summary, latency_key, "p99_ms", b) for b in BROKERS)
    add("p99 latency, kafkapy (ms)", p99, "< 10 ms", None if p99 is None else p99 < 10)
    r = _ratio(summary, latency_key, "p99_ms")
    add("p99 latency vs Tansu", r, "<= 1.0x", None if r is None or tansu_p99 is None else p99 <= tansu_p99)
    return rows


# -- rendering ------------------------------------------------------------------------------------

_UNITS = {
    "records_per_s": "records/s",
    "mb_per_s": "MB/s",
    "broker_cpu_s_per_gb": "broker CPU s/GB",
    "p50_ms": "p50 ms",
    "p99_ms": "p99 ms",
    "p999_ms": "p99.9 ms",
    "requests_per_s": "requests/s",
    "broker_cpu_us_per_request": "broker CPU us/request",
    "client_cpu_util": "client CPU (cores)",
}


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _cell(stats: dict[str, float] | None) -> str:
    if not stats:
        return "-"
    return f"{_fmt(stats['median'])} ({_fmt(stats['min'])}-{_fmt(stats['max'])})"


def markdown(results: dict[str, Any]) -> str:
    summary, ceilings = results["summary"], results["ceilings"]
    loop = ceilings["loopback_tcp"]["mb_per_s"]
    disk = ceilings["disk_write"]["mb_per_s_fsync"]
    cache = ceilings["disk_write"]["mb_per_s_page_cache"]
    lines = [
        f"Ceilings in this run: loopback TCP {_fmt(loop)} MB/s; sequential write to the log dir's disk "
        f"{_fmt(disk)} MB/s with fsync ({_fmt(cache)} MB/s into the page cache).",
        "",
        "Medians over runs (min-max); ratio = median over back-to-back pairs of kafkapy / Tansu; "
        "MB = 10^6 bytes of record values.",
        "",
        "| workload | metric | kafkapy | Tansu | ratio | kafkapy / loopback | kafkapy / disk (fsync) |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, metrics in summary.items():
        for metric, entry in metrics.items():
            k = entry.get("kafkapy")
            frac_loop = frac_disk = "-"
            if metric == "mb_per_s" and k:
                frac_loop = f"{k['median'] / loop:.0%}"
                frac_disk = f"{k['median'] / disk:.0%}"
            lines.append(
                f"| {key} | {_UNITS[metric]} | {_cell(k)} | {_cell(entry.get('tansu'))} | "
                f"{_fmt(entry.get('ratio'))} | {frac_loop} | {frac_disk} |"
            )
    loads = results.get("loadavg_after_round", [])
    probes = {
        b: [r["python_speed_ms"] for r in results["samples"].get(b, {}).get("small_requests/100B", [])
            if "python_speed_ms" in r]
        for b in BROKERS
    }  # fmt: skip
    if any(probes.values()):
        lines += [
            "",
            "Speed probe around each small-requests run (ms for a fixed pure-Python loop in the client;"
            " lower is a faster machine; it drifts up to 2x on these shared machines): "
            + "; ".join(f"{b} {', '.join(f'{v:.0f}' for v in probes[b])}" for b in BROKERS),
        ]
    lines += [
        "",
        "1-minute load average after each round (2 cores: above ~2 the machine was shared): "
        + ", ".join(f"{v:.1f}" for v in loads),
        "",
        "Peak RSS (VmHWM) per round, MB (Tansu's memory storage holds the round's data in RSS): "
        + "; ".join(
            f"{b} {', '.join(_fmt(v / 1e6) for v in results['peak_rss'].get(b, []))}" for b in BROKERS
        ),
        "",
    ]
    lines += ["| target | measured | goal | met |", "|---|---|---|---|"]
    for row in results["targets"]:
        met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
        lines.append(f"| {row['target']} | {_fmt(row['value'])} | {row['goal']} | {met} |")
    clients = results.get("clients") or []
    if clients:
        lines += [
            "",
            "Python clients against the kafkapy broker (1 KB records, 1 partition, acks=1), "
            "median MB/s over rounds:",
            "",
            "| client | produce MB/s | consume MB/s | note |",
            "|---|---|---|---|",
        ]
        for name in clients[0]:
            runs = [c[name] for c in clients]
            cells = []
            for phase in ("produce", "consume"):
                vals = [r[phase]["mb_per_s"] for r in runs if "mb_per_s" in r.get(phase, {})]
                cells.append(_fmt(statistics.median(vals)) if vals else "-")
            note = runs[0].get("error") or runs[0].get("produce", {}).get("note", "")
            lines.append(f"| {name} | {cells[0]} | {cells[1]} | {note} |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = results["summary"]
    groups = [
        ("produce acks=1\n1 partition", "produce/{}B/acks=1/p=1"),
        ("produce acks=1\n6 partitions", "produce/{}B/acks=1/p=6"),
        ("consume, no back-off\n1 partition", "consume/{}B/p=1/no-backoff"),
        ("consume, no back-off\n6 partitions", "consume/{}B/p=6/no-backoff"),
    ]
    colors = {"kafkapy": "#1f77b4", "tansu": "#ff7f0e"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, size in zip(axes, (100, 1024), strict=True):
        width = 0.38
        for i, broker in enumerate(BROKERS):
            xs, meds, lo, hi = [], [], [], []
            for g, (_, pattern) in enumerate(groups):
                stats = summary.get(pattern.format(size), {}).get("mb_per_s", {}).get(broker)
                if not stats:
                    continue
                xs.append(g + (i - 0.5) * width)
                meds.append(stats["median"])
                lo.append(stats["median"] - stats["min"])
                hi.append(stats["max"] - stats["median"])
            ax.bar(xs, meds, width, yerr=[lo, hi], capsize=3, label=broker, color=colors[broker])
        ax.set_xticks(range(len(groups)), [g[0] for g in groups], fontsize=8)
        ax.set_title(f"{size} B records")
        ax.set_ylabel("MB/s (record values), median, min-max bars")
        ax.axhline(results["ceilings"]["disk_write"]["mb_per_s_fsync"], color="grey", ls=":", lw=1)
        ax.legend()
    fig.suptitle(
        "Throughput by record size, confluent-kafka client, same machine (dotted: disk write with fsync)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(results: dict[str, Any], out_dir: Path, stem: str) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out_dir / f"{stem}.json",
        "md": out_dir / f"{stem}.md",
        "png": out_dir / f"{stem}-throughput.png",
    }
    paths["json"].write_text(json.dumps(results, indent=1, default=str) + "\n")
    paths["md"].write_text(markdown(results))
    plot(results, paths["png"])
    return paths
