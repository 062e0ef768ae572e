"""What moving log bytes over loopback TCP costs on this machine, with no broker involved.

    python benchmarks/loopback_copy.py [--gb 2] [--send-buffer 102400] [--receive-buffer 65536]
        [--modes pread,sendfile] [--runs 2]

The floor under a leader answering its followers: a sender reads a file that is in the page
cache and sends it to a receiver on 127.0.0.1, which reads it into one reused buffer, as a
replica fetcher does. `pread` copies each 256 KiB chunk into a reused buffer and sends it (what
the broker's response path does); `sendfile` hands the file's pages to the socket. The socket
buffers default to Kafka's `socket.send.buffer.bytes` and `replica.socket.receive.buffer.bytes`
(0 leaves one to the kernel). Prints each side's user and system CPU seconds per GB: the sender's
is what a leader pays per follower per GB at the least, the receiver's what a follower pays
before it checks CRCs and appends. The loop is C calls in a tight Python loop, so the figures
are what the kernel's copies and wake-ups cost, not the broker's Python.
"""

from __future__ import annotations

import argparse
import os
import resource
import selectors
import socket
import tempfile

_FILE_BYTES = 64 << 20
_CHUNK = 256 << 10
_GB = 1 << 30


def _cpu(who: int) -> tuple[float, float]:
    usage = resource.getrusage(who)
    return usage.ru_utime, usage.ru_stime


def _receive(port: int, total: int, receive_buffer: int) -> None:
    sock = socket.socket()
    if receive_buffer > 0:  # before connect, as the fetchers set it: it sets the window scale
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    buf = bytearray(1 << 20)
    got = 0
    while got < total:
        n = sock.recv_into(buf)
        if not n:
            break
        got += n


def _send(conn: socket.socket, fd: int, mode: str, total: int) -> None:
    conn.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_WRITE)
    view = memoryview(bytearray(_CHUNK))
    pending: memoryview | None = None
    sent = 0
    while sent < total:
        position = sent % _FILE_BYTES
        want = min(_CHUNK, _FILE_BYTES - position, total - sent)
        try:
            if mode == "sendfile":
                n = os.sendfile(conn.fileno(), fd, position, want)
            else:
                if pending is None:
                    os.preadv(fd, [view[:want]], position)
                    pending = view[:want]
                n = conn.send(pending)
                pending = pending[n:] if n < len(pending) else None
            sent += n
        except BlockingIOError:
            selector.select(5.0)
    selector.close()


def run(path: str, mode: str, gb: float, send_buffer: int, receive_buffer: int) -> dict[str, float]:
    """One transfer of `gb` GiB; CPU seconds per GiB of sender and receiver."""
    total = int(gb * _GB)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        child = os.fork()
        if child == 0:
            try:
                _receive(port, total, receive_buffer)
            finally:
                os._exit(0)
        listener.settimeout(30)
        conn, _ = listener.accept()
    with conn:
        if send_buffer > 0:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        fd = os.open(path, os.O_RDONLY)
        try:
            before = _cpu(resource.RUSAGE_SELF)
            _send(conn, fd, mode, total)
            after = _cpu(resource.RUSAGE_SELF)
        finally:
            os.close(fd)
    children_before = _cpu(resource.RUSAGE_CHILDREN)
    os.waitpid(child, 0)
    children_after = _cpu(resource.RUSAGE_CHILDREN)
    return {
        "sender_user": (after[0] - before[0]) / gb,
        "sender_sys": (after[1] - before[1]) / gb,
        "receiver_user": (children_after[0] - children_before[0]) / gb,
        "receiver_sys": (children_after[1] - children_before[1]) / gb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--send-buffer", type=int, default=102400)
    parser.add_argument("--receive-buffer", type=int, default=65536)
    parser.add_argument("--modes", default="pread,sendfile")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "segment")
        with open(path, "wb") as f:
            f.write(os.urandom(_FILE_BYTES))
        with open(path, "rb") as f:
            f.read()  # in the page cache, as a segment a moment after its append
        for r in range(args.runs):
            for mode in args.modes.split(","):
                cost = run(path, mode, args.gb, args.send_buffer, args.receive_buffer)
                print(
                    f"run {r + 1} {mode:>8}: sender user {cost['sender_user']:.2f} sys {cost['sender_sys']:.2f}, "
                    f"receiver user {cost['receiver_user']:.2f} sys {cost['receiver_sys']:.2f} CPU s/GiB "
                    f"(send buffer {args.send_buffer or 'kernel'}, receive buffer {args.receive_buffer or 'kernel'})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
