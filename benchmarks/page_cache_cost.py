"""What writing into fresh page cache costs on this machine, with no broker involved.

    python benchmarks/page_cache_cost.py [--gb 4] [--write-kib 1024] [--dir /tmp] [--idle-s 15]

Writes `--gb` GB into a new file with pwrites of `--write-kib` (1 MiB: about what one append
of a produce request or a follower's fetched chunk writes) and prints the writer's system CPU
seconds per GB for every 512 MiB, twice: after `--idle-s` seconds of quiet, and again at once
after deleting the first file. This VM's guest reports free memory to the hypervisor
(virtio-balloon free page reporting, /sys/module/page_reporting: blocks of order 9 and up,
min_free_ms=0), which takes those pages back; the first store into such a page waits for the
host to fault it in, and the guest sees a slow copy in copy_folio_from_iter_atomic, charged as
the writer's system time. ext4 allocates large folios for large writes, from exactly those
blocks once the small unreported fragments run out: the first pass is cheap for ~1 GB (with
1 MiB writes; later with smaller ones) and then ~10-15x dearer per GB; the second pass reuses
the pages the deleted file freed a moment before and stays cheap. A broker pays this per
replica byte appended, so RF 3 pays three times what RF 1 pays per produced byte.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

_CHUNK_MIB = 512
_REPORTED = Path("/sys/module/page_reporting/parameters/reported_kib")


def write_pass(path: str, gb: float, write_kib: int = 1024) -> list[float]:
    """System seconds per GB of each 512 MiB written with pwrites of `write_kib` KiB."""
    buf = os.urandom(write_kib << 10)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    per_gb: list[float] = []
    position = 0
    try:
        for _ in range(int(gb * 1024 / _CHUNK_MIB)):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
            for _ in range((_CHUNK_MIB << 10) // write_kib):
                os.pwrite(fd, buf, position)
                position += len(buf)
            per_gb.append((resource.getrusage(resource.RUSAGE_SELF).ru_stime - before) * 1024 / _CHUNK_MIB)
    finally:
        os.close(fd)
    return per_gb


def recycle_page_cache(directory: Path, gb: float) -> None:
    """Write `gb` GB to a scratch file in `directory` and delete it: appends made next then reuse
    pages the hypervisor has not taken back yet, so a timed round measures the brokers rather
    than the host's page faults. Untimed, outside any CPU count."""
    if gb <= 0:
        return
    scratch = directory / "page-cache-scratch"
    try:
        write_pass(str(scratch), gb)
    finally:
        scratch.unlink(missing_ok=True)


def _reported_kib() -> str:
    return _REPORTED.read_text().strip() if _REPORTED.exists() else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=4.0)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--idle-s", type=float, default=15.0, help="quiet before the first pass")
    parser.add_argument("--write-kib", type=int, default=1024, help="bytes per pwrite, in KiB")
    args = parser.parse_args()
    path = os.path.join(args.dir, f"page-cache-cost-{os.getpid()}")
    time.sleep(args.idle_s)
    try:
        for label in ("after idle", "right after freeing"):
            reported = _reported_kib()
            per_gb = write_pass(path, args.gb, args.write_kib)
            os.unlink(path)
            print(
                f"{label:>20}: sys s/GB per {_CHUNK_MIB} MiB "
                + " ".join(f"{s:.2f}" for s in per_gb)
                + f"  (page_reporting reported_kib {reported} -> {_reported_kib()})",
                flush=True,
            )
    finally:
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()
