"""cProfile every broker thread that does replication work, dumped on SIGUSR2.

    KAFKAPY_CPROFILE_DIR=/tmp/prof PYTHONPATH=<tree>:<tree>/benchmarks/cprofile_site <broker command>
    kill -USR2 <broker pid>    # writes <dir>/<pid>-main.prof and <pid>-ReplicaFetcherThread-*.prof

Python imports `sitecustomize` at start-up when it is on the path; without the variable (or in a
process that is not a broker) this does nothing. py-spy samples threads blocked in recv or
waiting for the GIL alike; cProfile counts calls and the time each function holds the thread,
per thread, which is what "Python per fetch" needs (divide by the ncalls of `do_work` or
`handle_fetch`). The profiler makes Python ~2-3x slower: compare counts and shares, not
absolute times.
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
import threading

_DIR = os.environ.get("KAFKAPY_CPROFILE_DIR")

if _DIR is not None and any("server" in a for a in sys.argv):
    _OUT: str = _DIR
    _main = cProfile.Profile()
    _main.enable()
    _threads: list[tuple[str, cProfile.Profile]] = []
    _bootstrap_inner = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def _profiled_bootstrap(self: threading.Thread) -> None:
        if self.name.startswith("ReplicaFetcherThread"):
            profile = cProfile.Profile()
            _threads.append((self.name, profile))
            profile.enable()
        _bootstrap_inner(self)

    threading.Thread._bootstrap_inner = _profiled_bootstrap  # type: ignore[attr-defined]

    def _dump(_signum: int, _frame: object) -> None:
        # Runs on the main thread: its own profile stops here; a fetcher's is read as it stands.
        _main.disable()
        _main.dump_stats(os.path.join(_OUT, f"{os.getpid()}-main.prof"))
        for name, profile in _threads:
            profile.dump_stats(os.path.join(_OUT, f"{os.getpid()}-{name}.prof"))

    signal.signal(signal.SIGUSR2, _dump)
