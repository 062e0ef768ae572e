"""Append and read throughput of kafkapy's Log next to raw file I/O on the same disk.

    python benchmarks/log_append.py [--dir D] [--mb N] [--runs R]

Records are 1 KB, in batches of 16 KB and of 1 MB. The Log path does everything a produce
does after the network (validate headers and CRC-32C, patch offsets in place into a writable
buffer, write, index); the raw path writes the same bytes with os.write. Reads fetch 1 MB at a
time through Log.read and copy the file regions into a reused buffer, against os.preadv of the
same chunks. Both run against the page cache (no fsync inside the timing), the best of R runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from kafkapy.protocol.record_batch import iter_batches, set_base_offset
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig

RECORD = 1024
FETCH = 1 << 20


def make_batch(batch_bytes: int) -> bytearray:
    count = max(1, batch_bytes // (RECORD + 16))
    return build_batch([(None, os.urandom(RECORD), [], 1_700_000_000_000 + i) for i in range(count)])


def log_append(dir_: str, batch: bytearray, n: int) -> float:
    log = Log(os.path.join(dir_, "bench-0"), LogConfig(), had_clean_shutdown=True)
    view = memoryview(batch)  # writable, like the network receive buffer
    start = time.perf_counter()
    for _ in range(n):
        set_base_offset(view, 0, 0, -1)  # a fresh produce request carries base offset 0
        log.append_as_leader(view)
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed


def raw_write(dir_: str, batch: bytearray, n: int) -> float:
    fd = os.open(os.path.join(dir_, "raw.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(n):
        os.write(fd, batch)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def log_read(dir_: str) -> tuple[float, int]:
    log = Log(os.path.join(dir_, "bench-0"), LogConfig(), had_clean_shutdown=True)
    buf = bytearray(2 * FETCH + (1 << 16))
    view = memoryview(buf)
    offset, total = 0, 0
    start = time.perf_counter()
    while offset < log.log_end_offset:
        info = log.read(offset, FETCH)
        size = 0
        for region in info.records:
            size += os.preadv(region.fd, [view[size : size + region.length]], region.position)
        total += size
        # a consumer resumes after the last whole batch it got
        for _, header in iter_batches(view[:size]):
            offset = header.next_offset
    elapsed = time.perf_counter() - start
    log.close()
    return elapsed, total


def raw_read(dir_: str) -> tuple[float, int]:
    fd = os.open(os.path.join(dir_, "raw.bin"), os.O_RDONLY)
    view = memoryview(bytearray(FETCH))
    position, total = 0, 0
    start = time.perf_counter()
    while n := os.preadv(fd, [view], position):
        position += n
        total += n
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed, total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", default=None, help="directory on the disk to test (default: a temp dir)")
    parser.add_argument("--mb", type=int, default=256, help="MB written per measurement")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="kafkapy-bench-", dir=args.dir)
    mb = 1 << 20
    print(f"dir={root}  {args.mb} MB per run, best of {args.runs}, 1 KB records, page cache (no fsync)")
    print(f"{'batch':>7} {'op':>6} {'Log MB/s':>10} {'raw MB/s':>10} {'Log/raw':>8}")
    try:
        for label, batch_bytes in (("16 KB", 16 * 1024), ("1 MB", 1024 * 1024)):
            batch = make_batch(batch_bytes)
            n = max(1, args.mb * mb // len(batch))
            volume = n * len(batch) / mb
            # Interleaved runs, best of each: other processes on the machine add noise to both.
            t_log = t_raw = r_log = r_raw = float("inf")
            for _ in range(args.runs):
                shutil.rmtree(os.path.join(root, "bench-0"), ignore_errors=True)
                t_log = min(t_log, log_append(root, batch, n))
                t_raw = min(t_raw, raw_write(root, batch, n))
                r_log = min(r_log, log_read(root)[0])
                r_raw = min(r_raw, raw_read(root)[0])
            print(
                f"{label:>7} {'append':>6} {volume / t_log:10.0f} {volume / t_raw:10.0f} {t_raw / t_log:8.0%}"
            )
            print(
                f"{label:>7} {'read':>6} {volume / r_log:10.0f} {volume / r_raw:10.0f} {r_raw / r_log:8.0%}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
