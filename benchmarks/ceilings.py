"""The machine's ceilings, measured in the same run: loopback TCP and the log dir's disk.

Loopback: one connection on 127.0.0.1, a thread sending 1 MB chunks with `sendall`, the
main thread `recv_into` a reused buffer (the GIL is released during both system calls).
Disk: sequential 1 MB writes of random bytes into a file beside the log dir, timed with and
without the final fsync (the page cache is what a broker with Kafka's default flush settings
writes into; the fsync'd figure is the device).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from benchmarks.common import MB

CHUNK = 1 << 20


def loopback_tcp(total_bytes: int) -> dict[str, float]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    payload = memoryview(os.urandom(CHUNK))

    def send() -> None:
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(total_bytes // CHUNK):
                s.sendall(payload)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    conn, _ = server.accept()
    buf = memoryview(bytearray(CHUNK))
    got = 0
    start = time.perf_counter()
    with conn:
        while True:
            n = conn.recv_into(buf)
            if n == 0:
                break
            got += n
    elapsed = time.perf_counter() - start
    sender.join()
    server.close()
    return {"bytes": got, "mb_per_s": got / MB / elapsed}


def disk_write(directory: Path, total_bytes: int) -> dict[str, float]:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bench-disk-ceiling.bin"
    chunk = os.urandom(CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(total_bytes // CHUNK):
            os.write(fd, chunk)
        buffered = time.perf_counter() - start
        os.fsync(fd)
        synced = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    written = total_bytes // CHUNK * CHUNK
    return {
        "bytes": written,
        "mb_per_s_fsync": written / MB / synced,
        "mb_per_s_page_cache": written / MB / buffered,
        "directory": str(directory),
    }


def measure(log_dir: Path, quick: bool) -> dict[str, dict[str, float]]:
    return {
        "loopback_tcp": loopback_tcp((512 if quick else 2048) * CHUNK),
        "disk_write": disk_write(log_dir, (256 if quick else 1024) * CHUNK),
    }
