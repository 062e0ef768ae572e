"""What the benchmarks timing one operation over N fresh logs share: their arguments and the
min / median / max line per measured step (follower_epoch_append.py, follower_truncation.py)."""

from __future__ import annotations

import argparse
import statistics
from typing import Literal


def parse_args(doc: str, logs: int = 2000) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--logs", type=int, default=logs)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", default=None, help="where the log dir goes (default: $TMPDIR)")
    return p.parse_args()


def report(name: str, seconds: list[float], logs: int, unit: Literal["ms", "us"] = "ms") -> None:
    """One line: each run's time per log, in `unit` (ms or us)."""
    scale = 1e3 if unit == "ms" else 1e6
    per_log = [s * scale / logs for s in seconds]
    digits = 3 if unit == "ms" else 1
    print(
        f"{name}: {min(per_log):.{digits}f} / {statistics.median(per_log):.{digits}f} / "
        f"{max(per_log):.{digits}f} {unit} per log (min / median / max of {len(seconds)}, {logs} logs)"
    )
