"""py-spy on the brokers while a scale step runs (`scale.py --profile STEPS`): where a missed
target's time goes. Sampled from outside (--nonblocking: the broker is never paused), Python
frames only, on-CPU samples only (py-spy's default leaves idle threads out), so the top
functions are what burns the CPU during the step. A broker started during the step (a restart)
is attached to as soon as its process exists.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.profiling import py_spy, top_functions


@dataclass
class StepProfiler:
    out_dir: Path
    prefix: str  # e.g. "scale-3000-failover"
    rate: int = 100
    _spies: dict[str, tuple[subprocess.Popen[bytes], Path]] = field(default_factory=dict)

    def attach(self, pid: int, label: str) -> None:
        """Start sampling `pid`; `label` (e.g. "broker1", "broker1-restart") names its output."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        n = sum(1 for k in self._spies if k.startswith(label))
        key = label if n == 0 else f"{label}-{n}"
        out = self.out_dir / f"{self.prefix}-{key}.speedscope.json"
        spy = subprocess.Popen(
            [py_spy(), "record", "--pid", str(pid), "--rate", str(self.rate), "--format", "speedscope",
             "--output", str(out), "--nonblocking"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self._spies[key] = (spy, out)

    def finish(self, top: int = 12) -> dict[str, Any]:
        """Stop every sampler (SIGINT makes py-spy write its file) and summarize each profile."""
        for spy, _ in self._spies.values():
            if spy.poll() is None:
                spy.send_signal(signal.SIGINT)
        result: dict[str, Any] = {}
        for key, (spy, out) in self._spies.items():
            try:
                _, err = spy.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                spy.kill()
                _, err = spy.communicate(timeout=30)
            if not out.exists():
                result[key] = {"error": err.decode(errors="replace")[-500:]}
                continue
            try:
                summary = top_functions(out, top)
            except (ValueError, KeyError, ZeroDivisionError) as e:
                result[key] = {"error": f"{type(e).__name__}: {e}"}
                continue
            result[key] = {
                "file": str(out),
                "cpu_seconds_sampled": summary["seconds"],
                "self": [(name, round(share, 3)) for name, share in summary["self"]],
                "total": [(name, round(share, 3)) for name, share in summary["total"]],
            }
        self._spies.clear()
        return result
